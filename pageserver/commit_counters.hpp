// commit_counters.hpp: what the server's commits came to, counted across
// every session: commits (and how many wrote nothing), commits refused for a
// conflict, commits run again after Berkeley DB chose them as deadlock
// victims (their locks are taken in one order, so these come only from
// B-tree page locks), aborts asked for by clients, and the write
// transactions begun in bulk (optimistic_transaction.hpp). line() renders them
// for the log: on SIGUSR1 and when the server stops.
//
// Thread-safety: every member may be called from any thread at once
// (relaxed atomic counters; a line may mix counts from either side of a
// commit that is under way).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace qs::server {

struct commit_counters {
  std::atomic<std::uint64_t> commits{0};
  std::atomic<std::uint64_t> read_only{0};  // of the commits
  std::atomic<std::uint64_t> conflicts{0};
  std::atomic<std::uint64_t> retried{0};
  std::atomic<std::uint64_t> aborts{0};
  std::atomic<std::uint64_t> bulk{0};  // write transactions begun in bulk

  void add(std::atomic<std::uint64_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
  std::string line() const;
};

}  // namespace qs::server
