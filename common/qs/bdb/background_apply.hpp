// qs/bdb/background_apply.hpp: a thread of its own that writes committed
// transactions' page writes into the page file (page_log.hpp) after their
// commit returned.
//
// A durable commit of the page-file layout is durable once its commit
// record is on the disk; its writes to pages.qs only make the file catch up
// with the log (recovery makes them from the log when they are missing).
// Made on the committing thread they were a third of the commit of a 1%
// update. The environment defers them instead (page_log::defer: every read
// lays them over the file meanwhile) and kicks this thread, which runs the
// environment's work (apply the deferred writes) while the program goes on.
// The next commit waits for it first (wait), so that one commit's writes at
// most are in flight, and a checkpoint or the close writes what still waits.
//
// Invariants: `work` runs on the thread only, once per kick (kicks while it
// runs make one more run); wait() returns once no run is pending or
// running; the destructor runs a pending kick, then joins.
//
// Thread-safety: kick() and wait() from any thread; `work` must not throw
// (it reports failures itself) and must be safe beside its kickers.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace qs::detail {

class background_apply {
 public:
  explicit background_apply(std::function<void()> work);
  ~background_apply();
  background_apply(const background_apply&) = delete;
  background_apply& operator=(const background_apply&) = delete;

  // Runs `work` soon, on the thread (started at the first kick).
  void kick();
  // Waits until no run is pending or running.
  void wait();

 private:
  void run();

  std::function<void()> work_;
  std::mutex mutex_;
  std::condition_variable wake_;  // the thread waits for a kick
  std::condition_variable idle_;  // wait() waits for the thread
  bool kicked_ = false;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace qs::detail
