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
// start_task(task) hands one helper a task that runs beside the caller
// until it returns or stop_task() tells it to (through the flag it is
// given): work ahead of need, such as bringing into a cache what the
// caller is about to read. Nobody waits for a task but stop_task(), which
// waits until it has returned (or takes it back, when no helper has taken
// it yet); what it throws is dropped. While it runs, its helper takes no
// jobs of run()'s batches (the caller and the other helpers do).
//
// The helpers are started by the constructor with every signal blocked
// (faults in the program's threads are never delivered to them), and
// joined by the destructor. They never touch persistent memory: a job
// writes only into buffers its caller handed out.
//
// Thread-safety: run(), start_task() and stop_task() are called by one
// thread at a time (the store's caller, under the runtime's lock); jobs,
// and a task beside them, run concurrently and must be safe to run so.
#pragma once

#include "util/thread_annotations.hpp"

#include <atomic>
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

  using task = std::function<void(const std::atomic<bool>& stop)>;
  // Hands `t` to a helper; false (and t is not run) when there is no
  // helper, or a task was started and not stopped since.
  bool start_task(task t) QS_EXCLUDES(m_);
  // Tells the task to stop, and returns once it has returned (or was taken
  // back before a helper took it). Nothing when no task was started.
  void stop_task() QS_EXCLUDES(m_);

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
  // The task: started and not yet taken by a helper; running on one.
  task task_ QS_GUARDED_BY(m_);
  bool task_pending_ QS_GUARDED_BY(m_) = false;
  bool task_running_ QS_GUARDED_BY(m_) = false;
  std::atomic<bool> task_stop_{false};
  std::condition_variable_any task_done_;
  std::vector<std::thread> threads_;
};

}  // namespace qs::detail
