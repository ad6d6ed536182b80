#include "core/buffer_pool.hpp"

#include "core/page_table.hpp"

namespace qs::detail {

buffer_pool::buffer_pool(std::uint32_t slots, std::uint32_t page_size) : slots_(slots), before_(slots, page_size) {}

bool buffer_pool::take_free(page_desc* d, std::uint32_t& slot) {
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else if (owner_.size() < slots_) {
    slot = static_cast<std::uint32_t>(owner_.size());
    owner_.push_back(nullptr);
  } else {
    return false;
  }
  owner_[slot] = d;
  return true;
}

page_desc* buffer_pool::victim() {
  // Two sweeps clear every reference bit and pass over every dirty page
  // once; a third finds nothing only when every page is pinned.
  if (owner_.empty()) return nullptr;
  for (std::uint64_t steps = 0; steps < 3ull * owner_.size(); ++steps) {
    page_desc* d = owner_[hand_];
    hand_ = static_cast<std::uint32_t>((hand_ + 1) % owner_.size());
    if (!d || d->pinned()) continue;
    if (d->referenced) {
      d->referenced = false;
      d->spared = false;  // used again since it was passed over
      continue;
    }
    // A dirty page costs a write to evict: it gets one more turn.
    if (d->state() == page_state::writable && !d->spared) {
      d->spared = true;
      continue;
    }
    d->spared = false;
    return d;
  }
  return nullptr;
}

void buffer_pool::release(std::uint32_t slot) {
  owner_[slot] = nullptr;
  before_.give_back(slot);
  free_.push_back(slot);
}

}  // namespace qs::detail
