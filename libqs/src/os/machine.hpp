// os/machine.hpp: what this machine offers a database, read from the
// operating system (Linux): its physical memory and the kernel's limit on
// memory mappings, and the default sizes qs derives from them.
//
// The defaults serve a program that keeps one large database open without
// tuning: a buffer pool of a quarter of physical memory (at most half the
// frame reservation; under the protection frame control, only as far as
// vm.max_map_count allows, each resident page costing up to two
// mappings), and a
// Berkeley DB cache of 1/64 of physical memory between 16 and 64 MiB.
// Berkeley DB sets its whole cache up at open (about 45 us per MiB here),
// and a larger one did not make the million-node peers update or traversal
// faster (256 MiB against 64: the same commit and cold times, 12 ms more to
// open): the pool holds the pages a program uses, and the operating
// system's page cache is behind Berkeley DB's.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstdint>

namespace qs::detail {

// Memory mappings kept for the rest of the process (libraries, heap, thread
// stacks) beside the pool's two per resident page.
constexpr long other_mappings = 4096;

// Physical memory in bytes (sysconf), or 0 when the system does not say.
std::uint64_t physical_memory_bytes();
// vm.max_map_count (65530 when it cannot be read).
long max_map_count();
// The largest pool whose mappings fit under vm.max_map_count when every
// resident page may cost two of them.
std::uint32_t max_pool_pages_for_mappings();
// options::pool_pages == 0: the pool for pages of `page_size` bytes in a
// reservation of `reservation_bytes`, with frames `mapped_per_page` (the
// protection frame control) or not.
std::uint32_t default_pool_pages(std::uint32_t page_size, std::uint64_t reservation_bytes, bool mapped_per_page);
// options::store_cache_bytes == 0: the embedded store's Berkeley DB cache.
std::uint64_t default_store_cache_bytes();

}  // namespace qs::detail
