// Indexes: qs::index's entries as stored locations.
#include "core/indexes.hpp"

#include <qs/error.hpp>

namespace qs::detail {

void indexes::insert(std::uint32_t ix, const std::string& name, std::string_view key, std::string_view ref_bytes) {
  if (!store_.index_insert(ix, key, refs_.location_of_ref(ref_bytes)))
    throw duplicate_key("the unique index " + name + " already has that key");
}

bool indexes::erase(std::uint32_t ix, std::string_view key, std::string_view ref_bytes) {
  // A location begins with its page and offset (and, in hardware mode, its
  // run length); what follows is a hint that relocation may have made stale.
  return store_.index_erase(ix, key, refs_.location_of_ref(ref_bytes).substr(0, 16));
}

std::vector<index_entry> indexes::scan(std::uint32_t ix, std::string_view lo, std::string_view hi, std::size_t limit) {
  std::vector<index_entry> out;
  store_.index_scan(ix, lo, hi, [&](std::string_view k, std::string_view v) {
    out.push_back({std::string(k), std::string(v)});
    return limit == 0 || out.size() < limit;
  });
  for (index_entry& e : out) e.value = refs_.ref_of_location(e.value);
  return out;
}

}  // namespace qs::detail
