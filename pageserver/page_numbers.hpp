// page_numbers.hpp: the server's page and frame counters.
//
// Clients allocate page and frame numbers through the server, so that two
// clients creating objects at the same time never take the same page or
// frame. The counters are the metadata records next_page and next_frame (the
// same ones the embedded store uses); each allocation updates them in a
// Berkeley DB transaction of its own, under a mutex, and commits before it
// answers: a number handed out is never handed out again, even after a crash
// (a client that aborts leaves a hole, which costs nothing but the number).
// On the master of a replication group the numbers are handed out once
// the counters have committed there, acknowledged by the replicas or not:
// should the master fail before its replicas have them, a new master may
// hand the same numbers out again, and of two commits that write the same
// new page the second is refused (its page op says the page had no record).
// The client's transaction, begun on the old master, could not commit
// through the new one anyway.
#pragma once

#include <qs/bdb/bdb_env.hpp>

#include <cstdint>
#include <mutex>

namespace qs::server {

struct page_range {
  std::uint64_t page;
  std::uint64_t frame;
};

class page_numbers {
 public:
  explicit page_numbers(detail::bdb_env& env) : env_(env) {}
  // n contiguous pages on n contiguous frames. Throws qs::error when the
  // database has not been created (no counters yet).
  page_range take(std::uint64_t n);

 private:
  detail::bdb_env& env_;
  std::mutex mutex_;
};

}  // namespace qs::server
