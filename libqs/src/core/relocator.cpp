// The relocator: frames for pages in this process, mapping objects, and
// rewriting pointers into pages that could not keep their frames.
#include "core/relocator.hpp"

#include <qs/format/mapping.hpp>
#include "util/stopwatch.hpp"

#include <qs/error.hpp>

#include <chrono>
#include <cstring>

namespace qs::detail {
namespace {

// A page's share of forced relocation: a fixed hash, so that a run is
// reproducible.
unsigned percentile(std::uint64_t page) {
  page ^= page >> 33;
  page *= 0xff51afd7ed558ccdull;
  page ^= page >> 33;
  return static_cast<unsigned>(page % 100);
}

}  // namespace

relocator::relocator(page_access& access, page_table& table, page_words& words, transaction_log& log, statistics& stats,
                     const options& opts, std::uint32_t page_size)
    : access_(access),
      table_(table),
      words_(words),
      log_(log),
      stats_(stats),
      free_(access.frames().frames()),
      policy_(opts.relocation_policy),
      force_percent_(opts.force_relocation_percent),
      page_size_(page_size) {}

std::uint64_t relocator::take_frames(std::uint64_t hint, std::uint64_t n) {
  if (hint + n <= free_.frames() && free_.take(hint, n)) return hint;
  auto f = free_.find(n, hint < free_.frames() ? hint : 0);
  if (!f)
    throw reservation_full("the transaction needs " + std::to_string(n) + " more frame(s), and the reservation's " +
                           std::to_string(free_.frames()) + " frames are taken by the pages it touches");
  free_.take(*f, n);
  return *f;
}

page_desc* relocator::ensure_run(std::uint64_t address, std::uint64_t page, std::uint32_t pages) {
  if (page_desc* d = table_.by_page(page)) return table_.run_head(d);
  const frame_space& fs = access_.frames();
  const auto* a = reinterpret_cast<const std::byte*>(address);
  bool inside = fs.contains(a) && (a - fs.base()) % page_size_ == 0 && fs.frames() - fs.frame_of(a) >= pages;
  std::uint64_t want = inside ? fs.frame_of(a) : free_.frames();
  std::uint64_t frame;
  if (inside && force_percent_ > 0 && percentile(page) < force_percent_) {
    // The test harness moves this run even though its frames may be free.
    auto f = free_.find(pages, want + pages);
    if (f && *f == want) f = free_.find(pages, want + 2 * std::uint64_t{pages});
    if (!f || *f == want) throw reservation_full("no frames to relocate to");
    free_.take(*f, pages);
    frame = *f;
  } else {
    frame = take_frames(want, pages);
  }
  page_desc* head = nullptr;
  for (std::uint32_t i = 0; i < pages; ++i) {
    page_desc* d = table_.add(page + i, frame + i, page, pages);
    if (i == 0) head = d;
  }
  return head;
}

void relocator::relocate(page_desc* d, std::byte* img) {
  if (d->hdr.mapping_entries == 0) {
    d->mapping.clear();
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  ++stats_.mapping_fetches;
  std::optional<mapping> m = decode_mapping(d->mapping, page_size_);
  if (!m || m->size() != d->hdr.mapping_entries)
    throw corrupt_page(d->page, "the mapping object of page " + std::to_string(d->page) +
                                    (d->mapping.empty() ? " is missing" : " is damaged"));
  std::vector<moved_run> moves;
  for (const mapping_entry& e : *m) {
    // A page already known: where its run lies, from the index alone.
    const page_slot s = table_.slot_of_page(e.page);
    auto now = reinterpret_cast<std::uint64_t>(s.d ? access_.frames().frame_address(s.head_frame)
                                                   : run_address(ensure_run(e.address, e.page, e.pages)));
    if (now != e.address) moves.push_back({e.address, now, std::uint64_t{e.pages} * page_size_});
  }
  stats_.mapping_ns += ns_since(t0);
  if (moves.empty()) return;
  auto t1 = std::chrono::steady_clock::now();
  moved_runs r(std::move(moves));
  std::uint64_t rewritten = 0;
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
    if (is_vptr) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    if (auto nv = r.moved(v)) {
      std::memcpy(img + off, &*nv, sizeof v);
      ++rewritten;
    }
  });
  stats_.swizzle_ns += ns_since(t1);
  if (!rewritten) return;
  stats_.pointers_relocated += rewritten;
  ++stats_.pages_relocated;
  // The stored image still holds the old addresses: if the page is written,
  // it is written whole, with a new mapping.
  d->mark_rewritten();
  if (policy_ == relocation::one_time) log_.add_relocated(d);
}

std::optional<std::string> relocator::mapping_of(const page_desc* d, const std::byte* img, std::uint32_t& entries) {
  const frame_space& fs = access_.frames();
  mapping_builder b;
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
    if (is_vptr) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    const auto* p = reinterpret_cast<const std::byte*>(v);
    if (!fs.contains(p)) return;  // null (or refused by the pointer check)
    page_desc* t = table_.by_frame(fs.frame_of(p));
    if (!t) return;
    page_desc* h = table_.run_head(t);
    b.add(reinterpret_cast<std::uint64_t>(run_address(h)), h->page, h->run_pages);
  });
  mapping m = b.finish();
  std::string bytes = encode_mapping(m, page_size_);
  entries = static_cast<std::uint32_t>(m.size());
  if (bytes == d->mapping) return std::nullopt;
  return bytes;
}

}  // namespace qs::detail
