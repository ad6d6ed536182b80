#include "os/biased_mutex.hpp"

#include "os/process_barrier.hpp"

namespace qs::detail {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif
#else
constexpr bool sanitized = false;
#endif

}  // namespace

bool biased_mutex::offered() noexcept { return !sanitized && process_barrier_available(); }

biased_mutex::biased_mutex() {
  if (!offered()) owner_.store(unbiased, std::memory_order_relaxed);
}

void biased_mutex::lock_slow(std::uintptr_t self) {
  m_.lock();
  const std::uintptr_t owner = owner_.load(std::memory_order_relaxed);
  if (owner == unbiased) return;
  if (owner != 0 && owner != self) {
    // The owner may be inside, or about to enter, by the fast path: after
    // the barrier it is either seen inside or sees the bias gone, and its
    // way out sees waiting_ and wakes this thread.
    owner_.store(0, std::memory_order_relaxed);
    waiting_.store(1, std::memory_order_relaxed);
    process_barrier();
    for (std::uint32_t v; (v = inside_.load(std::memory_order_acquire)) != 0;)
      inside_.wait(v, std::memory_order_acquire);
    waiting_.store(0, std::memory_order_relaxed);
    ++revocations_;
  }
  // The thread that holds the lock now takes the bias: its next lock is
  // the fast path, unless another thread revokes it first.
  owner_.store(revocations_ >= max_revocations ? unbiased : self, std::memory_order_relaxed);
}

}  // namespace qs::detail
