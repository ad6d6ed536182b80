// The structure check of page images.
#include "core/page_check.hpp"

#include <cstring>

namespace qs::detail {
namespace {

std::string object_problem(std::uint32_t type, std::uint64_t payload, const type_size_of& size_of) {
  if (payload % 8) return "a payload of " + std::to_string(payload) + " bytes, not a multiple of 8";
  if (type == free_type) return {};
  bool has_words = false;
  std::uint32_t size = size_of(type, has_words);
  if (size == 0) return "an object of unknown type index " + std::to_string(type);
  if (has_words && payload % size)
    return "an object of type index " + std::to_string(type) + " with " + std::to_string(payload) +
           " payload bytes, not a whole number of its " + std::to_string(size) + "-byte elements";
  return {};
}

std::string check_small(const std::byte* img, std::uint32_t page_size, const type_size_of& size_of) {
  page_header ph;
  std::memcpy(&ph, img, sizeof ph);
  if (ph.magic != page_magic) return "a damaged page header";
  if (ph.top < sizeof(page_header) || ph.top > page_size)
    return "a top of " + std::to_string(ph.top) + " outside the page";
  constexpr std::uint64_t hs = sizeof(object_header);
  std::uint64_t off = sizeof(page_header), free_total = 0;
  // The last type and size found sound: a page's objects are mostly of one
  // type, and asking a type's size costs more than the rest of the check.
  std::uint32_t sound_type = free_type;
  std::uint64_t sound_size = 0;
  while (off < ph.top) {
    if (off + hs > ph.top) return "an object header at offset " + std::to_string(off) + " that crosses top";
    object_header oh;
    std::memcpy(&oh, img + off, sizeof oh);
    std::uint64_t end = off + hs + oh.size;
    if (end > ph.top)
      return "an object at offset " + std::to_string(off + hs) + " of " + std::to_string(oh.size) +
             " bytes that ends past top (" + std::to_string(ph.top) + ")";
    if (oh.type == free_type) {
      if (oh.size % 8) return object_problem(oh.type, oh.size, size_of) + " at offset " + std::to_string(off + hs);
      free_total += hs + oh.size;
    } else if (oh.type != sound_type || oh.size != sound_size) {
      if (std::string p = object_problem(oh.type, oh.size, size_of); !p.empty())
        return p + " at offset " + std::to_string(off + hs);
      sound_type = oh.type;
      sound_size = oh.size;
    }
    off = end;
  }
  if (free_total != ph.free_bytes)
    return "a free-byte count of " + std::to_string(ph.free_bytes) + " where its free blocks hold " +
           std::to_string(free_total);
  return {};
}

std::string check_large(const record_header& h, const std::byte* img, std::uint32_t page_size,
                        const type_size_of& size_of) {
  if (std::uint64_t{h.size} > std::uint64_t{0xffffffff} - page_size)
    return "a large object of " + std::to_string(h.size) + " bytes, more than a record holds";
  std::uint64_t pages = large_object_pages(h.size, page_size);
  if (h.index >= pages)
    return "page " + std::to_string(h.index) + " of a large object of " + std::to_string(pages) + " pages";
  if ((h.kind == page_kind::large_head) != (h.index == 0))
    return "a large object's page " + std::to_string(h.index) + " marked as " +
           (h.kind == page_kind::large_head ? "its head" : "not its head");
  if (h.type == free_type) return "a large object of the free type";
  if (std::string p = object_problem(h.type, h.size, size_of); !p.empty()) return p + " (a large object)";
  if (h.kind == page_kind::large_head) {
    page_header ph;
    object_header oh;
    std::memcpy(&ph, img, sizeof ph);
    std::memcpy(&oh, img + sizeof ph, sizeof oh);
    if (ph.magic != page_magic) return "a damaged page header";
    if (oh.type != h.type || oh.size != h.size) return "an object header that disagrees with its record";
  }
  return {};
}

}  // namespace

std::string check_page(const record_header& h, const std::byte* img, std::uint32_t page_size,
                       const type_size_of& size_of) {
  switch (h.kind) {
    case page_kind::small: return check_small(img, page_size, size_of);
    case page_kind::large_head:
    case page_kind::large_tail: return check_large(h, img, page_size, size_of);
  }
  return "a record of unknown kind " + std::to_string(static_cast<std::uint32_t>(h.kind));
}

}  // namespace qs::detail
