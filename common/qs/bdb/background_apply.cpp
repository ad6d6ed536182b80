// The thread that writes committed page writes into the page file after
// their commit returned (see background_apply.hpp).
#include <qs/bdb/background_apply.hpp>

#include <utility>

namespace qs::detail {

background_apply::background_apply(std::function<void()> work, std::function<void()> after)
    : work_(std::move(work)), after_(std::move(after)) {}

background_apply::~background_apply() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void background_apply::kick() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    kicked_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  wake_.notify_one();
}

void background_apply::wait() {
  std::unique_lock<std::mutex> g(mutex_);
  idle_.wait(g, [&] { return !kicked_ && !running_; });
}

void background_apply::wait_applied() {
  std::unique_lock<std::mutex> g(mutex_);
  idle_.wait(g, [&] { return !kicked_ && !applying_; });
}

void background_apply::run() {
  std::unique_lock<std::mutex> g(mutex_);
  for (;;) {
    wake_.wait(g, [&] { return kicked_ || stop_; });
    if (!kicked_) return;  // stopping, nothing pending
    kicked_ = false;
    running_ = applying_ = true;
    g.unlock();
    work_();
    g.lock();
    applying_ = false;
    if (after_) {
      idle_.notify_all();
      g.unlock();
      after_();
      g.lock();
    }
    running_ = false;
    idle_.notify_all();
  }
}

}  // namespace qs::detail
