// The server's page and frame counters (page_numbers.hpp).
#include "page_numbers.hpp"

#include <qs/base/error.hpp>

#include <string>

namespace qs::server {

page_range page_numbers::take(std::uint64_t n) {
  std::lock_guard<std::mutex> g(mutex_);
  // Read and written in one short transaction: nothing else writes these
  // records once the database exists, so it waits for nobody for long.
  for (int attempt = 0;; ++attempt) {
    DbTxn* t = env_.begin();
    page_range r;
    try {
      auto p = env_.get(t, "next_page");
      auto f = env_.get(t, "next_frame");
      if (!p || !f) throw store_error("database " + env_.dir() + " has no page counters: it was never created");
      r = {std::stoull(*p), std::stoull(*f)};
      env_.put(t, "next_page", std::to_string(r.page + n));
      env_.put(t, "next_frame", std::to_string(r.frame + n));
    } catch (const deadlock&) {
      env_.abort(t);
      if (attempt >= 100) throw;
      continue;
    } catch (...) {
      env_.abort(t);
      throw;
    }
    try {
      env_.commit(t, false);  // ends t, committed or not
    } catch (const commit_unknown&) {
      // The master of a replication group committed the counters, and its
      // replicas did not acknowledge them in time: the numbers stand here
      // (page_numbers.hpp).
    }
    return r;
  }
}

}  // namespace qs::server
