// read_counters.hpp: the pages the server sent its clients, counted across
// every session: those a fault asked for (read_page: records sent, and
// revalidations answered "unchanged"), and those a prefetch asked for
// (read_pages: records sent, the answers, and the parts they came in).
// line() renders them for the log: on SIGUSR1 and when the server stops.
//
// Thread-safety: every member may be called from any thread at once
// (relaxed atomic counters).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace qs::server {

struct read_counters {
  std::atomic<std::uint64_t> pages{0};       // read_page: records sent
  std::atomic<std::uint64_t> unchanged{0};   // read_page: revalidated, nothing sent
  std::atomic<std::uint64_t> prefetched{0};  // read_pages: records sent
  std::atomic<std::uint64_t> answers{0};     // read_pages answers
  std::atomic<std::uint64_t> parts{0};       // ... and the messages they took

  void add(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept { c.fetch_add(n, std::memory_order_relaxed); }
  std::string line() const;
};

}  // namespace qs::server
