#include "core/page_heap.hpp"

#include <cstring>

namespace qs::detail {
namespace {

page_header* header(std::byte* image) { return reinterpret_cast<page_header*>(image); }
object_header* at(std::byte* image, std::uint32_t off) { return reinterpret_cast<object_header*>(image + off); }

std::uint32_t pad_for(std::uint32_t header_off, std::uint32_t align) {
  if (align <= 8) return 0;
  std::uint32_t payload = header_off + sizeof(object_header);
  return (align - payload % align) % align;  // a multiple of 8: both are
}

// Places an object whose header goes at `off` + `pad`; [off, off + pad) becomes
// a free block. Zeroes the payload. Returns the payload offset.
std::uint32_t place(std::byte* image, std::uint32_t off, std::uint32_t pad, std::uint32_t type, std::uint32_t payload) {
  if (pad) *at(image, off) = make_header(free_type, pad - static_cast<std::uint32_t>(sizeof(object_header)));
  std::uint32_t h = off + pad;
  *at(image, h) = make_header(type, payload);
  // Software mode: a tag this page has not given before (0 is never one).
  std::uint32_t tag = ++header(image)->last_tag;
  if (tag == 0) tag = ++header(image)->last_tag;
  set_tag(*at(image, h), tag);
  std::memset(image + h + sizeof(object_header), 0, payload);
  return h + sizeof(object_header);
}

}  // namespace

void init_small_page(std::byte* image, std::uint32_t page_size) {
  std::memset(image, 0, page_size);
  *header(image) = {page_magic, sizeof(page_header), 0, 0};
}

std::uint32_t heap_allocate(std::byte* image, std::uint32_t page_size, std::uint32_t type, std::uint32_t payload,
                            std::uint32_t align) {
  page_header* ph = header(image);
  const std::uint32_t hs = sizeof(object_header);
  std::uint32_t off = sizeof(page_header);
  if (ph->free_bytes >= hs + payload) {
    while (off < ph->top) {
      object_header* oh = at(image, off);
      if (oh->type == free_type) {
        // Merge the free blocks that follow.
        for (std::uint32_t next = off + hs + oh->size; next < ph->top && at(image, next)->type == free_type;
             next = off + hs + oh->size)
          oh->size += hs + at(image, next)->size;
        std::uint32_t total = hs + oh->size;
        std::uint32_t pad = pad_for(off, align);
        // The block is taken when the object fills it or leaves room for a
        // free block's header after it: in software mode a header is 16
        // bytes, so 8 bytes left over would be a header that overruns.
        const std::uint32_t need = pad + hs + payload;
        if (need == total || need + hs <= total) {
          std::uint32_t rest = total - need;  // 0 or at least a header
          std::uint32_t p = place(image, off, pad, type, payload);
          if (rest) *at(image, off + pad + hs + payload) = make_header(free_type, rest - hs);
          ph->free_bytes -= hs + payload;
          return p;
        }
      }
      off += hs + oh->size;
    }
  }
  off = ph->top;
  std::uint32_t pad = pad_for(off, align);
  if (std::uint64_t{off} + pad + hs + payload > page_size) return 0;
  std::uint32_t p = place(image, off, pad, type, payload);
  ph->top = off + pad + hs + payload;
  ph->free_bytes += pad;
  return p;
}

const object_header* heap_object_at(const std::byte* image, std::uint32_t page_size, std::uint32_t offset) {
  // Objects lie in address order: the walk stops at the offset.
  auto* ph = reinterpret_cast<const page_header*>(image);
  const std::uint64_t top = ph->top < page_size ? ph->top : page_size;
  std::uint64_t off = sizeof(page_header);
  while (off + sizeof(object_header) <= top) {
    auto* oh = reinterpret_cast<const object_header*>(image + off);
    const std::uint64_t payload = off + sizeof(object_header);
    if (payload > offset || payload + oh->size > top) return nullptr;
    if (payload == offset) return oh->type != free_type ? oh : nullptr;
    off = payload + oh->size;
  }
  return nullptr;
}

heap_free_plan heap_plan_free(const std::byte* image, std::uint32_t page_size, std::uint32_t offset) {
  // One walk, up to the object. The tail is the end of the last live object
  // (trailing free blocks go back to it): freeing an object that a live one
  // follows adds its bytes to the free bytes; freeing the last moves the
  // tail back to the live object before it, and the free bytes to those of
  // the blocks before that one.
  auto* ph = reinterpret_cast<const page_header*>(image);
  const std::uint64_t top = ph->top < page_size ? ph->top : page_size;
  const std::uint64_t hs = sizeof(object_header);
  std::uint64_t off = sizeof(page_header), used_end = off, free_before = 0, free_running = 0;
  while (off + hs <= top) {
    auto* h = reinterpret_cast<const object_header*>(image + off);
    const std::uint64_t end = off + hs + h->size;
    if (end > top || off + hs > offset) return {};
    if (off + hs == offset) {
      if (h->type == free_type) return {};
      if (end < top)
        return {true, static_cast<std::uint32_t>(off), ph->top,
                ph->free_bytes + static_cast<std::uint32_t>(hs + h->size)};
      return {true, static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(used_end),
              static_cast<std::uint32_t>(free_before)};
    }
    if (h->type == free_type) {
      free_running += hs + h->size;
    } else {
      used_end = end;
      free_before = free_running;
    }
    off = end;
  }
  return {};
}

void heap_starts::build(const std::byte* image, std::uint32_t page_size) {
  bits_.assign((page_size / 8 + 63) / 64, 0);
  usable_ = true;
  // heap_plan_free's walk: it ends where a block overruns the top.
  heap_for_each_block(image, page_size, [&](std::uint32_t payload, const object_header&) {
    const std::uint32_t off = payload - static_cast<std::uint32_t>(sizeof(object_header));
    if (off % 8 != 0) usable_ = false;
    if (usable_) bits_[off / 8 / 64] |= std::uint64_t{1} << (off / 8 % 64);
  });
}

std::uint32_t heap_starts::before(std::uint32_t header) const {
  std::uint64_t i = header / 8;
  if (i == 0) return 0;
  --i;  // the last bit that may be set
  for (std::uint64_t w = i / 64 + 1; w-- > 0;) {
    if (w >= bits_.size()) {
      i = w * 64 - 1;
      continue;
    }
    const unsigned keep = static_cast<unsigned>(i - w * 64);  // bits [0, keep] of word w
    const std::uint64_t word = keep == 63 ? bits_[w] : bits_[w] & ((std::uint64_t{2} << keep) - 1);
    if (word) return static_cast<std::uint32_t>(8 * (w * 64 + 63 - static_cast<std::uint64_t>(__builtin_clzll(word))));
    i = w * 64 - 1;
  }
  return 0;
}

void heap_starts::applied(const heap_free_plan& plan) {
  if (!usable_) return;
  // Clears every start at or after the new top.
  const std::uint64_t first = (std::uint64_t{plan.top} + 7) / 8;
  for (std::uint64_t w = first / 64; w < bits_.size(); ++w) {
    if (w == first / 64 && first % 64 != 0) bits_[w] &= (std::uint64_t{1} << (first % 64)) - 1;
    else bits_[w] = 0;
  }
}

heap_free_plan heap_plan_free(const std::byte* image, std::uint32_t page_size, std::uint32_t offset,
                              const heap_starts& starts) {
  if (!starts.usable()) return heap_plan_free(image, page_size, offset);
  auto* ph = reinterpret_cast<const page_header*>(image);
  const std::uint64_t top = ph->top < page_size ? ph->top : page_size;
  const std::uint64_t hs = sizeof(object_header);
  if (offset < sizeof(page_header) + hs || offset > top) return {};
  const auto at = static_cast<std::uint32_t>(offset - hs);
  if (!starts.starts_at(at)) return {};
  auto* h = reinterpret_cast<const object_header*>(image + at);
  if (h->type == free_type) return {};
  const std::uint64_t end = std::uint64_t{at} + hs + h->size;
  if (end > top) return heap_plan_free(image, page_size, offset);  // changed since the walk: walk again
  if (end < top) return {true, at, ph->top, ph->free_bytes + static_cast<std::uint32_t>(hs + h->size)};
  // The page's last object: the tail goes back over the free blocks before
  // it, to the end of the last live object (or the page's first block).
  std::uint64_t tail = at;
  std::uint32_t free_bytes = ph->free_bytes;
  for (std::uint32_t b = starts.before(at); b != 0; b = starts.before(b)) {
    auto* bh = reinterpret_cast<const object_header*>(image + b);
    if (bh->type != free_type) break;
    const std::uint64_t size = hs + bh->size;
    // A header that does not count its free blocks right: the walk decides.
    if (b + size != tail || size > free_bytes) return heap_plan_free(image, page_size, offset);
    free_bytes -= static_cast<std::uint32_t>(size);
    tail = b;
  }
  return {true, at, static_cast<std::uint32_t>(tail), free_bytes};
}

void heap_apply_free(std::byte* image, const heap_free_plan& plan) {
  object_header* h = at(image, plan.header);
  h->type = free_type;
  set_tag(*h, 0);
  header(image)->top = plan.top;
  header(image)->free_bytes = plan.free_bytes;
}

bool heap_free(std::byte* image, std::uint32_t page_size, std::uint32_t offset) {
  const heap_free_plan plan = heap_plan_free(image, page_size, offset);
  if (plan.found) heap_apply_free(image, plan);
  return plan.found;
}

std::uint32_t heap_available(const std::byte* image, std::uint32_t page_size) {
  auto* ph = reinterpret_cast<const page_header*>(image);
  return ph->free_bytes + (page_size - ph->top);
}

}  // namespace qs::detail
