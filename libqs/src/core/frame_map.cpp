#include "core/frame_map.hpp"

#include <algorithm>
#include <bit>

namespace qs::detail {
namespace {

constexpr std::uint64_t ones = ~std::uint64_t{0};

// The bits of word w that lie in [start, end).
std::uint64_t mask_of(std::uint64_t w, std::uint64_t start, std::uint64_t end) {
  std::uint64_t lo = std::max(start, w * 64) - w * 64, hi = std::min(end, w * 64 + 64) - w * 64;
  std::uint64_t m = hi == 64 ? ones : (std::uint64_t{1} << hi) - 1;
  return m & (ones << lo);
}

}  // namespace

frame_map::frame_map(std::uint64_t frames)
    : frames_(frames), bits_((frames + 63) / 64, 0), full_((bits_.size() + 63) / 64, 0) {
  // The bits past the last frame are taken for good (never counted).
  if (frames % 64) bits_.back() = ones << (frames % 64);
}

bool frame_map::is_free(std::uint64_t start, std::uint64_t n) const {
  if (n == 0 || start + n > frames_ || start + n < start) return false;
  return next_taken(start, start + n) == start + n;
}

void frame_map::mark(std::uint64_t start, std::uint64_t n, bool taken) {
  const std::uint64_t end = start + n;
  for (std::uint64_t w = start / 64; w * 64 < end; ++w) {
    std::uint64_t m = mask_of(w, start, end);
    if (taken) bits_[w] |= m;
    else bits_[w] &= ~m;
    std::uint64_t bit = std::uint64_t{1} << (w % 64);
    if (bits_[w] == ones) full_[w / 64] |= bit;
    else full_[w / 64] &= ~bit;
  }
}

std::uint64_t frame_map::next_taken(std::uint64_t from, std::uint64_t end) const {
  for (std::uint64_t w = from / 64; w * 64 < end; ++w) {
    std::uint64_t hit = bits_[w] & mask_of(w, from, end);
    if (hit) return w * 64 + static_cast<std::uint64_t>(std::countr_zero(hit));
  }
  return end;
}

std::uint64_t frame_map::next_free(std::uint64_t from, std::uint64_t end) const {
  std::uint64_t w = from / 64;
  while (w * 64 < end) {
    // Whole full words are passed 64 at a time through their summary.
    if (w % 64 == 0 && full_[w / 64] == ones) {
      w += 64;
      continue;
    }
    std::uint64_t hit = ~bits_[w] & mask_of(w, from, end);
    if (hit) return w * 64 + static_cast<std::uint64_t>(std::countr_zero(hit));
    ++w;
  }
  return end;
}

bool frame_map::take(std::uint64_t start, std::uint64_t n) {
  if (!is_free(start, n)) return false;
  mark(start, n, true);
  taken_ += n;
  return true;
}

std::optional<std::uint64_t> frame_map::find(std::uint64_t n, std::uint64_t from, std::uint64_t lo) const {
  if (n == 0 || lo >= frames_ || n > frames_ - lo) return std::nullopt;
  from = std::clamp(from, lo, frames_);
  // First fit from `from`: the free run holding it (from `from` on), the
  // runs after it, then the runs from `lo` up to it (each whole).
  if (from < frames_ && frames_ - from >= n && is_free(from, n)) return from;
  auto scan = [&](std::uint64_t begin, std::uint64_t stop) -> std::optional<std::uint64_t> {
    for (std::uint64_t f = next_free(begin, stop); f < stop;) {
      std::uint64_t run_end = next_taken(f, std::min(frames_, f + n));
      if (run_end - f >= n) return f;
      f = next_free(run_end, stop);
    }
    return std::nullopt;
  };
  if (auto f = scan(from, frames_)) return f;
  return scan(lo, from);
}

void frame_map::give_back(std::uint64_t start, std::uint64_t n) {
  if (n == 0) return;
  mark(start, n, false);
  taken_ -= n;
}

void frame_map::reset() {
  std::fill(bits_.begin(), bits_.end(), 0);
  std::fill(full_.begin(), full_.end(), 0);
  if (frames_ % 64) bits_.back() = ones << (frames_ % 64);
  taken_ = 0;
}

}  // namespace qs::detail
