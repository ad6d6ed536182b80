// Locking mistakes that clang's thread-safety analysis must report, one per
// function; tests/thread_annotations/check.cmake expects each diagnostic. The
// file is valid C++: g++, for which the annotations are empty, compiles it.
#include "util/thread_annotations.hpp"

namespace {

class account {
 public:
  // A guarded member written without its lock.
  void unlocked_write() { balance_ = 1; }

  // A lock still held when the function returns.
  void leaks_lock() { mutex_.lock(); }

  // A function that requires the lock, called without it.
  void calls_without_lock() { add(1); }

  // A lock released twice.
  void double_unlock() {
    mutex_.lock();
    mutex_.unlock();
    mutex_.unlock();
  }

  // A pointee guarded by the lock, written after the scope released it.
  void pointee_after_scope() {
    { qs::detail::lock_guard g(mutex_); }
    *cell_ = 2;
  }

 private:
  void add(int n) QS_REQUIRES(mutex_) { balance_ += n; }

  qs::detail::mutex mutex_;
  int balance_ QS_GUARDED_BY(mutex_) = 0;
  int* cell_ QS_PT_GUARDED_BY(mutex_) = nullptr;
};

}  // namespace

int main() {
  account a;
  a.unlocked_write();
  a.leaks_lock();
  a.calls_without_lock();
  a.double_unlock();
  a.pointee_after_scope();
  return 0;
}
