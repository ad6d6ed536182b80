// core/page_check.hpp: the structure of a page record's image, checked before
// the runtime uses it.
//
// A record whose checksum is right may still be wrong: written by a program
// bug, or by any client of a page server. Before a page is accepted, its
// structure is checked against page_format.hpp: a small-object page's
// header (magic, top within the page, free bytes equal to its free blocks),
// every object inside [header, top) with a payload that is a multiple of 8
// and of its type's size when the type has pointers, and a type the
// database knows; a large object's page with a known type, a size a record
// can hold, an index inside the object, and (on its head) headers that
// agree with the record.
//
// Invariants: check_page never reads outside the image, and never loops
// more than once per 8 bytes of it.
//
// Thread-safety: pure function.
#pragma once

#include "core/page_format.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace qs::detail {

// The size of type index `type`, or 0 when the database does not know it;
// `has_words` says whether its objects hold pointers or vptrs. A function
// of the type: check_page asks it again only when an object's type or size
// differs from the last one it found sound.
using type_size_of = std::function<std::uint32_t(std::uint32_t type, bool& has_words)>;

// What is wrong with the image `img` of a record with header `h`, or an
// empty string when nothing is.
std::string check_page(const record_header& h, const std::byte* img, std::uint32_t page_size,
                       const type_size_of& size_of);

}  // namespace qs::detail
