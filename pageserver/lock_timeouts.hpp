// lock_timeouts.hpp: Berkeley DB's lock and transaction timeouts on the
// server's environment, and the thread that enforces them.
//
// A lock request that waits longer than the lock timeout, or any request of a
// transaction older than the transaction timeout that has to wait, is
// refused: the session gets qs::conflict (bdb_env reports DB_LOCK_NOTGRANTED
// so, with the limits and the options that change them in its text), fails
// the transaction, and the client's db.run retries it. A
// transaction that holds locks without waiting is never refused (the idle
// timeout, server.hpp, is for those).
//
// Berkeley DB looks at the timeouts only when a request starts to wait and
// when its deadlock detector runs, so a thread here runs the detector in its
// expire-only mode every `period` (a quarter of the shorter timeout, within
// 50 ms .. 1 s): a request is refused at most that long after its time.
//
// Thread-safety: constructed and destroyed by one thread; the enforcing
// thread only calls bdb_env::expire_waiters(), which is thread-safe.
#pragma once

#include <qs/bdb/bdb_env.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace qs::server {

class lock_timeouts {
 public:
  // Zero: no such timeout. With both zero, no thread runs.
  lock_timeouts(detail::bdb_env& env, std::chrono::milliseconds lock, std::chrono::milliseconds txn);
  ~lock_timeouts();
  lock_timeouts(const lock_timeouts&) = delete;
  lock_timeouts& operator=(const lock_timeouts&) = delete;

 private:
  void run();

  detail::bdb_env& env_;
  std::chrono::milliseconds period_{};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace qs::server
