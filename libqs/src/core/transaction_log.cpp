// The transaction log: the lists of what the open transaction touched.
#include "core/transaction_log.hpp"

#include <algorithm>
#include <cstring>

namespace qs::detail {

void transaction_log::add_written(page_desc* d) {
  if (d->written_) return;
  d->written_ = true;
  d->written_pos_ = written_.size();
  written_.push_back(d);
}

void transaction_log::remove_written(page_desc* d) {
  if (!d->written_) return;
  page_desc* last = written_.back();
  written_[d->written_pos_] = last;
  last->written_pos_ = d->written_pos_;
  written_.pop_back();
  d->written_ = false;
}

void transaction_log::add_relocated(page_desc* d) {
  if (d->relocate_pending_) return;
  d->relocate_pending_ = true;
  relocated_.push_back(d);
}

void transaction_log::pin(page_desc* d) {
  if (d->pinned_) return;
  d->pinned_ = true;
  pinned_.push_back(d);
}

bool transaction_log::is_saved(const page_desc* d, std::uint32_t offset) const {
  std::uint32_t k = offset / 8;
  return k / 64 < d->saved_at_.size() && (d->saved_at_[k / 64] >> (k % 64) & 1);
}

void transaction_log::save(page_desc* d, const std::byte* image, std::uint32_t offset, std::uint32_t size,
                           std::uint32_t page_size) {
  std::size_t at = arena_.size();
  arena_.insert(arena_.end(), image + offset, image + offset + size);
  d->saved_.push_back({offset, size, at});
  if (d->saved_at_.empty()) d->saved_at_.assign(page_size / 8 / 64 + 1, 0);
  std::uint32_t k = offset / 8;
  d->saved_at_[k / 64] |= std::uint64_t{1} << (k % 64);
}

const std::vector<saved_object>& transaction_log::saved(page_desc* d) {
  std::sort(d->saved_.begin(), d->saved_.end(),
            [](const saved_object& a, const saved_object& b) { return a.offset < b.offset; });
  return d->saved_;
}

void transaction_log::put_back_saved(page_desc* d, std::byte* into) {
  for (const saved_object& o : d->saved_) std::memcpy(into + o.offset, arena_.data() + o.at, o.size);
  forget_saved(d);
}

void transaction_log::forget_saved(page_desc* d) {
  if (d->saved_.empty()) return;
  d->saved_.clear();
  std::fill(d->saved_at_.begin(), d->saved_at_.end(), 0);
}

void transaction_log::forget(page_desc* d) {
  remove_written(d);
  forget_saved(d);
  if (d->pinned_) {
    std::erase(pinned_, d);
    d->pinned_ = false;
  }
  logged_.erase(d);
  suspect_.erase(d);
  if (d->relocate_pending_) {
    std::erase(relocated_, d);
    d->relocate_pending_ = false;
  }
}

void transaction_log::reset() {
  open_ = false;
  for (page_desc* d : written_) {
    d->written_ = false;
    forget_saved(d);
  }
  for (page_desc* d : pinned_) d->pinned_ = false;
  for (page_desc* d : relocated_) d->relocate_pending_ = false;
  written_.clear();
  created_.clear();
  logged_.clear();
  suspect_.clear();
  relocated_.clear();
  pinned_.clear();
  arena_.clear();
}

}  // namespace qs::detail
