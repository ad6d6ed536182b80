// Helper threads for batches of store reads (reader_threads.hpp).
#include "store/reader_threads.hpp"

#include "util/signal_free_thread.hpp"

namespace qs::detail {

reader_threads::reader_threads(unsigned helpers) {
  try {
    for (unsigned i = 0; i < helpers; ++i) threads_.push_back(start_signal_free_thread([this] { helper(); }));
  } catch (...) {
    stop();
    throw;
  }
}

reader_threads::~reader_threads() { stop(); }

void reader_threads::stop() {
  {
    lock_guard g(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void reader_threads::run(std::size_t n, const std::function<void(std::size_t)>& job) {
  if (n == 0) return;
  {
    lock_guard g(m_);
    job_ = &job;
    next_ = 0;
    n_ = n;
    finished_ = 0;
    failure_ = nullptr;
    ++batch_;
  }
  if (n > 1) wake_.notify_all();
  work();
  std::exception_ptr failure;
  {
    unique_lock l(m_);
    while (finished_ < n_) done_.wait(l);
    job_ = nullptr;
    failure = failure_;
    failure_ = nullptr;
  }
  if (failure) std::rethrow_exception(failure);
}

void reader_threads::work() {
  for (;;) {
    const std::function<void(std::size_t)>* job;
    std::size_t i;
    {
      lock_guard g(m_);
      if (!job_ || next_ == n_) return;
      job = job_;
      i = next_++;
    }
    std::exception_ptr failure;
    try {
      (*job)(i);
    } catch (...) {
      failure = std::current_exception();
    }
    bool last;
    {
      lock_guard g(m_);
      if (failure && !failure_) failure_ = failure;
      last = ++finished_ == n_;
    }
    if (last) done_.notify_all();
  }
}

void reader_threads::helper() {
  std::uint64_t seen = 0;
  for (;;) {
    task t;
    {
      unique_lock l(m_);
      while (!stop_ && batch_ == seen && !task_pending_) wake_.wait(l);
      if (stop_) return;
      if (task_pending_) {
        t = std::move(task_);
        task_ = nullptr;
        task_pending_ = false;
        task_running_ = true;
      } else {
        seen = batch_;
      }
    }
    if (!t) {
      work();
      continue;
    }
    try {
      t(task_stop_);
    } catch (...) {
      // Work ahead of need: what it did not do is done when needed.
    }
    t = nullptr;  // what it holds goes before stop_task() returns
    {
      lock_guard g(m_);
      task_running_ = false;
    }
    task_done_.notify_all();
  }
}

bool reader_threads::start_task(task t) {
  if (threads_.empty() || !t) return false;
  {
    lock_guard g(m_);
    if (task_pending_ || task_running_) return false;
    task_stop_.store(false, std::memory_order_relaxed);
    task_ = std::move(t);
    task_pending_ = true;
  }
  wake_.notify_one();
  return true;
}

void reader_threads::stop_task() {
  task_stop_.store(true, std::memory_order_relaxed);
  task taken_back;
  {
    unique_lock l(m_);
    if (task_pending_) {
      taken_back = std::move(task_);
      task_ = nullptr;
      task_pending_ = false;
    }
    while (task_running_) task_done_.wait(l);
  }
}

}  // namespace qs::detail
