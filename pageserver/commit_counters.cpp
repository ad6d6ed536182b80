// The server's commit counters, rendered for the log (commit_counters.hpp).
#include "commit_counters.hpp"

#include <cstdio>

namespace qs::server {

std::string commit_counters::line() const {
  const auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  std::uint64_t c = get(commits), k = get(conflicts);
  char per[32];
  std::snprintf(per, sizeof per, "%.3f", c ? static_cast<double>(k) / static_cast<double>(c) : 0.0);
  return "statistics: " + std::to_string(c) + " commits (" + std::to_string(get(read_only)) + " wrote nothing), " +
         std::to_string(k) + " refused for a conflict (" + per + " per commit), " + std::to_string(get(retried)) +
         " run again after a Berkeley DB deadlock, " + std::to_string(get(aborts)) + " aborts, " +
         std::to_string(get(bulk)) + " written in bulk transactions";
}

}  // namespace qs::server
