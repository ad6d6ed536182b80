// The components of one open database, wired in one place (runtime.hpp).
#include "api/runtime.hpp"

#include <utility>

namespace qs::detail {

runtime::runtime(store& s, std::unique_ptr<frame_space> frames, std::uint32_t page_size_bytes, std::uint32_t pool_pages,
                 const options& opts, const home_region& home)
    : storage(s),
      page_size(page_size_bytes),
      schema(s),
      pool(pool_pages, page_size),
      access(std::move(frames), table),
      words(schema, s.shared(), page_size),
      pointers(words, access, table, page_size),
      relocate(s, access, table, words, log, stats, opts, page_size, home),
      pages(s, pool, table, log, access, relocate, words, pointers, stats, page_size),
      allocator(s, pages, relocate, access, table, log, schema, page_size),
      refs(pages, relocate, access, table, log, stats),
      named(s, refs, allocator, log),
      index(s, refs) {
  pages.set_prefetch(opts.prefetch_pages, opts.prefetch_along != prefetch_order::automatic ? opts.prefetch_along
                                          : s.shared()                                     ? prefetch_order::both
                                                       : prefetch_order::page_order);
  pages.set_map_files(opts.map_page_file);
  pages.set_writable_on_arrival(opts.writable_on_arrival);
  schema.set_evolving(opts.evolve);
  schema.load();
  // Invalidations that crossed a commit through a page server: the pager
  // knows which cached pages the transaction could have read.
  s.on_crossed([this](std::uint64_t page, std::uint64_t version) { return pages.could_have_read(page, version); });
  // The allocator reads its free-space list at the first allocation: a
  // program that only reads opens in the same time whatever the database's
  // size and fragmentation.
}

runtime::~runtime() { storage.on_crossed({}); }

void runtime::reset_frames() {
  pages.evict_all_clean();
  table.clear();
  relocate.reset();
  named.forget();
  allocator.forget_current_page();
  ++stats.frame_resets;
}

}  // namespace qs::detail
