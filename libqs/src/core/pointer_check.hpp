// core/pointer_check.hpp: the commit's check that every pointer word on a page
// is null or persistent.
//
// A pointer word holding a transient address (or, in software mode, any
// raw address: persistent objects refer to each other through qs::ref)
// would be meaningless in the next process. The check walks a page's
// pointer words (page_words.hpp) and asks the mode (page_access) whether
// each value may be stored; a refusal names the member, the page and where
// the value points (qs::transient_pointer, or qs::cross_database_pointer
// for a pointer into another open database). When the word is in an array
// (a qs::allocator buffer, say) it also names the element, and the member
// of a resident object that holds the array (the container), when one
// points into it.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/page_table.hpp"
#include "core/page_words.hpp"
#include "mode/page_access.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace qs::detail {

class pointer_check {
 public:
  pointer_check(page_words& words, const page_access& access, page_table& table, std::uint32_t page_size)
      : words_(words), access_(access), table_(table), page_size_(page_size) {}

  // Whether every pointer word on d's image `img` may be stored. Throws
  // when one may not and `throw_on_violation` is set.
  bool check(const page_desc* d, const std::byte* img, bool throw_on_violation);
  // check(d, img, throw_on_violation) for a page whose image differs from
  // its before-image only in `changed` (sorted, disjoint): a word that is
  // where it was, as it was, came in with the page, stored by a commit (or
  // an eviction) that checked it, so only the words page_words::for_each_in
  // reports are checked; `ok` says whether they may all be stored. Returns
  // whether one of them is a pointer word (not a vptr): when none is, the
  // page's pointers, and so its mapping object, are what they were.
  bool check_changed(const page_desc* d, const std::byte* img, const std::vector<byte_range>& changed,
                     bool throw_on_violation, bool& ok);

 private:
  // Whether the pointer word at `off` (pointer `which` of layout l) may be
  // stored; throws naming it when not and `throw_on_violation`.
  bool storable(const page_desc* d, const std::byte* img, std::uint32_t off, const type_layout& l, std::uint32_t which,
                bool throw_on_violation) {
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    if (v == 0 || access_.storable_pointer(v)) [[likely]]
      return true;
    return refuse(d, img, off, l, which, v, throw_on_violation);
  }
  // storable's answer for a word `v` that may not be stored.
  bool refuse(const page_desc* d, const std::byte* img, std::uint32_t off, const type_layout& l, std::uint32_t which,
              std::uint64_t v, bool throw_on_violation);
  // Where the word at page offset `off` of d is: the element of its object
  // and the resident object member that points into that object, as text
  // for a message ("" when nothing more is known).
  std::string whereabouts(const page_desc* d, const std::byte* img, std::uint32_t off, const type_layout& l);

  page_words& words_;
  const page_access& access_;
  page_table& table_;
  std::uint32_t page_size_;
};

}  // namespace qs::detail
