// core/page_format.hpp: objects on a page: the header the runtime puts in front
// of every object, on top of the page record (page_record.hpp, in the
// format library, with the record and page headers and the checksum).
//
// Each object on a small-object page, and the one object of a large-object
// run, follows an object_header that names its type (an index into the
// database's type table) and its payload size in bytes (a multiple of 8; the
// element count is payload / type size, exact for every type of 8 bytes or
// more, which includes every type with pointers). A free block is an object
// of type free_type.
//
// Objects' headers are 8 bytes in hardware mode and 16 in software mode (a
// uniqueness tag, see object_header), so a database belongs to one mode; its
// "format" record says which. This header is the only part of the page
// format that depends on the mode (QS_SOFTWARE_SWIZZLE).
//
// Invariants:
//  * object headers and payloads are 8-byte aligned; payload sizes are
//    multiples of 8.
//
// Thread-safety: plain data and pure functions.
#pragma once

#include <qs/format/checksum.hpp>
#include <qs/format/page_record.hpp>

#include <cstddef>
#include <cstdint>

#include <qs/ref.hpp>  // QS_SOFTWARE_SWIZZLE, object_header

namespace qs::detail {

// object_header (qs/ref.hpp, one definition for the page format and
// qs::ref): in software mode (QS_SOFTWARE_SWIZZLE) the header also carries
// the object's uniqueness tag, which every qs::ref to the object repeats: a
// reference whose tag is not in the header names an object that was deleted.
// Tags are never 0 in a live object; freeing an object zeroes its tag. The
// tag is the last word before the payload (qs::ref::get reads it there).

inline std::uint32_t tag_of([[maybe_unused]] const object_header& h) {
#if QS_SOFTWARE_SWIZZLE
  return h.tag;
#else
  return 0;
#endif
}
inline void set_tag([[maybe_unused]] object_header& h, [[maybe_unused]] std::uint32_t tag) {
#if QS_SOFTWARE_SWIZZLE
  h.tag = tag;
#endif
}

constexpr std::uint32_t free_type = 0;

// The header of a `size`-byte payload of `type` (free_type: a free block),
// its tag (software mode) 0.
inline object_header make_header(std::uint32_t type, std::uint32_t size) {
  object_header h{};
  h.type = type;
  h.size = size;
  return h;
}

// The pages of a large object of `payload` bytes: its first page also holds
// the page header and the object header.
constexpr std::uint64_t large_object_pages(std::uint64_t payload, std::uint32_t page_size) {
  return (sizeof(page_header) + sizeof(object_header) + payload + page_size - 1) / page_size;
}

// n rounded up to a multiple of 8 (n at most 2^64 - 8).
constexpr std::uint64_t round8(std::uint64_t n) { return (n + 7) & ~std::uint64_t{7}; }

}  // namespace qs::detail
