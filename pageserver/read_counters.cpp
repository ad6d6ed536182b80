// The server's read counters, rendered for the log (read_counters.hpp).
#include "read_counters.hpp"

namespace qs::server {

std::string read_counters::line() const {
  const auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return "pages sent: " + std::to_string(get(pages)) + " asked for by faults (" + std::to_string(get(unchanged)) +
         " more revalidated unchanged), " + std::to_string(get(prefetched)) + " prefetched in " +
         std::to_string(get(answers)) + " answers of " + std::to_string(get(parts)) + " parts";
}

}  // namespace qs::server
