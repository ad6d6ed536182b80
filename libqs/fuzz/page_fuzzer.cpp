// page_fuzzer: libFuzzer target for the code that reads page records and
// mapping objects, the bytes a page server's other clients (or a damaged
// file) control even when their checksum is right.
//
// The input's first 48 bytes are a record header and the next 4096 the
// page image (zero-padded when short); what follows is a mapping object.
// check_page must never crash or hang, whatever the bytes. On a page it
// accepts, every object must lie inside the page with a known type and
// whole elements, and the in-page allocator (allocate, free, look up) must
// keep to the page. decode_mapping must refuse or decode, never crash.
// Three types are known: 16 (24 bytes, with pointers), 17 (1 byte, none),
// 18 (8 bytes, a pointer).
#include <qs/format/mapping.hpp>
#include "core/page_check.hpp"
#include "core/page_heap.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

using namespace qs::detail;

namespace {

constexpr std::uint32_t page_size = 4096;

std::uint32_t size_of(std::uint32_t type, bool& has_words) {
  switch (type) {
    case 16: has_words = true; return 24;
    case 17: has_words = false; return 1;
    case 18: has_words = true; return 8;
    default: return 0;
  }
}

void check_accepted_small(std::byte* img) {
  heap_for_each(img, page_size, [&](std::uint32_t payload, const object_header& oh) {
    bool words = false;
    std::uint32_t size = size_of(oh.type, words);
    if (std::uint64_t{payload} + oh.size > page_size || size == 0 || (words && oh.size % size)) std::abort();
    if (heap_object_at(img, page_size, payload) == nullptr) std::abort();
  });
  // The in-page allocator on an accepted page stays inside it.
  std::vector<std::byte> copy(img, img + page_size);
  std::uint32_t at = heap_allocate(copy.data(), page_size, 16, 24, 8);
  if (at && (at < sizeof(page_header) + sizeof(object_header) || at + 24 > page_size)) std::abort();
  if (at && !heap_free(copy.data(), page_size, at)) std::abort();
  std::uint32_t big = heap_allocate(copy.data(), page_size, 17, 1024, 64);
  if (big && (big % 64 || big + 1024 > page_size)) std::abort();
  if (heap_available(copy.data(), page_size) > page_size) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> rec(sizeof(record_header) + page_size);
  std::memcpy(rec.data(), data, std::min(size, rec.size()));
  record_header h;
  std::memcpy(&h, rec.data(), sizeof h);
  std::byte* img = rec.data() + sizeof h;
  std::string wrong = check_page(h, img, page_size, size_of);
  if (wrong.empty() && h.kind == page_kind::small) check_accepted_small(img);
  if (size > rec.size()) {
    std::string_view m(reinterpret_cast<const char*>(data) + rec.size(), size - rec.size());
    if (auto decoded = decode_mapping(m, page_size))
      for (const mapping_entry& e : *decoded)
        if (find_run(*decoded, e.address, page_size) == nullptr) std::abort();
  }
  return 0;
}
