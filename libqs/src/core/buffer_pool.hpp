// core/buffer_pool.hpp: the bounded set of real page frames, and its replacement.
//
// The pool is a budget of `slots` resident pages: a page's bytes are its
// frame's (os/frames.hpp), and a slot is the page's place in the clock; a
// page written in the open transaction has its before-image in an entry
// the slot holds (before_images.hpp). Slots are handed out as pages come in, so
// the pool's own memory follows the most pages it has held, not its size.
// Each slot is free or holds one resident page. When no slot is free the
// replacement policy chooses a victim among the resident pages; the baseline
// is QuickStore's simplified clock: a page's reference bit is set when it is
// faulted in (read or write), and the clock hand clears set bits until it
// finds a clear one; a dirty page (whose eviction costs a write into the
// store transaction) is passed over once more. Pinned pages are never
// chosen.
//
// Invariants:
//  * owner(slot) is the page in the slot, or nullptr when the slot is free.
//  * A page in the pool has desc->slot == its slot.
//  * size() slots at most are ever handed out.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/before_images.hpp"

#include <cstdint>
#include <vector>

namespace qs::detail {

class page_desc;

class buffer_pool {
 public:
  buffer_pool(std::uint32_t slots, std::uint32_t page_size);

  std::uint32_t size() const { return slots_; }
  // Where the before-image of the page in `slot` is kept: take_before gives
  // the slot an entry when it has none (and says which memory to populate
  // ahead, before_images::take), borrow_before makes the page's stored
  // image its before-image instead (before_images::borrow), before() is
  // the one it has.
  std::byte* take_before(std::uint32_t slot, before_images::range& ahead) { return before_.take(slot, ahead); }
  void borrow_before(std::uint32_t slot, const std::byte* stored) { before_.borrow(slot, stored); }
  const std::byte* before(std::uint32_t slot) const { return before_.before(slot); }
  // The transaction ended: its before-images are no longer needed.
  void forget_before_images() { before_.reset(); }
  // The before-images' memory may go back to the kernel when it needs it
  // (after a transaction that wrote many pages); their contents are gone.
  void offer_before_images() { before_.offer(); }
  const before_images& before_image_entries() const { return before_; }
  const zeroed_memory& before_image_memory() const { return before_.memory(); }

  std::uint32_t free_slots() const { return static_cast<std::uint32_t>(free_.size() + (slots_ - owner_.size())); }
  // A free slot now owned by `d`, or false when every slot is in use.
  bool take_free(page_desc* d, std::uint32_t& slot);
  // The page the replacement policy would evict next, or nullptr if every
  // resident page is pinned.
  page_desc* victim();
  void release(std::uint32_t slot);
  // Calls f(page) for every resident page.
  template <class F>
  void for_each_page(F f) const {
    for (page_desc* d : owner_)
      if (d) f(d);
  }

 private:
  std::uint32_t slots_;
  before_images before_;
  std::vector<page_desc*> owner_;  // the slots handed out so far
  std::vector<std::uint32_t> free_;
  std::uint32_t hand_ = 0;
};

}  // namespace qs::detail
