// Berkeley DB lock and transaction timeouts, enforced (lock_timeouts.hpp).
#include "lock_timeouts.hpp"

#include "log.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace qs::server {
namespace {

std::uint32_t microseconds(std::chrono::milliseconds t) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t).count();
  return static_cast<std::uint32_t>(std::clamp<decltype(us)>(us, 0, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

lock_timeouts::lock_timeouts(detail::bdb_env& env, std::chrono::milliseconds lock, std::chrono::milliseconds txn)
    : env_(env) {
  env_.set_timeouts(microseconds(lock), microseconds(txn), "qs-pageserver --lock-timeout, --txn-timeout");
  if (lock.count() <= 0 && txn.count() <= 0) return;
  std::chrono::milliseconds shortest = lock.count() <= 0 ? txn : txn.count() <= 0 ? lock : std::min(lock, txn);
  period_ = std::clamp(shortest / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  thread_ = std::thread([this] { run(); });
}

lock_timeouts::~lock_timeouts() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void lock_timeouts::run() {
  std::unique_lock<std::mutex> g(mutex_);
  while (!wake_.wait_for(g, period_, [this] { return stopping_; })) {
    try {
      env_.expire_waiters();
    } catch (const std::exception& e) {
      log_line(0, std::string("error: ") + e.what());
    }
  }
}

}  // namespace qs::server
