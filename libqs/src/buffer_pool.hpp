// buffer_pool.hpp: the bounded set of real page frames, and its replacement.
//
// The pool owns `slots` pages of real memory (os/frames.hpp's pool_memory).
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
#pragma once

#include "os/frames.hpp"

#include <cstdint>
#include <vector>

namespace qs::detail {

class page_desc;

class buffer_pool {
 public:
  buffer_pool(std::uint32_t slots, std::uint32_t page_size);

  std::uint32_t size() const { return static_cast<std::uint32_t>(owner_.size()); }
  std::byte* data(std::uint32_t slot) const { return memory_.slot(slot); }
  // Where the before-image of the page in `slot` is kept.
  std::byte* before(std::uint32_t slot) const { return memory_.shadow(slot); }
  const pool_memory& memory() const { return memory_; }
  // The page whose image holds address p (software mode hands out such
  // addresses), or nullptr.
  page_desc* owner_of(const void* p) const { return memory_.contains(p) ? owner_[memory_.slot_of(p)] : nullptr; }

  std::uint32_t free_slots() const { return static_cast<std::uint32_t>(free_.size()); }
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
  pool_memory memory_;
  std::vector<page_desc*> owner_;
  std::vector<std::uint32_t> free_;
  std::uint32_t hand_ = 0;
};

}  // namespace qs::detail
