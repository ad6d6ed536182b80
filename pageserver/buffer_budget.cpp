// The shared budget of message-buffer bytes (buffer_budget.hpp).
#include "buffer_budget.hpp"

#include <cstdio>

namespace qs::server {
namespace {

std::string mib(std::uint64_t n) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(n) / (1u << 20));
  return b;
}

}  // namespace

std::uint64_t buffer_budget::in_use() const {
  std::lock_guard<std::mutex> g(mutex_);
  return in_use_;
}

bool buffer_budget::take(std::uint64_t n, std::chrono::milliseconds patience) {
  std::unique_lock<std::mutex> g(mutex_);
  if (n > limit_) return false;
  return freed_.wait_for(g, patience, [&] { return in_use_ + n <= limit_; }) && (in_use_ += n, true);
}

void buffer_budget::give_back(std::uint64_t n) {
  if (n == 0) return;
  {
    std::lock_guard<std::mutex> g(mutex_);
    in_use_ -= n;
  }
  freed_.notify_all();
}

bool buffer_budget::grant::add(std::uint64_t n, std::chrono::milliseconds patience, std::string& refusal) {
  std::uint64_t used = used_ + n;
  std::uint64_t need = used > allowance ? used - allowance : 0;
  if (need > taken_) {
    // From the budget in steps of 1 MiB, so that a growing answer does not
    // take the lock for each entry.
    std::uint64_t more = (need - taken_ + (1u << 20) - 1) & ~std::uint64_t{(1u << 20) - 1};
    if (taken_ + more > budget_.limit_) more = need - taken_;
    if (!budget_.take(more, patience)) {
      std::string option = "qs-pageserver --buffer-mb " + std::to_string(budget_.limit_ >> 20);
      std::string what = "this request needs " + mib(used) + " of message buffers, " + mib(need) +
                         " of them from the server's shared buffers";
      if (need > budget_.limit_) refusal = what + ", which hold " + mib(budget_.limit_) + " in all (" + option + ")";
      else refusal = what + " (" + option + "), which had no room for " + std::to_string(patience.count()) + " ms";
      return false;
    }
    taken_ += more;
  }
  used_ = used;
  return true;
}

void buffer_budget::grant::release() {
  budget_.give_back(taken_);
  taken_ = 0;
  used_ = 0;
}

}  // namespace qs::server
