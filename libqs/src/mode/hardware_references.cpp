// Hardware mode's references: locations that name a run's frames
// (hardware_references.hpp).
#include "mode/references.hpp"

#include "core/location.hpp"
#include "core/pager.hpp"
#include "core/relocator.hpp"

#include <qs/error.hpp>

#include <cstdio>
#include <cstring>

namespace qs::detail {

std::string hardware_references::location_of(const void* p) {
  page_desc* t = frames_.page_of(p);
  if (!t) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    throw invalid_argument(std::string(buf) + " is not in this database's persistent memory");
  }
  // A page reached through its home frame and not read yet may be part of
  // a large object: its record says (pager::accept_record).
  if (t->run_pages() == 1 && pager::needs_current(t)) pages_.make_current(t);
  page_desc* h = table_.run_head(t);
  auto run = reinterpret_cast<std::uint64_t>(frames_.run_address(h));
  return encode_location(
      {h->page, static_cast<std::uint32_t>(reinterpret_cast<std::uint64_t>(p) - run), h->run_pages(), run});
}

void* hardware_references::resolve(std::string_view s) {
  location l = decode_location(s);
  page_desc* h = frames_.ensure_run(l.page, l.run_pages);
  return frames_.run_address(h) + l.offset;
}

std::string hardware_references::location_of_ref(std::string_view ref_bytes) {
  const void* p = nullptr;
  if (ref_bytes.size() == sizeof p) std::memcpy(&p, ref_bytes.data(), sizeof p);
  return location_of(p);
}

std::string hardware_references::ref_of_location(std::string_view s) {
  void* p = resolve(s);
  return std::string(reinterpret_cast<const char*>(&p), sizeof p);
}

}  // namespace qs::detail
