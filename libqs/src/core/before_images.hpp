// core/before_images.hpp: where the pages the open transaction writes keep
// their before-images.
//
// A page written in a transaction keeps a copy of itself as it was (the
// commit diffs against it, an abort puts it back). The copies are entries of
// one reservation, handed out in order as pages are first written and all
// given back when the transaction ends, so every transaction reuses the
// same first entries: their memory is warm after the first transaction
// that wrote as many pages, and the memory held follows the most pages a
// transaction wrote, not the pages resident. Entries past those used so far
// get their memory a batch ahead (zeroed_memory::populate: one system call,
// made by fresh_frames' helper thread when there is one) instead of a page
// fault for each page at its first copy.
//
// A page whose store holds its image byte for byte where the runtime can
// read it (a page file's read-only mapping, store::image_in_file) takes no
// entry: it borrows that image as its before-image, with no copy and no
// memory. The store writes a page's image only when a transaction that
// wrote it commits, after the commit diffed it, so the image stays the
// before-image until the transaction ends.
//
// Invariants:
//  * A pool slot holds at most one entry or one borrowed image, and an
//    entry belongs to at most one slot; a slot's entry or borrowed image
//    stays its own until give_back(slot) (its page left the pool) or
//    reset() (the transaction ended).
//  * At most `entries` (the pool's slots) are held at once: each belongs to
//    a resident page.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "os/frames.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace qs::detail {

class before_images {
 public:
  // Entries given their memory together, ahead of the first copy into them.
  static constexpr std::uint32_t batch = 32;
  // Bytes of memory_ to populate: [offset, offset + bytes).
  struct range {
    std::size_t offset = 0, bytes = 0;
  };

  before_images(std::uint32_t entries, std::uint32_t page_size);

  // The entry of the page in `slot`, given one if it has none. When fewer
  // than half a batch of entries past those taken have memory, `ahead` is
  // the next batch's bytes of memory(), for the caller to populate
  // (zeroed_memory::populate, from any thread, while entries are taken and
  // written).
  std::byte* take(std::uint32_t slot, range& ahead);
  const zeroed_memory& memory() const { return memory_; }
  // The entry of the page in `slot`, which take() gave it.
  std::byte* at(std::uint32_t slot) const { return memory_.data() + std::size_t{of_slot_[slot]} * page_size_; }
  bool has(std::uint32_t slot) const { return slot < of_slot_.size() && of_slot_[slot] != none; }
  // The page in `slot`, which holds no entry, has `stored` (its image as
  // its store holds it, read-only) as its before-image.
  void borrow(std::uint32_t slot, const std::byte* stored) { borrowed_[slot] = stored; }
  // The before-image of the page in `slot`: its entry, or what it borrowed.
  const std::byte* before(std::uint32_t slot) const {
    if (!borrowed_.empty())
      if (auto it = borrowed_.find(slot); it != borrowed_.end()) return it->second;
    return at(slot);
  }
  // The page in `slot` left the pool: its entry goes to the next page written.
  void give_back(std::uint32_t slot);
  // The transaction ended: every entry is free, the first ones taken first.
  void reset();
  // Lets the kernel take back the memory of every entry used or asked
  // memory for so far (after a transaction that wrote many pages).
  void offer();
  // Entries asked memory for ahead, for tests: [0, ready()).
  std::uint32_t ready() const { return ready_; }

 private:
  static constexpr std::uint32_t none = ~0u;
  zeroed_memory memory_;
  std::uint32_t entries_, page_size_;
  std::vector<std::uint32_t> of_slot_;                            // slot -> its entry, or none
  std::vector<std::uint32_t> holders_;                            // the slots that took an entry since reset()
  std::vector<std::uint32_t> free_;                               // entries given back since reset()
  std::unordered_map<std::uint32_t, const std::byte*> borrowed_;  // slot -> the image it borrowed
  std::uint32_t next_ = 0;                                        // entries [0, next_) handed out since reset()
  // Entries [0, ready_) were asked memory for since offer(): never fewer
  // than next_, so they cover every entry used since.
  std::uint32_t ready_ = 0;
};

}  // namespace qs::detail
