// Unit tests of the prefetch's helper threads (store/reader_threads.hpp):
// every job runs once, on the caller and the helpers, and a job's exception
// reaches the caller after the batch.
#include <catch2/catch.hpp>

#include "store/reader_threads.hpp"

#include <qs/error.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using qs::detail::reader_threads;

TEST_CASE("reader threads run every job of a batch once, batch after batch", "[unit]") {
  for (unsigned helpers : {0u, 1u, 3u}) {
    INFO(helpers << " helpers");
    reader_threads r(helpers);
    CHECK(r.helpers() == helpers);
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}}) {
      std::vector<std::atomic<int>> runs(n);
      std::vector<std::thread::id> by(n);
      r.run(n, [&](std::size_t i) {
        runs[i].fetch_add(1);
        by[i] = std::this_thread::get_id();
        // Long enough that a helper wakes while the caller still works.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      });
      for (std::size_t i = 0; i < n; ++i) CHECK(runs[i].load() == 1);
      if (helpers == 0)
        for (std::size_t i = 0; i < n; ++i) CHECK(by[i] == std::this_thread::get_id());
    }
  }
}

TEST_CASE("a job's exception reaches the caller once every job of its batch has returned", "[unit]") {
  reader_threads r(2);
  std::atomic<int> finished{0};
  CHECK_THROWS_WITH(r.run(16,
                          [&](std::size_t i) {
                            std::this_thread::sleep_for(std::chrono::microseconds(100));
                            finished.fetch_add(1);
                            if (i == 3) throw qs::store_error("page 3 could not be read");
                          }),
                    "page 3 could not be read");
  CHECK(finished.load() == 16);
  // The threads go on serving batches.
  std::atomic<int> again{0};
  r.run(5, [&](std::size_t) { again.fetch_add(1); });
  CHECK(again.load() == 5);
}

TEST_CASE("a task runs on a helper beside the caller until it is told to stop", "[unit]") {
  SECTION("with no helper it is not run") {
    reader_threads r(0);
    bool ran = false;
    CHECK_FALSE(r.start_task([&](const std::atomic<bool>&) { ran = true; }));
    r.stop_task();
    CHECK_FALSE(ran);
  }
  SECTION("it runs on another thread, and stop_task waits for it to see the flag and return") {
    reader_threads r(1);
    std::atomic<bool> started{false}, returned{false};
    std::thread::id on;
    REQUIRE(r.start_task([&](const std::atomic<bool>& stop) {
      on = std::this_thread::get_id();
      started = true;
      while (!stop.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // returns well after the flag
      returned = true;
    }));
    while (!started.load()) std::this_thread::yield();
    // A second task while one runs is refused.
    CHECK_FALSE(r.start_task([](const std::atomic<bool>&) {}));
    // Batches go on beside it, on the caller.
    std::atomic<int> jobs{0};
    r.run(8, [&](std::size_t) { jobs.fetch_add(1); });
    CHECK(jobs.load() == 8);
    CHECK_FALSE(returned.load());
    r.stop_task();
    CHECK(returned.load());
    CHECK(on != std::this_thread::get_id());
    // The helper is free again: the next task runs, and what it throws is dropped.
    std::atomic<bool> second{false};
    REQUIRE(r.start_task([&](const std::atomic<bool>&) {
      second = true;
      throw std::runtime_error("a task's failure is nobody's");
    }));
    while (!second.load()) std::this_thread::yield();
    r.stop_task();
    r.run(3, [&](std::size_t) { jobs.fetch_add(1); });
    CHECK(jobs.load() == 11);
  }
  SECTION("once stop_task returns, the task has returned or never begins") {
    reader_threads r(1);
    std::atomic<int> running{0}, began{0};
    for (int round = 0; round < 500; ++round) {
      REQUIRE(r.start_task([&](const std::atomic<bool>&) {
        running.fetch_add(1);
        began.fetch_add(1);
        running.fetch_sub(1);
      }));
      r.stop_task();  // often before the helper has woken
      CHECK(running.load() == 0);
    }
    const int after = began.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(began.load() == after);
  }
}
