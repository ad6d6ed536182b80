// The before-images of the pages the open transaction writes (before_images.hpp).
#include "core/before_images.hpp"

#include <algorithm>

namespace qs::detail {

before_images::before_images(std::uint32_t entries, std::uint32_t page_size)
    : memory_(std::size_t{entries} * page_size), entries_(entries), page_size_(page_size) {}

std::byte* before_images::take(std::uint32_t slot, range& ahead) {
  ahead = {};
  if (slot >= of_slot_.size()) of_slot_.resize(std::size_t{slot} + 1, none);
  std::uint32_t& e = of_slot_[slot];
  if (e == none) {
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    } else {
      // next_ < entries_: an entry is held only by a resident page's slot.
      e = next_++;
      if (ready_ < next_) ready_ = next_;  // this one gets its memory as it is written
      if (ready_ - next_ < batch / 2 && ready_ < entries_) {
        const std::uint32_t n = std::min(batch, entries_ - ready_);
        ahead = {std::size_t{ready_} * page_size_, std::size_t{n} * page_size_};
        ready_ += n;
      }
    }
    holders_.push_back(slot);
  }
  return at(slot);
}

void before_images::give_back(std::uint32_t slot) {
  if (!borrowed_.empty()) borrowed_.erase(slot);
  if (!has(slot)) return;
  free_.push_back(of_slot_[slot]);
  of_slot_[slot] = none;
}

void before_images::reset() {
  for (std::uint32_t slot : holders_) of_slot_[slot] = none;
  holders_.clear();
  free_.clear();
  borrowed_.clear();
  next_ = 0;
}

void before_images::offer() {
  memory_.offer(std::size_t{ready_} * page_size_);
  ready_ = 0;
}

}  // namespace qs::detail
