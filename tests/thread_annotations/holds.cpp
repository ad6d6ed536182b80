// Locking that clang's thread-safety analysis must accept: every use of
// libqs/src/util/thread_annotations.hpp the runtime is expected to make, correct.
// tests/thread_annotations/check.cmake compiles it with -Wthread-safety
// -Werror (clang) and with g++, where the annotations are empty.
#include "util/thread_annotations.hpp"

#include <condition_variable>

namespace {

class counter {
 public:
  int next() QS_EXCLUDES(mutex_) {
    qs::detail::lock_guard g(mutex_);
    return bump();
  }

  void wait_for(int value) QS_EXCLUDES(mutex_) {
    qs::detail::unique_lock l(mutex_);
    changed_.wait(l, [&]() QS_NO_THREAD_SAFETY_ANALYSIS { return value_ >= value; });
    l.unlock();
    l.lock();
    ++value_;
  }

  // Released before the end of the scope: the destructor must not release again.
  int read_then_release() QS_EXCLUDES(mutex_) {
    qs::detail::unique_lock l(mutex_);
    int v = value_;
    l.unlock();
    return v;
  }

  bool try_next() QS_EXCLUDES(mutex_) {
    if (!mutex_.try_lock()) return false;
    bump();
    mutex_.unlock();
    return true;
  }

  qs::detail::mutex& lock_of() QS_RETURN_CAPABILITY(mutex_) { return mutex_; }

 private:
  int bump() QS_REQUIRES(mutex_) {
    changed_.notify_all();
    if (cell_ != nullptr) *cell_ = value_;
    return value_++;
  }

  qs::detail::mutex mutex_;
  int value_ QS_GUARDED_BY(mutex_) = 0;
  int* cell_ QS_PT_GUARDED_BY(mutex_) = nullptr;
  std::condition_variable_any changed_;
};

}  // namespace

int main() {
  counter c;
  c.next();
  c.try_next();
  c.read_then_release();
  return 0;
}
