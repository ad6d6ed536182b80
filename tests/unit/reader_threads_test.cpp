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
