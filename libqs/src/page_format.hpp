// page_format.hpp: the bytes of a page, in memory and in the store.
//
// A page record in the store is a record_header followed by the page image.
// The image is exactly what the program sees at the page's virtual frame.
//
// Small-object pages start with a page_header; after it, objects follow one
// another, each behind an object_header that names its type (an index into
// the database's type table) and its payload size in bytes (a multiple of 8;
// the element count is payload / type size, exact for every type of 8 bytes or
// more, which includes every type with pointers). A free block is an object of
// type free_type. Everything from
// `top` to the end of the page has never been allocated.
//
// A large object (one that does not fit on a small-object page) takes
// contiguous pages and frames: the head page holds a page_header, the
// object_header and the start of the payload; continuation pages hold payload
// only. Every page of a large object says so in its record header, with the
// object's type, size and the page's index in the object, so that any one of
// them can be interpreted alone.
//
// Objects' headers are 8 bytes in hardware mode and 16 in software mode (a
// uniqueness tag, see object_header), so a database belongs to one mode; its
// "format" record says which.
//
// Invariants:
//  * object headers and payloads are 8-byte aligned; payload sizes are
//    multiples of 8.
//  * record_header::version grows with every write of the record.
//  * record_header::checksum is the CRC-32C of the record header (with the
//    checksum field zero) followed by the image; it is checked on every read.
#pragma once

#include <cstddef>
#include <cstdint>

#include <qs/ref.hpp>  // QS_SOFTWARE_SWIZZLE

namespace qs::detail {

enum class page_kind : std::uint32_t { small = 1, large_head = 2, large_tail = 3 };

constexpr std::uint32_t record_magic = 0x43525351;  // "QSRC"
constexpr std::uint32_t page_magic = 0x47505351;    // "QSPG"

struct record_header {
  std::uint32_t magic;
  std::uint32_t checksum;
  std::uint64_t frame;       // the page's preferred frame
  page_kind kind;
  std::uint32_t type;        // large objects: the object's type index
  std::uint32_t size;        // large objects: the object's payload bytes
  std::uint32_t index;       // large objects: this page's index in the object
  // Bumped by every write of the record (covered by the checksum): a client
  // that caches pages across transactions of a shared store (qs-pageserver)
  // revalidates its copy by this number instead of fetching the page again.
  std::uint64_t version;
  // Entries in the page's mapping object (mapping.hpp), which the store
  // keeps with the record (store.hpp); 0 when the page holds no pointer.
  std::uint32_t mapping_entries;
  std::uint32_t reserved;
};
static_assert(sizeof(record_header) == 48);

struct page_header {
  std::uint32_t magic;
  std::uint32_t top;         // first offset never allocated
  std::uint32_t free_bytes;  // bytes in free blocks, headers included
  std::uint32_t last_tag;    // software mode: the tag of the last object placed here
};
static_assert(sizeof(page_header) == 16);

// In software mode (QS_SOFTWARE_SWIZZLE) the header also carries the
// object's uniqueness tag, which every qs::ref to the object repeats: a
// reference whose tag is not in the header names an object that was deleted.
// Tags are never 0 in a live object; freeing an object zeroes its tag. The
// tag is the last word before the payload (qs/ref.hpp reads it there).
struct object_header {
  std::uint32_t type;
  std::uint32_t size;  // payload bytes
#if QS_SOFTWARE_SWIZZLE
  std::uint32_t tag;
  std::uint32_t reserved;
#endif
};
static_assert(sizeof(object_header) == (QS_SOFTWARE_SWIZZLE ? 16 : 8));

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

constexpr std::uint32_t round8(std::uint64_t n) { return static_cast<std::uint32_t>((n + 7) & ~std::uint64_t{7}); }

// CRC-32C of a buffer, continuing from `crc` (0 to start).
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t n) noexcept;

// The checksum of a record: header (checksum field taken as zero) and image.
std::uint32_t record_checksum(const record_header& h, const std::byte* image, std::size_t n) noexcept;
// Its first part, the header's; crc32c continues it over the image's bytes.
std::uint32_t record_header_checksum(const record_header& h) noexcept;

}  // namespace qs::detail
