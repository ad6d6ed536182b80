// qs/format/page_record.hpp: the bytes of a page record in the store, the same in
// every swizzling mode, and read by the runtime and by qs-pageserver.
//
// A page record is a record_header followed by the page image; the image is
// exactly what the program sees at the page's virtual frame. With the record
// the store keeps the page's mapping object (mapping.hpp), whose entry count
// the header carries.
//
// Small-object pages start with a page_header; after it, objects follow one
// another, each behind an object header (the runtime's page_format.hpp: it
// differs between the swizzling modes). Everything from `top` to the end of
// the page has never been allocated.
//
// A large object (one that does not fit on a small-object page) takes
// contiguous pages and frames: the head page holds a page_header, the
// object's header and the start of the payload; continuation pages hold
// payload only. Every page of a large object says so in its record header,
// with the object's type, size and the page's index in the object, so that
// any one of them can be interpreted alone.
//
// Invariants:
//  * record_header::version grows with every write of the record.
//  * record_header::checksum is the CRC-32C of the record header (with the
//    checksum field zero) followed by the image (checksum.hpp); it is checked
//    on every read.
//  * record_header::mapping_entries is the number of entries of the mapping
//    object stored with the record; 0 when there is none.
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>

namespace qs::detail {

enum class page_kind : std::uint32_t { small = 1, large_head = 2, large_tail = 3 };

constexpr std::uint32_t record_magic = 0x43525351;  // "QSRC"
constexpr std::uint32_t page_magic = 0x47505351;    // "QSPG"

struct record_header {
  std::uint32_t magic;
  std::uint32_t checksum;
  std::uint64_t frame;  // the page's preferred frame
  page_kind kind;
  std::uint32_t type;   // large objects: the object's type index
  std::uint32_t size;   // large objects: the object's payload bytes
  std::uint32_t index;  // large objects: this page's index in the object
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

}  // namespace qs::detail
