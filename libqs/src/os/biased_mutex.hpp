// os/biased_mutex.hpp: a mutex that the thread that took it last takes
// again with no atomic instruction, for a lock that one thread takes
// millions of times (a database's runtime lock: every `new (db) T`, every
// fault).
//
// An uncontended std::mutex costs an atomic read-modify-write, and on
// x86-64 that waits for every store before it to reach the cache: in a
// program that builds a large graph (a store that misses the cache per
// object), the lock taken by each allocation made the whole build wait on
// memory, about a sixth of `peer-qs build`. Here the thread the lock is
// biased towards (its owner) enters by a plain store of `inside_` and a
// plain load of `owner_`, with only a compiler barrier between them.
// Another thread that wants the lock takes the mutex behind it, revokes
// the bias (owner_ cleared), runs a barrier on every thread of the process
// (os/process_barrier.hpp), which makes the owner's store visible or its
// next load see the revocation, and waits until the owner is out. The
// bias then goes to the thread that revoked it. After
// max_revocations revocations the bias is given up for good and every lock
// is the mutex's (threads that take turns all the time pay the mutex, not
// a barrier each).
//
// Invariants: at most one thread is inside (through the fast path or the
// mutex); owner_ changes only under m_, to a thread's token or to 0, or to
// `unbiased` for good; `inside_` is written by the owner only, and is 1
// exactly while the owner is inside through the fast path; a revoker waits
// for it with `waiting_` set, which the owner's unlock sees (the barrier
// orders the two) and answers with a wake-up. The fast path relies on
// x86-64's ordering (loads are not reordered with older loads, stores not
// with older stores): qs builds for x86-64 Linux only. Under ThreadSanitizer,
// which cannot see the barrier, the bias is never taken.
//
// Thread-safety: lock() and unlock() may be called from any thread, as a
// std::mutex's; not recursive.
#pragma once

#include "util/thread_annotations.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace qs::detail {

class QS_CAPABILITY("mutex") biased_mutex {
 public:
  biased_mutex();
  biased_mutex(const biased_mutex&) = delete;
  biased_mutex& operator=(const biased_mutex&) = delete;

  void lock() QS_ACQUIRE() {
    const std::uintptr_t self = thread_token();
    if (owner_.load(std::memory_order_relaxed) == self) {
      inside_.store(1, std::memory_order_relaxed);
      // The store above and the load below are ordered towards a revoker
      // by its process-wide barrier; only the compiler must keep them so.
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (owner_.load(std::memory_order_relaxed) == self) {
        fast_ = true;
        return;
      }
      leave_fast();
    }
    lock_slow(self);
  }
  void unlock() QS_RELEASE() {
    if (fast_) {
      fast_ = false;
      leave_fast();
      return;
    }
    m_.unlock();
  }

  // For the negative capability idiom (QS_REQUIRES(!m)).
  const biased_mutex& operator!() const { return *this; }
  // Whether the calling thread's next lock() takes the fast path, unless
  // another thread locks first.
  bool biased_to_caller() const noexcept { return owner_.load(std::memory_order_relaxed) == thread_token(); }

  // Whether locks in this process take a bias at all (not under
  // ThreadSanitizer, nor where the kernel has no process-wide barrier).
  static bool offered() noexcept;
  // Revocations after which the bias is given up.
  static constexpr std::uint32_t max_revocations = 64;

 private:
  static constexpr std::uintptr_t unbiased = 1;  // no thread's token (tokens are addresses)
  static std::uintptr_t thread_token() noexcept {
    static thread_local char token;
    return reinterpret_cast<std::uintptr_t>(&token);
  }
  void leave_fast() noexcept {
    inside_.store(0, std::memory_order_release);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (waiting_.load(std::memory_order_relaxed) != 0) inside_.notify_all();
  }
  void lock_slow(std::uintptr_t self);

  std::atomic<std::uintptr_t> owner_{0};
  std::atomic<std::uint32_t> inside_{0};
  std::atomic<std::uint32_t> waiting_{0};
  bool fast_ = false;              // the holder's: whether it came in by the fast path
  std::uint32_t revocations_ = 0;  // under m_
  std::mutex m_;
};

}  // namespace qs::detail
