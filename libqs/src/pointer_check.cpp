// The pointer check of commit.
#include "pointer_check.hpp"

#include "open_databases.hpp"

#include <qs/error.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace qs::detail {

bool pointer_check::check(const page_desc* d, const std::byte* img, bool throw_on_violation) {
  bool ok = true;
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t which) {
    if (is_vptr || !ok) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    if (v == 0 || access_.storable_pointer(v)) return;
    ok = false;
    if (!throw_on_violation) return;
    const auto* target = reinterpret_cast<const void*>(v);
    char buf[160];
    std::snprintf(buf, sizeof buf, " at %p (page %" PRIu64 ") points to %p",
                  static_cast<void*>(access_.address(d) + off), d->page, target);
    std::string what = "database " + db_name_ + ": commit refused: " + member_name(l, l.pointers[which]) + buf;
    if (access_.contains(target))
      throw transient_pointer(what + ", " + access_.raw_address_note() + "; the transaction is aborted");
    std::string other = name_of_database_at(target);
    if (!other.empty())
      throw cross_database_pointer(what + ", into database " + other +
                                   " (pointers between databases are not supported); the transaction is aborted");
    throw transient_pointer(what + ", outside the persistent region; the transaction is aborted");
  });
  return ok;
}

}  // namespace qs::detail
