// util/signal_free_thread.hpp: starting a helper thread that no signal is
// delivered to.
//
// qs's helper threads (a prefetch's store reads, frames populated ahead of
// new pages) must never take the program's faults or signals: a thread is
// started with every signal blocked, which it inherits, and the starting
// thread's mask is put back whether or not the start throws.
//
// Thread-safety: any thread may call it; it changes only the calling
// thread's mask, and puts it back before it returns.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace qs::detail {

template <class F>
std::thread start_signal_free_thread(F&& body) {
  sigset_t all, was;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &was);
  try {
    std::thread t(std::forward<F>(body));
    pthread_sigmask(SIG_SETMASK, &was, nullptr);
    return t;
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &was, nullptr);
    throw;
  }
}

}  // namespace qs::detail
