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
#include <string>
#include <utility>
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

  // Calls f(page_offset, is_vptr, layout, which) for the pointer words and
  // vptrs of d's image that may differ from those of an earlier image of
  // the page where only the bytes in `ranges` (sorted, disjoint) differ:
  // the words that overlap one, and on a small-object page every word of
  // every object from the first block whose header (or the page header)
  // overlaps one. Up to that block, the walk of the page's blocks is the
  // same in both images, so the objects there are the same; after it, it
  // may not be. Objects no range reaches cost a comparison each.
  template <class F>
  void for_each_in(const page_desc* d, const std::byte* img, const std::vector<byte_range>& ranges, F f);

  // Whether a pointer word (not a vptr) for_each_in reports: when none,
  // the page's pointers, and so its mapping object, are what they were.
  bool any_pointer_in(const page_desc* d, const std::byte* img, const std::vector<byte_range>& ranges) {
    bool found = false;
    for_each_in(d, img, ranges,
                [&](std::uint32_t, bool is_vptr, const type_layout&, std::uint32_t) { found = found || !is_vptr; });
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
  // A page of a large object holds the object's bytes [lo, hi) (false when
  // none); page offset = object offset + shift.
  bool large_slice(const page_desc* d, std::uint64_t& lo, std::uint64_t& hi, std::int64_t& shift) const {
    constexpr std::uint64_t start = sizeof(page_header) + sizeof(object_header);
    const std::uint64_t page_begin = std::uint64_t{d->hdr.index} * page_size_;
    lo = page_begin > start ? page_begin - start : 0;
    hi = std::min<std::uint64_t>(d->hdr.size, page_begin + page_size_ - start);
    shift = static_cast<std::int64_t>(start) - static_cast<std::int64_t>(page_begin);
    return lo < hi;
  }
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

namespace page_words_detail {

// Calls f for the words of elements [0, elems) of an object whose words start
// at an object offset in [lo, hi); page offset = object offset + shift.
template <class F>
void visit_words(const type_layout& l, std::uint64_t elems, std::uint64_t lo, std::uint64_t hi, std::int64_t shift,
                 F& f) {
  if (l.pointers.empty() && l.vptrs.empty()) return;
  std::uint64_t first = lo / l.size, last = std::min<std::uint64_t>(elems, (hi + l.size - 1) / l.size);
  for (std::uint64_t e = first; e < last; ++e) {
    std::uint64_t base = e * l.size;
    for (std::uint32_t i = 0; i < l.pointers.size(); ++i) {
      std::uint64_t w = base + l.pointers[i];
      if (w >= lo && w < hi) f(static_cast<std::uint32_t>(w + shift), false, l, i);
    }
    for (std::uint32_t i = 0; i < l.vptrs.size(); ++i) {
      std::uint64_t w = base + l.vptrs[i];
      if (w >= lo && w < hi) f(static_cast<std::uint32_t>(w + shift), true, l, i);
    }
  }
}

// visit_words for every word of a whole object of `size` bytes at page
// offset `at`: its elements are whole, so every word lies inside it (a
// layout's words end inside its size: schema_registry.cpp), and no word is
// tested against bounds.
template <class F>
void visit_object(const type_layout& l, std::uint64_t size, std::uint64_t at, F& f) {
  const std::uint32_t* const pointers = l.pointers.data();
  const std::uint32_t* const vptrs = l.vptrs.data();
  const std::uint32_t np = static_cast<std::uint32_t>(l.pointers.size());
  const std::uint32_t nv = static_cast<std::uint32_t>(l.vptrs.size());
  if (np == 0 && nv == 0) return;
  const std::uint64_t elems = size == l.size ? 1 : size / l.size;
  for (std::uint64_t e = 0, base = at; e < elems; ++e, base += l.size) {
    for (std::uint32_t i = 0; i < np; ++i) f(static_cast<std::uint32_t>(base + pointers[i]), false, l, i);
    for (std::uint32_t i = 0; i < nv; ++i) f(static_cast<std::uint32_t>(base + vptrs[i]), true, l, i);
  }
}

// The words of an object that overlap page bytes [lo, hi) start at object
// offsets in [lo - 7, hi) (a word is 8 bytes; packed types may place one
// anywhere), clipped to the object's [0, size).
inline std::pair<std::uint64_t, std::uint64_t> overlapping(std::uint64_t lo, std::uint64_t hi, std::uint64_t object_at,
                                                           std::uint64_t size) {
  std::uint64_t from = lo > object_at + 7 ? lo - object_at - 7 : 0;
  std::uint64_t to = hi > object_at ? std::min(hi - object_at, size) : 0;
  return {from, to};
}

}  // namespace page_words_detail

template <class F>
void page_words::for_each(const page_desc* d, const std::byte* img, F f) {
  using page_words_detail::visit_words;
  if (d->hdr.kind == page_kind::small) {
    heap_for_each(img, page_size_, [&](std::uint32_t payload, const object_header& oh) {
      page_words_detail::visit_object(layout_of(d, oh.type), oh.size, payload, f);
    });
    return;
  }
  const type_layout& l = layout_of(d, d->hdr.type);
  std::uint64_t lo, hi;
  std::int64_t shift;
  if (large_slice(d, lo, hi, shift)) visit_words(l, d->hdr.size / l.size, lo, hi, shift, f);
}

template <class F>
void page_words::for_each_in(const page_desc* d, const std::byte* img, const std::vector<byte_range>& ranges, F f) {
  using page_words_detail::overlapping;
  using page_words_detail::visit_words;
  if (ranges.empty()) return;
  if (d->hdr.kind == page_kind::small) {
    std::size_t r = 0;  // the first range that does not end before the block
    bool reframed = ranges.front().offset < sizeof(page_header);
    heap_for_each_block(img, page_size_, [&](std::uint32_t payload, const object_header& oh) {
      const std::uint64_t header = payload - sizeof(object_header), end = std::uint64_t{payload} + oh.size;
      while (r < ranges.size() && ranges[r].offset + ranges[r].length <= header) ++r;
      reframed = reframed || (r < ranges.size() && ranges[r].offset < payload);
      if (oh.type == free_type || (!reframed && (r == ranges.size() || ranges[r].offset >= end))) return;
      const type_layout& l = layout_of(d, oh.type);
      const std::uint64_t elems = oh.size / l.size;
      if (reframed) {
        visit_words(l, elems, 0, oh.size, payload, f);
        return;
      }
      for (std::size_t k = r; k < ranges.size() && ranges[k].offset < end; ++k) {
        auto [from, to] = overlapping(ranges[k].offset, ranges[k].offset + ranges[k].length, payload, oh.size);
        visit_words(l, elems, from, to, payload, f);
      }
    });
    return;
  }
  const type_layout& l = layout_of(d, d->hdr.type);
  std::uint64_t lo, hi;
  std::int64_t shift;
  if (!large_slice(d, lo, hi, shift)) return;
  for (const byte_range& c : ranges) {
    // Object offset = page offset - shift; a word overlapping the range
    // starts at most 7 bytes before it.
    const std::int64_t from = std::max(static_cast<std::int64_t>(c.offset) - shift - 7, static_cast<std::int64_t>(lo));
    const std::int64_t to =
        std::min(static_cast<std::int64_t>(c.offset + c.length) - shift, static_cast<std::int64_t>(hi));
    if (from < to)
      visit_words(l, d->hdr.size / l.size, static_cast<std::uint64_t>(from), static_cast<std::uint64_t>(to), shift, f);
  }
}

}  // namespace qs::detail
