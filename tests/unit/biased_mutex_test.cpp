// Unit tests of the runtime's lock (os/biased_mutex.hpp): one thread
// inside at a time whether it came in by the fast path or through the
// mutex, while the bias moves from thread to thread, while the owner is
// inside when another thread asks, and once the bias is given up; and in a
// child made by fork().
#include <catch2/catch.hpp>

#include "os/biased_mutex.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using qs::detail::biased_mutex;
using namespace std::chrono_literals;

namespace {

// What threads do inside the lock: count, and notice anyone else inside.
struct guarded {
  biased_mutex m;
  long counter = 0;  // plain: only the lock orders it
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<long> spins{0};

  void enter_many(int times) {
    for (int i = 0; i < times; ++i) {
      m.lock();
      if (inside.fetch_add(1) != 0) ++overlaps;
      // Read, wait a moment, write: another thread inside would lose a count.
      const long seen = counter;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      for (int spin = 0; spin < 50; ++spin) spins.fetch_add(1, std::memory_order_relaxed);
      counter = seen + 1;
      inside.fetch_sub(1);
      m.unlock();
    }
  }
};

}  // namespace

TEST_CASE("biased_mutex: the last thread to lock takes it again by the fast path; another thread takes the bias") {
  biased_mutex m;
  REQUIRE(biased_mutex::offered());  // not under ThreadSanitizer
  m.lock();
  m.unlock();
  CHECK(m.biased_to_caller());
  bool other_biased = false;
  std::thread([&] {
    m.lock();
    m.unlock();
    other_biased = m.biased_to_caller();
  }).join();
  CHECK(other_biased);
  CHECK_FALSE(m.biased_to_caller());
}

TEST_CASE("biased_mutex: one thread inside at a time while the bias moves, and after it is given up") {
  guarded g;
  // Bursts of locks by two threads in turn: each burst but the first
  // revokes the other's bias, up to the limit, then every lock is the
  // mutex's.
  constexpr int bursts = 2 * static_cast<int>(biased_mutex::max_revocations) + 20, burst = 2000;
  std::atomic<int> turn{0};
  auto run = [&](int me) {
    for (int b = 0; b < bursts; ++b) {
      while (turn.load() % 2 != me) std::this_thread::yield();
      // Half the burst alone, half while the other thread starts its own.
      g.enter_many(burst / 2);
      turn.fetch_add(1);
      g.enter_many(burst / 2);
    }
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  CHECK(g.overlaps.load() == 0);
  CHECK(g.counter == 2L * bursts * burst);
  // Given up: neither thread is the owner any more.
  g.m.lock();
  g.m.unlock();
  CHECK_FALSE(g.m.biased_to_caller());
}

TEST_CASE("biased_mutex: a thread that asks while the owner is inside waits until it leaves") {
  biased_mutex m;
  m.lock();
  m.unlock();
  REQUIRE(m.biased_to_caller() == biased_mutex::offered());
  m.lock();  // the fast path
  std::atomic<bool> owner_done{false}, other_in{false};
  bool saw_owner_done = false;
  std::thread other([&] {
    m.lock();
    saw_owner_done = owner_done.load();
    other_in = true;
    m.unlock();
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(other_in.load());
  owner_done = true;
  m.unlock();
  other.join();
  CHECK(saw_owner_done);
  CHECK(other_in.load());
}

TEST_CASE("biased_mutex: a child made by fork() uses a lock of its own from two threads") {
  guarded parent;
  parent.enter_many(10);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    guarded g;
    std::thread t([&] { g.enter_many(20000); });
    g.enter_many(20000);
    t.join();
    ::_exit(g.overlaps.load() == 0 && g.counter == 40000 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
