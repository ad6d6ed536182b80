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
// What may follow the writes (`after`: the checkpoint the commit's log
// makes due, which syncs the file) runs on the thread too, once the writes
// are in the file: a read waiting for a page's writes (wait_applied) does
// not wait for it.
//
// Invariants: `work`, then `after`, run on the thread only, once per kick
// (kicks while they run make one more run); wait() returns once no run is
// pending or running; wait_applied() once no run is pending and none is in
// its `work`; the destructor runs a pending kick, then joins.
//
// Thread-safety: kick(), wait() and wait_applied() from any thread; `work`
// and `after` must not throw (they report failures themselves) and must be
// safe beside their kickers.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace qs::detail {

class background_apply {
 public:
  explicit background_apply(std::function<void()> work, std::function<void()> after = {});
  ~background_apply();
  background_apply(const background_apply&) = delete;
  background_apply& operator=(const background_apply&) = delete;

  // Runs `work` soon, on the thread (started at the first kick).
  void kick();
  // Waits until no run is pending or running.
  void wait();
  // Waits until no run is pending or in its `work`.
  void wait_applied();

 private:
  void run();

  std::function<void()> work_;
  std::function<void()> after_;
  std::mutex mutex_;
  std::condition_variable wake_;  // the thread waits for a kick
  std::condition_variable idle_;  // wait() and wait_applied() wait for the thread
  bool kicked_ = false;
  bool running_ = false;   // in `work` or `after`
  bool applying_ = false;  // in `work`
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace qs::detail
