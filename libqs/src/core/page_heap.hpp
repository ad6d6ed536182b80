// core/page_heap.hpp: allocation inside one small-object page.
//
// Works on a page image (page_format.hpp) through the buffer pool's address of
// it; knows nothing of stores, frames or transactions. Allocation is first
// fit over the free blocks, merging neighbouring free blocks as it walks, then
// from the never-allocated tail. Freeing turns an object into a free block,
// or gives it back to the tail when it is the last object.
//
// Invariants (on a page these functions accept):
//  * objects tile [sizeof(page_header), top) exactly.
//  * header.free_bytes is the total size of the free blocks, headers included.
#pragma once

#include "core/page_format.hpp"

#include <cstdint>
#include <vector>

namespace qs::detail {

void init_small_page(std::byte* image, std::uint32_t page_size);

// Room for the largest object a small page can take, in payload bytes.
constexpr std::uint32_t small_payload_limit(std::uint32_t page_size) {
  return page_size - static_cast<std::uint32_t>(sizeof(page_header) + sizeof(object_header));
}

// Allocates an object of `type` whose payload is `payload` bytes (a multiple
// of 8) aligned to `align`. Returns the payload's offset in the page, or 0
// when it does not fit.
std::uint32_t heap_allocate(std::byte* image, std::uint32_t page_size, std::uint32_t type, std::uint32_t payload,
                            std::uint32_t align);

// Frees the object whose payload starts at `offset`. False when no object
// starts there.
bool heap_free(std::byte* image, std::uint32_t page_size, std::uint32_t offset);

// heap_free in two steps, so that a caller can check the offset and then
// take the page's before-image before anything changes: heap_plan_free
// reads the page and says what freeing the object at `offset` leaves
// (`found` false, and nothing to apply, when no live object starts there);
// heap_apply_free writes it, on the same image.
struct heap_free_plan {
  bool found = false;
  std::uint32_t header = 0;      // the object's header offset
  std::uint32_t top = 0;         // the page header's top after the free
  std::uint32_t free_bytes = 0;  // and its free bytes
};
// Walks the page from its start up to the object.
heap_free_plan heap_plan_free(const std::byte* image, std::uint32_t page_size, std::uint32_t offset);

// Where the blocks of one page (live objects and free blocks) start, read
// by one walk, so that a run of frees on the page need not walk it again: a
// delete's offset is checked against the starts, and only the free of the
// page's last object looks at the blocks before it (back to the last live
// one). A free keeps every start but moves the tail back over the trailing
// free blocks (applied()); an allocation may merge free blocks. So the
// owner drops it at the page's next allocation and wherever the image may
// be replaced (a transaction's end).
//
// Invariant: after build(image) and applied() for every free applied to
// the image since, heap_plan_free(image, ..., starts) plans what the walk
// from the page's start plans, on every page whose header counts its free
// blocks right (page_check.hpp's pages); a page where that does not hold is
// walked. A page with a block at an offset that is not a multiple of 8 (no
// allocation of qs's makes one) is never indexed: usable() is false and
// every free on it walks.
//
// Thread-safety: none of its own; the owner's.
class heap_starts {
 public:
  void build(const std::byte* image, std::uint32_t page_size);
  // Knows no page: usable() is false until the next build().
  void forget() { usable_ = false; }
  bool usable() const { return usable_; }
  bool starts_at(std::uint32_t header) const {
    const std::uint32_t i = header / 8;
    return header % 8 == 0 && i / 64 < bits_.size() && (bits_[i / 64] >> (i % 64) & 1) != 0;
  }
  // The last start before `header`, or 0 when there is none (no block
  // starts at 0: the page header is there).
  std::uint32_t before(std::uint32_t header) const;
  // heap_apply_free(image, plan) was done: the starts at or after the
  // plan's top are the tail's now. Nothing when not usable().
  void applied(const heap_free_plan& plan);

 private:
  std::vector<std::uint64_t> bits_;  // bit i: a block starts at 8 * i
  bool usable_ = false;
};
heap_free_plan heap_plan_free(const std::byte* image, std::uint32_t page_size, std::uint32_t offset,
                              const heap_starts& starts);
void heap_apply_free(std::byte* image, const heap_free_plan& plan);

// The object whose payload starts at `offset`, or nullptr.
const object_header* heap_object_at(const std::byte* image, std::uint32_t page_size, std::uint32_t offset);

// Bytes free on the page, in blocks and in the tail.
std::uint32_t heap_available(const std::byte* image, std::uint32_t page_size);

// Calls f(payload_offset, header) for every allocated object. The walk
// stops at the first object that does not end inside the page (an image
// changed in memory behind the allocator's back; page_check.hpp refuses such
// records before they are used), so it never reads outside the image.
template <class F>
void heap_for_each(const std::byte* image, std::uint32_t page_size, F f);

// The same walk, calling f(payload_offset, header) for every block, free
// blocks (type free_type) included, in page order.
template <class F>
void heap_for_each_block(const std::byte* image, std::uint32_t page_size, F f) {
  auto* ph = reinterpret_cast<const page_header*>(image);
  std::uint64_t top = ph->top < page_size ? ph->top : page_size;
  std::uint64_t off = sizeof(page_header);
  while (off + sizeof(object_header) <= top) {
    auto* oh = reinterpret_cast<const object_header*>(image + off);
    std::uint64_t payload = off + sizeof(object_header);
    if (payload + oh->size > top) return;
    f(static_cast<std::uint32_t>(payload), *oh);
    off = payload + oh->size;
  }
}

template <class F>
void heap_for_each(const std::byte* image, std::uint32_t page_size, F f) {
  heap_for_each_block(image, page_size, [&](std::uint32_t payload, const object_header& oh) {
    if (oh.type != free_type) f(payload, oh);
  });
}

}  // namespace qs::detail
