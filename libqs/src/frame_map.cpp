#include "frame_map.hpp"

#include <iterator>

namespace qs::detail {

bool frame_map::is_free(std::uint64_t start, std::uint64_t n) const {
  if (n == 0 || start + n > frames_ || start + n < start) return false;
  auto it = free_.upper_bound(start);
  if (it == free_.begin()) return false;
  --it;
  return it->first <= start && start + n <= it->first + it->second;
}

bool frame_map::take(std::uint64_t start, std::uint64_t n) {
  if (!is_free(start, n)) return false;
  auto it = std::prev(free_.upper_bound(start));
  std::uint64_t run_start = it->first, run_len = it->second;
  free_.erase(it);
  if (start > run_start) free_[run_start] = start - run_start;
  std::uint64_t end = start + n, run_end = run_start + run_len;
  if (end < run_end) free_[end] = run_end - end;
  taken_ += n;
  return true;
}

std::optional<std::uint64_t> frame_map::find(std::uint64_t n, std::uint64_t from) const {
  if (n == 0) return std::nullopt;
  // First fit from `from`: the run holding it, the runs after it, then the
  // runs before it.
  auto it = free_.upper_bound(from);
  if (it != free_.begin()) {
    auto holder = std::prev(it);
    std::uint64_t end = holder->first + holder->second;
    if (from < end && end - from >= n) return from;
  }
  for (auto i = it; i != free_.end(); ++i)
    if (i->second >= n) return i->first;
  for (auto i = free_.begin(); i != it; ++i)
    if (i->second >= n) return i->first;
  return std::nullopt;
}

void frame_map::give_back(std::uint64_t start, std::uint64_t n) {
  if (n == 0) return;
  std::uint64_t end = start + n;
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == end) {
    end += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      free_.erase(prev);
    }
  }
  free_[start] = end - start;
  taken_ -= n;
}

void frame_map::reset() {
  free_.clear();
  free_[0] = frames_;
  taken_ = 0;
}

}  // namespace qs::detail
