// store/reader_threads.hpp: helper threads that run a batch of independent
// reads beside the calling thread, so that a prefetch has several store
// reads in flight (an embedded store's reads are a Berkeley DB lookup and a
// copy each, mostly CPU: they go as fast as there are cores).
//
// run(n, job) calls job(0) .. job(n-1), each once, on the calling thread
// and on the helpers, and returns when all have returned. The calling
// thread takes jobs too, so a batch never waits for a helper to wake up
// before it starts, and a helper that wakes after the batch is done finds
// nothing left. The first exception a job throws is rethrown by run() on
// the calling thread, after every job has finished (the others run).
//
// The helpers are started by the constructor with every signal blocked
// (faults in the program's threads are never delivered to them), and
// joined by the destructor. They never touch persistent memory: a job
// writes only into buffers its caller handed out.
//
// Thread-safety: run() is called by one thread at a time (the store's
// caller, under the runtime's lock); jobs run concurrently and must be
// safe to run so.
#pragma once

#include "util/thread_annotations.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace qs::detail {

class reader_threads {
 public:
  // `helpers` threads beside the caller's (0: run() is a loop on the caller).
  explicit reader_threads(unsigned helpers);
  ~reader_threads();
  reader_threads(const reader_threads&) = delete;
  reader_threads& operator=(const reader_threads&) = delete;

  void run(std::size_t n, const std::function<void(std::size_t)>& job) QS_EXCLUDES(m_);
  unsigned helpers() const { return static_cast<unsigned>(threads_.size()); }

 private:
  void helper() QS_EXCLUDES(m_);
  // Tells the helpers to end, and joins them.
  void stop() QS_EXCLUDES(m_);
  // Takes jobs of the current batch until none is left.
  void work() QS_EXCLUDES(m_);

  mutex m_;
  std::condition_variable_any wake_;  // a batch began, or stop
  std::condition_variable_any done_;  // a batch's last job finished
  std::uint64_t batch_ QS_GUARDED_BY(m_) = 0;
  bool stop_ QS_GUARDED_BY(m_) = false;
  const std::function<void(std::size_t)>* job_ QS_GUARDED_BY(m_) = nullptr;
  std::size_t next_ QS_GUARDED_BY(m_) = 0;      // the next job to take
  std::size_t n_ QS_GUARDED_BY(m_) = 0;         // jobs in the batch
  std::size_t finished_ QS_GUARDED_BY(m_) = 0;  // jobs returned
  std::exception_ptr failure_ QS_GUARDED_BY(m_);
  std::vector<std::thread> threads_;
};

}  // namespace qs::detail
