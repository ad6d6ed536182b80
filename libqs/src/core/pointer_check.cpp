// The pointer check of commit.
#include "core/pointer_check.hpp"

#include "core/open_databases.hpp"
#include "core/page_heap.hpp"

#include <qs/error.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace qs::detail {

bool pointer_check::check(const page_desc* d, const std::byte* img, bool throw_on_violation) {
  bool ok = true;
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t which) {
    if (is_vptr || !ok) return;
    ok = storable(d, img, off, l, which, throw_on_violation);
  });
  return ok;
}

bool pointer_check::check_changed(const page_desc* d, const std::byte* img, const std::vector<byte_range>& changed,
                                  bool throw_on_violation, bool& ok) {
  bool any = false;
  ok = true;
  words_.for_each_in(d, img, changed, [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t which) {
    if (is_vptr) return;
    any = true;
    if (ok) ok = storable(d, img, off, l, which, throw_on_violation);
  });
  return any;
}

bool pointer_check::refuse(const page_desc* d, const std::byte* img, std::uint32_t off, const type_layout& l,
                           std::uint32_t which, std::uint64_t v, bool throw_on_violation) {
  if (!throw_on_violation) return false;
  const auto* target = reinterpret_cast<const void*>(v);
  char at[96], to[64];
  std::snprintf(at, sizeof at, " at %p (page %" PRIu64 ")", static_cast<void*>(access_.address(d) + off), d->page);
  std::snprintf(to, sizeof to, ", points to %p", target);
  std::string what = "commit refused: " + member_name(l, l.pointers[which]) + at + whereabouts(d, img, off, l) + to;
  if (access_.contains(target))
    throw transient_pointer(what + ", " + page_access::raw_address_note + "; the transaction is aborted");
  std::string other = name_of_database_at(target);
  if (!other.empty())
    throw cross_database_pointer(what + ", into database " + other +
                                 " (pointers between databases are not supported); the transaction is aborted");
  throw transient_pointer(what + ", outside the persistent region; the transaction is aborted");
}

std::string pointer_check::whereabouts(const page_desc* d, const std::byte* img, std::uint32_t off,
                                       const type_layout& l) {
  // The object holding the word: its address in the program and its size.
  const std::byte* object = nullptr;
  std::uint64_t size = 0;
  if (d->hdr.kind == page_kind::small) {
    heap_for_each(img, page_size_, [&](std::uint32_t payload, const object_header& oh) {
      if (off >= payload && off < std::uint64_t{payload} + oh.size) {
        object = access_.address(d) + payload;
        size = oh.size;
      }
    });
  } else {
    constexpr std::uint64_t start = sizeof(page_header) + sizeof(object_header);
    object = access_.address(d) - std::uint64_t{d->hdr.index} * page_size_ + start;
    size = d->hdr.size;
  }
  if (!object || l.size == 0) return "";
  std::string text;
  const std::byte* word = access_.address(d) + off;
  if (size / l.size > 1)
    text += ", in element " + std::to_string((word - object) / l.size) + " of an array of " +
            std::to_string(size / l.size) + " " + l.name;
  // A resident object's pointer word into it: its container or owner.
  auto lo = reinterpret_cast<std::uint64_t>(object), hi = lo + size;
  std::string holder;
  table_.for_each([&](page_desc* p) {
    if (!holder.empty() || p->state() == page_state::absent) return;
    const std::byte* pimg = access_.image(p);
    words_.for_each(p, pimg, [&](std::uint32_t poff, bool is_vptr, const type_layout& pl, std::uint32_t which) {
      if (is_vptr || !holder.empty()) return;
      std::uint64_t v;
      std::memcpy(&v, pimg + poff, sizeof v);
      if (v < lo || v >= hi) return;
      char at[64];
      std::snprintf(at, sizeof at, " at %p (page %" PRIu64 ")", static_cast<void*>(access_.address(p) + poff), p->page);
      holder = ", reached from " + member_name(pl, pl.pointers[which]) + at;
    });
  });
  return text + holder;
}

}  // namespace qs::detail
