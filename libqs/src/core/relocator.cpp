// The relocator: frames for pages in this process, mapping objects, and
// rewriting pointers into pages that could not keep their frames.
#include "core/relocator.hpp"

#include <qs/format/keys.hpp>
#include <qs/format/mapping.hpp>
#include "util/stopwatch.hpp"

#include <qs/error.hpp>

#include <algorithm>
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

relocator::relocator(store& s, page_access& access, page_table& table, page_words& words, transaction_log& log,
                     statistics& stats, const options& opts, std::uint32_t page_size, const home_region& home)
    : store_(s),
      access_(access),
      table_(table),
      words_(words),
      log_(log),
      stats_(stats),
      free_(access.frames().frames()),
      home_region_(home),
      home_(std::min(home.frames, access.frames().frames() / 4 * 3)),
      moved_(reinterpret_cast<std::uintptr_t>(access.frames().base()) != home.base || home_ < home.frames ||
             opts.force_relocation_percent > 0),
      claim_(must_claim()),
      policy_(opts.relocation_policy),
      force_percent_(opts.force_relocation_percent),
      page_size_(page_size) {}

void relocator::reset() {
  free_.reset();
  away_taken_ = 0;
  claim_ = must_claim();
  outgrown_ = false;
}

bool relocator::must_claim() { return moved_ || page_count() > home_ + 1; }

bool relocator::forced(std::uint64_t page) const { return force_percent_ > 0 && percentile(page) < force_percent_; }

bool relocator::running_short() const {
  const std::uint64_t away = free_.frames() - home_;
  return free_.free_frames() < free_.frames() / 4 || away - away_taken_ < away / 4 || (outgrown_ && !claim_);
}

std::uint64_t relocator::page_count() {
  auto v = store_.get("next_page");
  return v ? decimal_counter(*v) : 0;
}

std::uint64_t relocator::take_away(std::uint64_t n) {
  auto f = free_.find(n, home_, home_);
  if (!f && claim_) f = free_.find(n, 0, 0);  // a home frame no pointer leads to
  if (!f)
    throw reservation_full("the transaction needs " + std::to_string(n) + " more frame(s) away from home, and the " +
                           std::to_string(free_.frames() - home_) +
                           " frames for pages that cannot be at home are taken by the pages it touches (a larger "
                           "qs::options::reservation_bytes gives more)");
  free_.take(*f, n);
  away_taken_ += away_frames_in(*f, n);
  return *f;
}

std::uint64_t relocator::away_frames_in(std::uint64_t frame, std::uint64_t n) const {
  return frame + n > home_ ? frame + n - std::max(frame, home_) : 0;
}

void relocator::give_back(std::uint64_t frame, std::uint64_t n) {
  free_.give_back(frame, n);
  away_taken_ -= away_frames_in(frame, n);
}

std::uint64_t relocator::take_frames(std::uint64_t page, std::uint64_t n) {
  if (auto h = home_region_.frame_of_page(page); h && *h + n <= home_ && free_.take(*h, n)) return *h;
  if (page + n - 1 > home_) outgrown_ = true;
  return take_away(n);
}

page_desc* relocator::ensure_run(std::uint64_t page, std::uint32_t pages) {
  if (page_desc* d = table_.by_page(page)) return table_.run_head(d);
  const std::uint64_t frame = forced(page) ? take_away(pages) : take_frames(page, pages);
  page_desc* head = nullptr;
  for (std::uint32_t i = 0; i < pages; ++i) {
    page_desc* d = table_.add(page + i, frame + i, page, pages);
    if (i == 0) head = d;
  }
  return head;
}

bool relocator::could_be_home(std::uint64_t page) const {
  auto h = home_region_.frame_of_page(page);
  return h && *h < home_ && !table_.by_page(page) && free_.is_free(*h, 1);
}

page_desc* relocator::at_home(std::uint64_t page) {
  auto h = home_region_.frame_of_page(page);
  if (!h || *h >= home_) return nullptr;
  if (page_desc* d = table_.by_page(page)) return d->frame == *h ? d : nullptr;
  // Forced away: its home frame is no way to it (relocate rewrote every
  // pointer that led there).
  if (forced(page) || !free_.take(*h, 1)) return nullptr;
  return table_.add(page, *h, page, 1);
}

bool relocator::widen(page_desc* d, std::uint64_t index, std::uint64_t pages) {
  if (d->run_pages() != 1 || index >= pages || d->page <= index || d->frame + 1 != d->page) return false;
  const std::uint64_t first = d->page - index, home = first - 1;
  if (pages > home_ || home + pages > home_) return false;
  for (std::uint64_t i = 0; i < pages; ++i) {
    if (first + i == d->page) continue;
    if (const page_desc* e = table_.by_page(first + i)) {
      if (e->frame != home + i || e->run_pages() != 1 || e->resident()) return false;
    } else if (!free_.is_free(home + i, 1)) {
      return false;
    }
  }
  const auto n = static_cast<std::uint32_t>(pages);
  for (std::uint64_t i = 0; i < pages; ++i) {
    if (page_desc* e = table_.by_page(first + i)) {
      table_.set_run(e, first, n);
    } else {
      free_.take(home + i, 1);
      table_.add(first + i, home + i, first, n);
    }
  }
  return true;
}

