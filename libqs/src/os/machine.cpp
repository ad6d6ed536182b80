// The machine's memory and mapping limit, and the defaults derived from them
// (see machine.hpp).
#include "os/machine.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace qs::detail {

std::uint64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

long max_map_count() {
  long limit = 65530;
  std::ifstream in("/proc/sys/vm/max_map_count");
  if (in) in >> limit;
  return limit;
}

std::uint32_t max_pool_pages_for_mappings() {
  long slots = (max_map_count() - other_mappings) / 2;
  return static_cast<std::uint32_t>(std::clamp<long>(slots, 0, 0xffffffffL));
}

std::uint32_t default_pool_pages(std::uint32_t page_size, std::uint64_t reservation_bytes, bool mapped_per_page) {
  std::uint64_t memory = physical_memory_bytes();
  std::uint64_t by_memory = memory ? memory / 4 / page_size : 4096;
  std::uint64_t pages = std::min(by_memory, reservation_bytes / 2 / page_size);
  if (mapped_per_page) pages = std::min<std::uint64_t>(pages, max_pool_pages_for_mappings());
  pages = std::min<std::uint64_t>(pages, 0x7fffffff);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(pages, 16));
}

std::uint64_t default_store_cache_bytes() {
  constexpr std::uint64_t mib = std::uint64_t{1} << 20;
  std::uint64_t memory = physical_memory_bytes();
  if (memory == 0) return 64 * mib;
  return std::clamp<std::uint64_t>(memory / 64 / mib * mib, 16 * mib, 64 * mib);
}

}  // namespace qs::detail
