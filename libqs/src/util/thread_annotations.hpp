// util/thread_annotations.hpp: clang's thread-safety analysis for the runtime and
// the page server, and a mutex it understands.
//
// The macros name what a lock protects and which functions need, take or
// release it; clang (-Wthread-safety, the clang build of scripts/check-builds)
// then checks at compile time that every access to a QS_GUARDED_BY member
// holds its mutex and that every lock is released on every path. Under g++
// they expand to nothing: the annotations cost nothing and change no code.
//
//   class page_numbers {
//     qs::detail::mutex mutex_;
//     std::uint64_t next_ QS_GUARDED_BY(mutex_);
//    public:
//     std::uint64_t take() QS_EXCLUDES(mutex_) {
//       qs::detail::lock_guard g(mutex_);
//       return next_++;
//     }
//   };
//
// std::mutex and std::lock_guard carry no annotations in libstdc++, so the
// analysis cannot see them: code that wants checking uses qs::detail::mutex
// with qs::detail::lock_guard (a scope holds the lock) or
// qs::detail::unique_lock (a scope that may release and retake it; it is
// also the lock std::condition_variable_any waits on).
//
// Invariants: qs::detail::mutex is exactly a std::mutex (same size, same
// behaviour, not recursive); lock_guard holds its mutex from construction to
// destruction; unique_lock holds its mutex exactly when owns_lock() is true,
// and releases it on destruction if it does. QS_NO_THREAD_SAFETY_ANALYSIS is
// for the few functions whose locking the analysis cannot follow, each with
// a comment saying why.
//
// Thread-safety: mutex is safe to use from any number of threads (it is the
// point); a lock_guard or unique_lock object belongs to the thread that made
// it.
#pragma once

#include <mutex>

#if defined(__clang__)
#define QS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define QS_THREAD_ANNOTATION(x)
#endif

// A type whose objects are locks (a mutex).
#define QS_CAPABILITY(name) QS_THREAD_ANNOTATION(capability(name))
// A type whose objects hold a lock for their lifetime (RAII).
#define QS_SCOPED_CAPABILITY QS_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the lock held.
#define QS_GUARDED_BY(lock) QS_THREAD_ANNOTATION(guarded_by(lock))
// A pointer member whose pointee is read or written only with the lock held.
#define QS_PT_GUARDED_BY(lock) QS_THREAD_ANNOTATION(pt_guarded_by(lock))
// Lock ordering: this lock is taken before / after the others.
#define QS_ACQUIRED_BEFORE(...) QS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define QS_ACQUIRED_AFTER(...) QS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// The caller must hold the locks (exclusively / shared).
#define QS_REQUIRES(...) QS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define QS_REQUIRES_SHARED(...) QS_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// The function takes the locks and returns holding them.
#define QS_ACQUIRE(...) QS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define QS_ACQUIRE_SHARED(...) QS_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
// The function releases locks the caller held.
#define QS_RELEASE(...) QS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define QS_RELEASE_SHARED(...) QS_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
// The function takes the locks when it returns `result` (true or false).
#define QS_TRY_ACQUIRE(...) QS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// The caller must not hold the locks (the function takes them itself).
#define QS_EXCLUDES(...) QS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Tells the analysis that the lock is held here (checked at run time elsewhere).
#define QS_ASSERT_CAPABILITY(x) QS_THREAD_ANNOTATION(assert_capability(x))
// The function returns a reference to the lock.
#define QS_RETURN_CAPABILITY(x) QS_THREAD_ANNOTATION(lock_returned(x))
// The function is not checked (say why beside it).
#define QS_NO_THREAD_SAFETY_ANALYSIS QS_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace qs::detail {

// std::mutex, annotated as a lock.
class QS_CAPABILITY("mutex") mutex {
 public:
  mutex() = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() QS_ACQUIRE() { m_.lock(); }
  void unlock() QS_RELEASE() { m_.unlock(); }
  bool try_lock() QS_TRY_ACQUIRE(true) { return m_.try_lock(); }

  // For the negative capability idiom (QS_REQUIRES(!m)): `!m` names "not held".
  const mutex& operator!() const { return *this; }

 private:
  std::mutex m_;
};

// Holds `m` from construction to destruction (std::lock_guard, annotated).
class QS_SCOPED_CAPABILITY lock_guard {
 public:
  explicit lock_guard(mutex& m) QS_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~lock_guard() QS_RELEASE() { m_.unlock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  mutex& m_;
};

// Holds `m` from construction, may release and retake it, releases it at
// destruction if held (std::unique_lock, annotated; not movable). Meets
// BasicLockable, so std::condition_variable_any can wait on it.
class QS_SCOPED_CAPABILITY unique_lock {
 public:
  explicit unique_lock(mutex& m) QS_ACQUIRE(m) : m_(m), owns_(true) { m_.lock(); }
  ~unique_lock() QS_RELEASE() {
    if (owns_) m_.unlock();
  }
  unique_lock(const unique_lock&) = delete;
  unique_lock& operator=(const unique_lock&) = delete;

  void lock() QS_ACQUIRE() {
    m_.lock();
    owns_ = true;
  }
  void unlock() QS_RELEASE() {
    owns_ = false;
    m_.unlock();
  }
  bool owns_lock() const { return owns_; }

 private:
  mutex& m_;
  bool owns_;
};

}  // namespace qs::detail