void relocator::learn_run(page_desc* d) {
  if (!scratch_) scratch_ = std::make_unique<std::byte[]>(page_size_);
  record_header h{};
  std::string m;
  // A page that is not there, or not sound, is left as it is: the pointer
  // check and the fault that reaches it say what is wrong.
  if (!store_.read_page(d->page, h, scratch_.get(), m) || h.magic != record_magic) return;
  if (h.kind == page_kind::small) {
    note_small(d->page);
    return;
  }
  widen(d, h.index, large_object_pages(h.size, page_size_));
}

page_desc* relocator::page_at(std::uint64_t frame) {
  if (page_desc* d = table_.by_frame(frame)) return d;
  return frame < home_ ? at_home(frame + 1) : nullptr;
}

void relocator::relocate(page_desc* d, std::byte* img) {
  std::optional<mapping> m;
  std::vector<moved_run> moves;
  if (d->hdr.mapping_entries != 0) {
    auto t0 = std::chrono::steady_clock::now();
    ++stats_.mapping_fetches;
    m = decode_mapping(d->mapping, page_size_);
    if (!m || m->size() != d->hdr.mapping_entries)
      throw corrupt_page(d->page, "the mapping object of page " + std::to_string(d->page) +
                                      (d->mapping.empty() ? " is missing" : " is damaged"));
    const auto here = reinterpret_cast<std::uint64_t>(access_.frames().base());
    for (const mapping_entry& e : *m) {
      // A page already known: where its run lies, from the index alone.
      const page_slot s = table_.slot_of_page(e.page);
      // A run at home, unless claimed: reached through its home frames
      // (page_at, then widen), given entries only then.
      if (const auto h = home_region_.frame_of_page(e.page);
          !s.d && !claim_ && h && *h + e.pages <= home_ && e.address == here + *h * page_size_)
        continue;
      auto now = reinterpret_cast<std::uint64_t>(s.d ? access_.frames().frame_address(s.head_frame)
                                                     : run_address(ensure_run(e.page, e.pages)));
      if (now != e.address) moves.push_back({e.address, now, std::uint64_t{e.pages} * page_size_});
    }
    stats_.mapping_ns += ns_since(t0);
  } else {
    d->mapping.clear();
  }
  // The common case: every pointer leads home, or into a listed run that
  // is where it was.
  if (moves.empty() && !claim_) return;
  auto t1 = std::chrono::steady_clock::now();
  moved_runs r(std::move(moves));
  std::uint64_t rewritten = 0;
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
    if (is_vptr) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    std::optional<std::uint64_t> nv;
    if (m && find_run(*m, v, page_size_)) {
      nv = r.moved(v);
    } else if (const std::uint64_t page = claim_ ? home_region_.page_of(v) : 0) {
      // Home-form: its page is given an entry now (at its home frame when
      // it can be), and the pointer leads there.
      const std::uint64_t within = (v - home_region_.base) % page_size_;
      page_desc* t = table_.by_page(page);
      if (!t) t = ensure_run(page, 1);
      nv = reinterpret_cast<std::uint64_t>(access_.frames().frame_address(t->frame)) + within;
      if (*nv == v) nv.reset();
    }
    if (nv) {
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
  const bool at_base = reinterpret_cast<std::uintptr_t>(fs.base()) == home_region_.base;
  mapping_builder b;
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
    if (is_vptr) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    const auto* p = reinterpret_cast<const std::byte*>(v);
    if (!fs.contains(p)) return;  // null (or refused by the pointer check)
    const std::uint64_t f = fs.frame_of(p);
    if (remember_ && at_base && remembered(f)) return;  // home-form, seen before
    page_desc* t = table_.by_frame(f);
    // A page the pointer reached without reading it (copied from another
    // pointer): its record says whether it is a large object's, which is
    // listed (mapping.hpp).
    if (!t && f < home_) {
      if (at_base && known_small(f + 1)) return;  // home-form
      t = at_home(f + 1);
      if (t) unread_.push_back(t->page);
    }
    if (!t) return;  // (refused by the pointer check)
    if (t->run_pages() == 1 && t->origin() == page_origin::stored && t->hdr.magic != record_magic &&
        !known_small(t->page))
      learn_run(t);
    page_desc* h = table_.run_head(t);
    if (at_base && h->run_pages() == 1 && h->frame < home_ && h->frame + 1 == h->page) {  // home-form
      if (remember_) remember_home_form(h->frame);
      return;
    }
    b.add(reinterpret_cast<std::uint64_t>(run_address(h)), h->page, h->run_pages());
  });
  mapping m = b.finish();
  std::string bytes = encode_mapping(m, page_size_);
  entries = static_cast<std::uint32_t>(m.size());
  if (bytes == d->mapping) return std::nullopt;
  return bytes;
}

void relocator::remember_home_form(std::uint64_t frame) {
  const std::uint64_t w = frame / 64;
  if (w >= home_form_.size()) home_form_.resize(w + 1, 0);
  if (home_form_[w] == 0) home_form_words_.push_back(static_cast<std::uint32_t>(w));
  home_form_[w] |= std::uint64_t{1} << (frame % 64);
}

void relocator::forget_home_form() {
  for (std::uint32_t w : home_form_words_) home_form_[w] = 0;
  home_form_words_.clear();
  remember_ = false;
}

}  // namespace qs::detail
