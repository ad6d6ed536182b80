// core/page_words.hpp: the pointer words and vptrs of a page image, found from
// the types of the objects on it.
//
// A small-object page is walked object by object (page_heap.hpp); a page of
// a large object holds a slice of one object, whose type its record header
// names. Each object's type layout (schema_registry.hpp) gives the offsets
// of its pointer words and vptrs, repeated per array element.
//
// Invariants: every word reported lies inside the page image; an object of
// a type index the database does not know raises qs::corrupt_page naming
// the page (after the registry is reloaded once, for a shared store whose
// other clients may have added the type).
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/page_heap.hpp"
#include "core/page_table.hpp"
#include "core/schema_registry.hpp"

#include <qs/error.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace qs::detail {

class page_words {
 public:
  page_words(schema_registry& schema, bool shared_store, std::uint32_t page_size)
      : schema_(schema), shared_(shared_store), page_size_(page_size) {}

  // Calls f(page_offset, is_vptr, layout, which) for every pointer word and
  // vptr on the image `img` of page d (`which` indexes layout.pointers or
  // layout.vptrs).
  template <class F>
  void for_each(const page_desc* d, const std::byte* img, F f);

  // Whether a pointer word (not a vptr) of d's image lies in one of
  // `ranges` (sorted, disjoint): when none does, the page's pointers, and so
  // its mapping object, are what they were.
  bool any_pointer_in(const page_desc* d, const std::byte* img, const std::vector<byte_range>& ranges) {
    bool found = false;
    for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
      if (found || is_vptr) return;
      auto after = std::upper_bound(ranges.begin(), ranges.end(), off,
                                    [](std::uint32_t o, const byte_range& r) { return o < r.offset; });
      if (after != ranges.begin() && off < std::prev(after)->offset + std::prev(after)->length) found = true;
    });
    return found;
  }

  // The size of a type's elements, or 0 when the database has no such type;
  // has_words: whether its objects hold pointers or vptrs. `any_vptrs` is
  // set when they hold vptrs (and left as it was otherwise).
  std::uint32_t type_size(std::uint32_t type, bool& has_words, bool& any_vptrs) {
    const type_layout* l = find(type);
    if (!l) return 0;
    has_words = !l->pointers.empty() || !l->vptrs.empty();
    any_vptrs = any_vptrs || !l->vptrs.empty();
    return l->size;
  }

 private:
  // The layout of a type index, or nullptr when the database has none.
  const type_layout* find(std::uint32_t type);
  const type_layout& layout_of(const page_desc* d, std::uint32_t type);

  schema_registry& schema_;
  bool shared_;
  std::uint32_t page_size_;
};

inline const type_layout* page_words::find(std::uint32_t type) {
  const type_layout* l = schema_.layout(type);
  if (!l && shared_) {
    // Another client may have added the type since the schema was loaded.
    schema_.load();
    l = schema_.layout(type);
  }
  return l;
}

inline const type_layout& page_words::layout_of(const page_desc* d, std::uint32_t type) {
  const type_layout* l = find(type);
  if (!l)
    throw corrupt_page(
        d->page, "page " + std::to_string(d->page) + " holds an object of unknown type index " + std::to_string(type));
  return *l;
}

template <class F>
void page_words::for_each(const page_desc* d, const std::byte* img, F f) {
  auto visit = [&](const type_layout& l, std::uint64_t obj_begin, std::uint64_t elems, std::uint64_t lo,
                   std::uint64_t hi, std::int64_t shift) {
    // Words of elements [0, elems) of an object at obj_begin whose object
    // offset lies in [lo, hi); page offset = object offset + shift.
    if (l.pointers.empty() && l.vptrs.empty()) return;
    std::uint64_t first = lo / l.size, last = std::min<std::uint64_t>(elems, (hi + l.size - 1) / l.size);
    for (std::uint64_t e = first; e < last; ++e) {
      std::uint64_t base = obj_begin + e * l.size;
      for (std::uint32_t i = 0; i < l.pointers.size(); ++i) {
        std::uint64_t w = base + l.pointers[i];
        if (w >= lo && w < hi) f(static_cast<std::uint32_t>(w + shift), false, l, i);
      }
      for (std::uint32_t i = 0; i < l.vptrs.size(); ++i) {
        std::uint64_t w = base + l.vptrs[i];
        if (w >= lo && w < hi) f(static_cast<std::uint32_t>(w + shift), true, l, i);
      }
    }
  };
  if (d->hdr.kind == page_kind::small) {
    heap_for_each(img, page_size_, [&](std::uint32_t payload, const object_header& oh) {
      const type_layout& l = layout_of(d, oh.type);
      visit(l, 0, oh.size / l.size, 0, oh.size, payload);
    });
    return;
  }
  // A page of a large object: object bytes [lo, hi) are on this page.
  const type_layout& l = layout_of(d, d->hdr.type);
  constexpr std::uint64_t start = sizeof(page_header) + sizeof(object_header);
  std::uint64_t page_begin = std::uint64_t{d->hdr.index} * page_size_;
  std::uint64_t lo = page_begin > start ? page_begin - start : 0;
  std::uint64_t hi = std::min<std::uint64_t>(d->hdr.size, page_begin + page_size_ - start);
  if (lo >= hi) return;
  visit(l, 0, d->hdr.size / l.size, lo, hi, static_cast<std::int64_t>(start) - static_cast<std::int64_t>(page_begin));
}

}  // namespace qs::detail
