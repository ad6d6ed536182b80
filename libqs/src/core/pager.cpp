// The pager: page-in, write enabling, write-back and eviction.
#include "core/pager.hpp"

#include "core/diff.hpp"
#include "core/page_check.hpp"
#include "core/page_heap.hpp"
#include "core/unknown_vtable.hpp"
#include "util/stopwatch.hpp"

#include <qs/error.hpp>
#include <qs/pause_point.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace qs::detail {
namespace {

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#" PRIx64, v);
  return buf;
}

}  // namespace

pager::pager(store& s, buffer_pool& pool, page_table& table, transaction_log& log, page_access& access,
             relocator& frames, page_words& words, pointer_check& pointers, statistics& stats, std::uint32_t page_size)
    : store_(s),
      pool_(pool),
      table_(table),
      log_(log),
      access_(access),
      frames_(frames),
      words_(words),
      pointers_(pointers),
      stats_(stats),
      page_size_(page_size),
      zero_page_(std::make_unique<std::byte[]>(page_size)),
      incoming_(page_size),
      fresh_(access.frames()) {}

std::uint32_t pager::take_slot(page_desc* d) {
  std::uint32_t slot;
  while (!pool_.take_free(d, slot)) {
    page_desc* v = pool_.victim();
    if (!v) throw error(page_access::pool_full_message(pool_.size()));
    evict(v);
    // Dropped later, where no caller can hold it (forget_evicted).
    if (may_forget(v)) to_forget_.push_back(v->page);
  }
  return slot;
}

void pager::show(page_desc* d, bool writable, const std::byte* image) {
  auto t0 = std::chrono::steady_clock::now();
  if (image) access_.fill_and_show(d, image, writable);
  else access_.show(d, writable);
  stats_.protect_ns += ns_since(t0);
}

void pager::free_slot(std::uint32_t slot, std::uint64_t frame) {
  pool_.release(slot);
  access_.frames().release(frame);
}

void pager::release_slot(page_desc* d) {
  left_unused(d);
  free_slot(d->slot(), d->frame);
  // The mapping object comes again with the record; until then the page
  // keeps only its frame, so that what stays behind does not grow with
  // every page a process has seen.
  std::string().swap(d->mapping);
  d->evicted();
}

void pager::page_in(page_desc* d, bool writable) {
  std::uint32_t slot = take_slot(d);
  if (d->origin() == page_origin::unbuilt) {
    // A page created in this transaction that has never been built: built
    // in its frame's memory, which fresh_ has most often populated already,
    // then shown.
    std::byte* img = access_.image(d);
    // The frames after a page at home are the homes of the rest of its run
    // and of the page numbers the store hands out next.
    if (frames_.is_home(d)) {
      const std::uint64_t rest = d->run_first() + d->run_pages() - 1 - d->page, in_hand = store_.pages_in_hand();
      fresh_.took(d->frame, in_hand > UINT64_MAX - rest ? UINT64_MAX : rest + in_hand);
    }
    std::memset(img, 0, page_size_);
    if (d->hdr.kind == page_kind::small) {
      init_small_page(img, page_size_);
    } else if (d->hdr.kind == page_kind::large_head) {
      *reinterpret_cast<page_header*>(img) = {page_magic, page_size_, 0, 1};
      auto* oh = reinterpret_cast<object_header*>(img + sizeof(page_header));
      *oh = make_header(d->hdr.type, d->hdr.size);
      set_tag(*oh, 1);
    }
    d->built(slot);
    show(d, true);
    add_written(d);
    return;
  }
  // A stored page's image is made in a buffer, and its frame's memory
  // becomes a copy of it (page_access::fill_and_show): the memory is not
  // zeroed by the kernel and then written again, and no fault is taken to
  // write it.
  std::byte* img = incoming_.get();
  record_header h;
  std::string m;
  try {
    auto t0 = std::chrono::steady_clock::now();
    bool found = store_.read_page(d->page, h, img, m);
    stats_.fetch_ns += ns_since(t0);
    if (!found)
      throw corrupt_page(d->page, "page " + std::to_string(d->page) + " at frame " + std::to_string(d->frame) +
                                      " has no record in the store");
    accept_record(d, h, img, std::move(m));
  } catch (...) {
    free_slot(slot, d->frame);
    throw;
  }
  ++stats_.pages_fetched;
  count_refetch(d);
  d->loaded(slot);
  // A page whose image was rewritten as it came in is written back whole
  // when writable, changed or not: it comes read-only.
  if (!writable || d->rewritten()) {
    show_stored(d, img, prefetch_source::none, true);
  } else if (show_stored(d, img, prefetch_source::none)) {
    writable_when_mapped_ = d;
  } else {
    // Its before-image is the image just read: shown writable, the write
    // to come takes no fault.
    arrive_writable(d, img);
    show(d, true, img);
  }
}

void pager::arrive_writable(page_desc* d, const std::byte* img) {
  take_page_before(d, img);
  d->made_writable(undo_kind::page);
  add_written(d);
  ++stats_.writable_on_arrival;
}

void pager::make_current(page_desc* d, std::uint32_t touched, bool writable) {
  if (d->state() == page_state::absent) {
    writable_when_mapped_ = nullptr;
    try {
      page_in(d, writable);
      if (prefetch_ && d->origin() == page_origin::stored) {
        auto t0 = std::chrono::steady_clock::now();
        // Guesses take free slots only: read no more than there are.
        std::uint32_t room = std::min(prefetch_, pool_.free_slots());
        if (order_ != prefetch_order::page_order)
          room -= prefetch_targets(d, touched, window_of(prefetch_source::pointers, room));
        if (order_ != prefetch_order::pointers) prefetch_block(d, window_of(prefetch_source::page_order, room));
        stats_.prefetch_ns += ns_since(t0);
      }
    } catch (...) {
      show_mapped();
      throw;
    }
    show_mapped();
    // One that came mapping the store's file is made writable there.
    if (writable_when_mapped_ == d && d->state() == page_state::readable) {
      make_writable(d);
      ++stats_.writable_on_arrival;
    }
  } else if (d->state() == page_state::stale) {
    revalidate(d);
  } else if (d->prefetched_by != prefetch_source::none) {
    first_use(d, writable && !d->rewritten());
  }
}

void pager::first_use(page_desc* d, bool writable) {
  count_outcome(d->prefetched_by, true);
  d->prefetched_by = prefetch_source::none;
  ++stats_.prefetched_used;
  // Read by the transaction now: a shared store checks it at the commit.
  store_.note_read(d->page, d->hdr.version);
  // As a page a read fault brings in writable (page_in): the image it came
  // with is its before-image, and the write to come takes no fault.
  if (writable) arrive_writable(d, image(d));
  show(d, writable);
}

void pager::left_unused(page_desc* d) {
  if (d->prefetched_by == prefetch_source::none) return;
  count_outcome(d->prefetched_by, false);
  d->prefetched_by = prefetch_source::none;
}

void pager::count_outcome(prefetch_source s, bool used) {
  prefetch_gauge& g = gauge(s);
  ++(used ? g.used : g.wasted);
  const std::uint32_t n = g.used + g.wasted;
  if (n < 16) return;
  if (2 * g.used < n) g.window /= 2;
  else if (4 * g.used >= 3 * n) g.window = std::min(prefetch_, std::max(1u, 2 * g.window));
  g.used = g.wasted = 0;
}

std::uint32_t pager::window_of(prefetch_source s, std::uint32_t room) {
  prefetch_gauge& g = gauge(s);
  if (g.window) return std::min(g.window, room);
  // Shut: one page every 16th fault, so that what it brings can show that
  // guessing pays again.
  if (++g.since_probe < 16) return 0;
  g.since_probe = 0;
  return std::min(1u, room);
}

std::uint32_t pager::prefetch_targets(const page_desc* d, std::uint32_t touched, std::uint32_t room) {
  if (room == 0) return 0;
  // The pages d's pointers lead to (now, after relocation), in pointer
  // order from the touched offset on, then from the page's start: the
  // object the program reached leads to what it reaches next.
  const frame_space& fs = access_.frames();
  const std::byte* img = readable_image(d);
  targets_.clear();
  std::vector<std::uint64_t>& before = targets_before_;  // the pages of pointers before `touched`
  before.clear();
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
    if (is_vptr || targets_.size() >= room) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    const auto* p = reinterpret_cast<const std::byte*>(v);
    if (!fs.contains(p)) return;
    const std::uint64_t f = fs.frame_of(p);
    const page_desc* t = table_.by_frame(f);
    // A home frame no page holds yet: its page, given an entry if it comes.
    const std::uint64_t page = t ? t->page : f + 1;
    if (t ? t->state() != page_state::absent || t->origin() != page_origin::stored : !frames_.could_be_home(page))
      return;
    auto& into = off >= touched ? targets_ : before;
    if (std::find(targets_.begin(), targets_.end(), page) != targets_.end() ||
        std::find(before.begin(), before.end(), page) != before.end())
      return;
    into.push_back(page);
  });
  for (std::size_t i = 0; i < before.size() && targets_.size() < room; ++i) targets_.push_back(before[i]);
  if (targets_.empty()) return 0;
  const auto n = static_cast<std::uint32_t>(targets_.size());
  stage_and_take(n, false, prefetch_source::pointers,
                 [&](const auto& want, const auto& got) { return store_.read_pages(targets_, want, got); });
  return n;
}

void pager::prefetch_block(const page_desc* d, std::uint32_t window) {
  if (window == 0) return;
  // The block of `window` pages that holds d, aligned on that size (two,
  // for a probe's one guess: d's pair). Wherever the program enters a
  // block and whichever way it goes, the block comes in at one fault, and
  // blocks that came in leave no gaps between them for later faults to
  // take a few pages at a time, as windows starting at each faulted page
  // do where the program jumps about. Whether guessing pays at all (a
  // lookup that lands on scattered pages) is the gauge's to say.
  const std::uint64_t size = std::max<std::uint64_t>(window, 2);
  const std::uint64_t first = d->page / size * size, last = first + size - 1;
  // The way the program goes: a list built by prepending is read from its
  // last page down. Records are taken in that direction: a page that has
  // no frame yet often gets one from the page taken in before it (the next
  // node of a list).
  const bool down = d->page < last_read_;
  last_read_ = d->page;
  stage_and_take(window, down, prefetch_source::page_order,
                 [&](const auto& want, const auto& got) { return store_.read_range(first, last, want, got); });
}

template <class Read>
void pager::stage_and_take(std::uint32_t room, bool down, prefetch_source source, Read read) {
  if (staging_pages_ < prefetch_) {
    staging_ = page_buffer(std::size_t{prefetch_} * page_size_);
    staging_pages_ = prefetch_;
  }
  staged_.clear();
  std::size_t delivered = 0;  // got() comes in the order want() asked
  auto want = [&](std::uint64_t page) -> std::byte* {
    const page_desc* p = table_.by_page(page);
    if (p ? p->state() != page_state::absent || p->origin() != page_origin::stored : !frames_.could_be_home(page))
      return nullptr;
    if (staged_.size() == room) return nullptr;
    staged_.push_back({page, {}, {}});
    return staging_.get() + (staged_.size() - 1) * page_size_;
  };
  // Going up, each record is taken in as it comes (a page server may still
  // be reading the next ones); going down, once all have come, last first.
  bool full = false;  // a pool slot was wanted and none was free: the rest are left
  auto got = [&](std::uint64_t page, const record_header& h, std::string mapping_object) {
    while (delivered < staged_.size() && staged_[delivered].page != page) ++delivered;
    if (delivered == staged_.size()) return;
    const std::size_t i = delivered++;
    staged_page& s = staged_[i];
    s.h = h;
    s.mapping = std::move(mapping_object);
    s.complete = true;
    if (!down && !full) full = !take_in(s, staging_.get() + i * page_size_, source);
  };
  try {
    read(std::function<std::byte*(std::uint64_t)>(want),
         std::function<void(std::uint64_t, const record_header&, std::string)>(got));
  } catch (const error&) {
    // A guess that failed: the pages are read, and their errors said, when
    // the program touches them.
  }
  for (std::size_t k = 0; down && k < staged_.size(); ++k) {
    std::size_t i = staged_.size() - 1 - k;
    if (staged_[i].complete && !take_in(staged_[i], staging_.get() + i * page_size_, source)) break;
  }
  staged_.clear();
}

bool pager::take_in(staged_page& s, std::byte* img, prefetch_source source) {
  page_desc* p = table_.by_page(s.page);
  // A page no entry names yet comes in at its home frame, if it is a small
  // page (a large object's pages come with their run, when it is reached).
  if (!p && s.h.kind == page_kind::small) p = frames_.at_home(s.page);
  if (!p || p->state() != page_state::absent || p->origin() != page_origin::stored) return true;
  std::uint32_t slot;
  if (!pool_.take_free(p, slot)) return false;  // a guess never evicts a page
  try {
    accept_record(p, s.h, img, std::move(s.mapping));
  } catch (const error&) {
    free_slot(slot, p->frame);
    return true;  // refused again, with its message, when touched
  }
  ++stats_.pages_fetched;
  ++stats_.pages_prefetched;
  count_refetch(p);
  p->loaded(slot);
  // Watched: hidden until its first touch, which counts it used. A
  // transaction whose commit checks its reads (store::checks_reads) must
  // know exactly which pages it read, so every page is watched there;
  // elsewhere one in watch_every is (a first touch costs a fault's signal),
  // and the rest are shown now.
  // A page to be mapped with its neighbours is not watched where it would
  // split their run: the watch moves to the run's end (show_mapped).
  const bool watch = store_.checks_reads() || ++prefetched_since_watch_ >= watch_every;
  if (watch && !show_stored(p, img, source)) {
    prefetched_since_watch_ = 0;
    watch_now(p, img, source);
  } else if (!watch) {
    show_stored(p, img, source, true);
  }
  return true;
}

void pager::watch_now(page_desc* d, const std::byte* img, prefetch_source source) {
  ++stats_.prefetch_watched;
  d->prefetched_by = source;
  access_.fill(d, img);
}

bool pager::show_stored(page_desc* d, const std::byte* img, prefetch_source source, bool or_now) {
  if constexpr (page_access::maps_files) {
    store::file_image at{};
    // Marked rewritten (now, or when it came in before): its image is not
    // the file's.
    if (map_files_ && !d->rewritten() && store_.image_in_file(d->page, at)) {
      // The faulted page's image stays in incoming_ until make_current
      // returns; a prefetched one's buffer may be reused before.
      to_map_.push_back({d, at, source, source == prefetch_source::none ? img : at.bytes});
      return true;
    }
  }
  if (or_now) show(d, false, img);
  return false;
}

const std::byte* pager::readable_image(const page_desc* d) const {
  for (const file_page& p : to_map_)
    if (p.d == d) return p.at.bytes;
  return image(d);
}

void pager::show_mapped() {
  if (to_map_.empty()) return;
  auto t0 = std::chrono::steady_clock::now();
  std::sort(to_map_.begin(), to_map_.end(),
            [](const file_page& a, const file_page& b) { return a.d->frame < b.d->frame; });
  std::size_t shown = 0;
  try {
    for (std::size_t i = 0; i < to_map_.size();) {
      const file_page& first = to_map_[i];
      std::size_t j = i + 1;
      while (j < to_map_.size() && to_map_[j].d->frame == to_map_[j - 1].d->frame + 1 &&
             to_map_[j].at.fd == first.at.fd && to_map_[j].at.offset == to_map_[j - 1].at.offset + page_size_)
        ++j;
      std::size_t begin = i, end = j;
      // A watch that fell on a page to be mapped: a prefetched page at an
      // end of the run is watched instead, so that the run stays whole. A
      // run holds at most one page that was not prefetched (the faulted
      // one), so one of its ends is prefetched unless it is that page alone.
      if (prefetched_since_watch_ >= watch_every) {
        std::size_t w = to_map_.size();
        if (to_map_[j - 1].source != prefetch_source::none) w = --end;
        else if (to_map_[i].source != prefetch_source::none) w = begin++;
        if (w != to_map_.size()) {
          prefetched_since_watch_ = 0;
          watch_now(to_map_[w].d, to_map_[w].at.bytes, to_map_[w].source);
        }
      }
      const file_page& from = to_map_[begin];
      if (end - begin >= min_mapped_run &&
          access_.frames().map_file(from.d->frame, end - begin, from.at.fd, from.at.offset)) {
        stats_.pages_mapped += end - begin;
      } else {
        for (std::size_t k = begin; k < end; ++k) access_.fill_and_show(to_map_[k].d, to_map_[k].copy_from, false);
      }
      shown = i = j;
    }
  } catch (...) {
    // The pages not shown leave the pool: a touch reads them again.
    for (std::size_t k = shown; k < to_map_.size(); ++k) release_slot(to_map_[k].d);
    to_map_.clear();
    throw;
  }
  to_map_.clear();
  stats_.protect_ns += ns_since(t0);
}

void pager::revalidate(page_desc* d) {
  // The page is resident (its frame inaccessible) from an earlier
  // transaction; the store resends it only if another client changed it.
  record_header h;
  std::string m;
  try {
    switch (store_.read_page_if_changed(d->page, d->hdr.version, h, image(d), m)) {
      case store::page_read::absent:
        throw corrupt_page(d->page, "page " + std::to_string(d->page) + " at frame " + std::to_string(d->frame) +
                                        " has no record in the store any more");
      case store::page_read::unchanged: break;
      case store::page_read::read:
        accept_record(d, h, image(d), std::move(m));
        ++stats_.pages_fetched;
        break;
    }
  } catch (...) {
    evict_clean(d);  // the cached image is no good now
    throw;
  }
  d->revalidated();
  show(d, false);  // hidden since the transaction began
}

void pager::accept_record(page_desc* d, const record_header& h, std::byte* img, std::string mapping_object) {
  if (h.magic != record_magic)
    throw corrupt_page(d->page, "page " + std::to_string(d->page) + " has a damaged record header");
  auto t0 = std::chrono::steady_clock::now();
  std::uint32_t sum = record_checksum(h, img, page_size_);
  auto t1 = std::chrono::steady_clock::now();
  stats_.fetch_ns += static_cast<std::uint64_t>((t1 - t0).count());
  if (sum != h.checksum)
    throw corrupt_page(d->page, "page " + std::to_string(d->page) + " failed its checksum (stored " + hex(h.checksum) +
                                    ", computed " + hex(sum) + "); the page is not used");
  // The check sees every object's type: whether any has vptrs to set comes with it.
  bool vptrs = false;
  std::string wrong = check_page(h, img, page_size_, [&](std::uint32_t type, bool& has_words) {
    return words_.type_size(type, has_words, vptrs);
  });
  if (!wrong.empty())
    throw corrupt_page(d->page, "page " + std::to_string(d->page) + " holds " + wrong + "; the page is not used");
  // A page reached alone through its home frame (relocator::page_at) that
  // is a large object's: its run comes home with it.
  if (h.kind != page_kind::small && d->run_pages() == 1 && (h.index != 0 || large_object_pages(h.size, page_size_) > 1))
    frames_.widen(d, h.index, large_object_pages(h.size, page_size_));
  // (A head may still be alone: software mode's references read it first,
  // to learn its run.)
  if (h.kind != page_kind::small && (d->page - d->run_first() != h.index ||
                                     (d->run_pages() != 1 && d->run_pages() != large_object_pages(h.size, page_size_))))
    throw corrupt_page(d->page, "page " + std::to_string(d->page) + " is page " + std::to_string(h.index) +
                                    " of a large object of " + std::to_string(large_object_pages(h.size, page_size_)) +
                                    " pages, but was reached as page " + std::to_string(d->page - d->run_first()) +
                                    " of " + std::to_string(d->run_pages()));
  d->hdr = h;
  d->mapping = std::move(mapping_object);
  if (vptrs) fix_vptrs(d, img);
  stats_.swizzle_ns += ns_since(t1);
  frames_.relocate(d, img);
}

void pager::fix_vptrs(page_desc* d, std::byte* img) {
  words_.for_each(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t which) {
    if (!is_vptr) return;
    const vptr_entry* e = l.program && which < l.program->vptr_count ? &l.program->vptrs[which] : nullptr;
    const void* point =
        e && e->vtable ? static_cast<const char*>(e->vtable) + e->address_point : unknown_vtable(l.name);
    auto want = reinterpret_cast<std::uintptr_t>(point);
    std::uintptr_t have;
    std::memcpy(&have, img + off, sizeof have);
    if (have != want) {
      std::memcpy(img + off, &want, sizeof want);
      d->mark_rewritten();
    }
  });
}

void pager::take_page_before(page_desc* d, const std::byte* current, bool may_borrow) {
  if (const std::byte* stored = may_borrow ? stored_image(d) : nullptr) {
    pool_.borrow_before(d->slot(), stored);
    ++stats_.before_images_in_file;
    return;
  }
  before_images::range ahead;
  std::byte* before = pool_.take_before(d->slot(), ahead);
  std::memcpy(before, current, page_size_);
  if (ahead.bytes) fresh_.give_memory(pool_.before_image_memory(), ahead.offset, ahead.bytes);
  log_.put_back_saved(d, before);
}

void pager::add_written(page_desc* d) {
  if (log_.written().empty()) store_.writes_coming();
  log_.add_written(d);
}

void pager::make_writable(page_desc* d) {
  if (d->prefetched_by != prefetch_source::none) first_use(d);
  bool was_writable = d->state() == page_state::writable;  // software mode: objects saved
  take_page_before(d, image(d), !was_writable);
  if (was_writable) {
    d->took_page_before();
    return;
  }
  d->made_writable(undo_kind::page);
  access_.set_access(d, true);
  add_written(d);
}

void pager::write_fault(page_desc* d) {
  if (d->state() == page_state::readable) predict_writes_.written(d->page);
  make_writable(d);
  make_writable_around(d);
}

bool pager::expects_write(const page_desc* d, const void* code) {
  // A watched prefetched page is readable, hidden until this first touch.
  const bool arriving = d->state() == page_state::absent ||
                        (d->state() == page_state::readable && d->prefetched_by != prefetch_source::none);
  return writable_on_arrival_ && arriving && d->origin() == page_origin::stored &&
         predict_writes_.arriving(d->page, code);
}

void pager::make_writable_around(const page_desc* d) {
  if constexpr (page_access::maps_files) {
    write_gauge& g = writing_;
    if (g.pause != 0) {
      --g.pause;
      return;
    }
    if (g.ahead >= write_sample) {
      if (2 * g.unchanged > g.ahead) g.pause = write_pause;
      g.ahead = g.unchanged = 0;
      if (g.pause != 0) return;
    }
    const std::uint64_t first = d->page / write_ahead_pages * write_ahead_pages;
    ahead_.clear();
    for (std::uint64_t page = first; page < first + write_ahead_pages; ++page) {
      page_desc* n = table_.by_page(page);
      // Shown read-only (a watched prefetched page is hidden until its
      // first touch).
      if (!n || n == d || n->state() != page_state::readable || n->prefetched_by != prefetch_source::none) continue;
      const std::byte* stored = stored_image(n);
      if (!stored) continue;
      pool_.borrow_before(n->slot(), stored);
      ++stats_.before_images_in_file;
      n->made_writable(undo_kind::page);
      add_written(n);
      ahead_.push_back(n);
    }
    if (ahead_.empty()) return;
    access_.set_access(ahead_, true);
    stats_.writable_ahead += ahead_.size();
    g.ahead += static_cast<std::uint32_t>(ahead_.size());
  }
}

const std::byte* pager::stored_image(const page_desc* d) {
  if constexpr (page_access::maps_files) {
    // Stored before this transaction, with nothing rewritten when it came
    // in: its image is the file's byte for byte (not when the transaction
    // wrote it already: image_in_file says nothing then).
    store::file_image at{};
    if (!d->is_new() && !d->rewritten() && store_.image_in_file(d->page, at)) return at.bytes;
  }
  return nullptr;
}

void pager::make_writable_by_objects(page_desc* d) {
  if (d->prefetched_by != prefetch_source::none) first_use(d);
  d->made_writable(d->whole_page_logged() ? undo_kind::none : undo_kind::objects);
  add_written(d);
}

void pager::write_back(page_desc* d, pointer_checking checking) {
  // A prefetched page written before the program touched it (one-time
  // relocation writes back the pages whose pointers it rewrote): the
  // transaction writes what it read, at the version it read.
  if (d->prefetched_by != prefetch_source::none) store_.note_read(d->page, d->hdr.version);
  std::byte* img = image(d);
  // Whole when the stored image is not the before-image (a new page, or one
  // whose pointers or vptrs were rewritten when it came in), or when nothing
  // says what changed (one-time relocation's write-back).
  const std::vector<saved_object>* saved = d->undo() == undo_kind::page ? nullptr : &log_.saved(d);
  bool whole = d->is_new() || d->rewritten() || (saved && saved->empty());
  std::vector<byte_range> ranges;
  if (!whole) {
    if (d->undo() == undo_kind::page) {
      diff_pages(before_image(d), img, page_size_, ranges, store_.range_merge_gap());
    } else {
      // Software mode: only the objects written can differ. The image with
      // their before-images in place must be the stored one; if not,
      // something was changed without qs::write, and storing the objects'
      // ranges alone would leave a record that fails its checksum. (The
      // checksum runs over the pieces; nothing is copied.)
      std::uint32_t sum = record_header_checksum(d->hdr);
      std::size_t at = 0;
      for (const saved_object& o : *saved) {
        sum = crc32c(crc32c(sum, img + at, o.offset - at), log_.saved_bytes(o), o.size);
        at = o.offset + o.size;
      }
      if (crc32c(sum, img + at, page_size_ - at) != d->hdr.checksum)
        throw error("commit refused: page " + std::to_string(d->page) +
                    " was changed outside the objects announced with qs::write (in software mode every update "
                    "goes through qs::write); the transaction is aborted");
      for (const saved_object& o : *saved) {
        std::size_t first = ranges.size();
        diff_pages(log_.saved_bytes(o), img + o.offset, o.size, ranges, store_.range_merge_gap());
        for (std::size_t i = first; i < ranges.size(); ++i) ranges[i].offset += o.offset;
      }
    }
    if (ranges.empty()) {
      ++writing_.unchanged;
      return;
    }
  }
  // The new header and mapping object are built aside and become d's only
  // once the store took them: a write that fails (a lost connection, a
  // deadlock during an early flush) leaves d as its record still is.
  record_header h = d->hdr;
  h.magic = record_magic;
  h.frame = d->frame;
  // The mapping object lists where the page's pointers lead: unchanged when
  // no changed range holds a pointer word (most updates change data). The
  // commit's check of the page's pointers reads only those words when the
  // page's before-image says what changed.
  bool pointers_changed = whole;
  bool storable = true;
  const bool refuse = checking == pointer_checking::refuse;
  if (!whole && checking != pointer_checking::none && d->undo() == undo_kind::page) {
    pointers_changed = pointers_.check_changed(d, img, ranges, refuse, storable);
  } else {
    if (checking != pointer_checking::none) storable = pointers_.check(d, img, refuse);
    if (!whole) pointers_changed = words_.any_pointer_in(d, img, ranges);
  }
  if (!storable) log_.add_suspect(d);
  std::optional<std::string> new_mapping;
  if (pointers_changed) new_mapping = frames_.mapping_of(d, img, h.mapping_entries);
  ++h.version;  // clients caching the page see that it changed
  h.checksum = record_checksum(h, img, page_size_);
  if (whole) store_.put_page(d->page, h, img, new_mapping ? &*new_mapping : nullptr);
  else store_.patch_page(d->page, h, img, ranges, new_mapping ? &*new_mapping : nullptr);
  d->hdr = h;
  if (new_mapping) d->mapping = std::move(*new_mapping);
  if (whole) {
    stats_.diff_bytes += page_size_;
  } else {
    for (auto& r : ranges) stats_.diff_bytes += r.length;
  }
  ++stats_.pages_written;
  d->stored();
  log_.add_logged(d);
}

void pager::store_unbuilt(page_desc* d) {
  if (d->origin() != page_origin::unbuilt) return;
  record_header h = d->hdr;
  h.magic = record_magic;
  h.checksum = record_checksum(h, zero_page_.get(), page_size_);
  store_.put_page(d->page, h, zero_page_.get(), nullptr);
  d->hdr = h;
  d->stored();
  ++stats_.pages_written;
}

void pager::count_refetch(page_desc* d) {
  if (d->evicted_in != transaction_ && (evicted_now_.empty() || evicted_now_.erase(d->page) == 0)) return;
  ++stats_.refetches;
  // One line, once per open, when the transaction has fetched again more
  // pages than the pool holds: it is thrashing, and the fix is one option.
  if (++refetches_now_ <= pool_.size() || warned_thrashing_) return;
  warned_thrashing_ = true;
  std::fprintf(stderr,
               "qs: database %s: the pool of %u pages (%u MiB) is smaller than this transaction's working set: "
               "%" PRIu64
               " pages were fetched again after being evicted; open it with a larger "
               "qs::options::pool_pages (e.g. %u) to fetch each page once\n",
               store_.name().c_str(), pool_.size(),
               static_cast<unsigned>(std::uint64_t{pool_.size()} * page_size_ >> 20), refetches_now_, pool_.size() * 4);
}

void pager::evict(page_desc* d) {
  ++stats_.evictions;
  d->evicted_in = transaction_;
  // The frame goes first: once unmapped, no other thread can still be
  // writing to the page while its changes are diffed from the pool's copy.
  bool writable = d->state() == page_state::writable;
  const bool write_back_now = writable || log_.relocate_pending(d);
  hide_leaving(d, write_back_now);
  if (write_back_now) {
    if (writable) ++stats_.dirty_evictions;
    try {
      // One-time relocation writes a page it rewrote back; a page server
      // may be lost. A pointer word that may not be stored makes the page
      // a suspect, which the commit looks at again.
      write_back(d, writable ? pointer_checking::note_suspect : pointer_checking::none);
    } catch (...) {
      access_.show(d, writable);  // still resident: its frame shows its slot again
      throw;
    }
    log_.relocation_written(d);
    if (writable) {
      log_.forget_saved(d);
      log_.remove_written(d);
      pause_point("evict.dirty_written");
    }
  }
  release_slot(d);
}

bool pager::may_forget(page_desc* d) const {
  if (!frames_.forgettable(d)) return false;
  auto gone = [&](page_desc* p) {
    return p && !p->resident() && !p->is_new() && p->prefetched_by == prefetch_source::none && !log_.refers_to(p);
  };
  if (d->run_pages() == 1) return gone(d);
  for (std::uint32_t i = 0; i < d->run_pages(); ++i)
    if (!gone(table_.by_page(d->run_first() + i))) return false;
  return true;
}

void pager::forget_evicted() {
  // The entry goes after its page, so that the table holds what is
  // resident (and what is away from home): the page comes back through its
  // home frame. What the transaction knows of it is by page number.
  for (std::uint64_t page : to_forget_) {
    page_desc* d = table_.by_page(page);
    if (!d || !may_forget(d)) continue;
    const std::uint64_t first = d->run_first();
    const std::uint32_t pages = d->run_pages();
    if (pages == 1 && d->hdr.magic == record_magic && d->hdr.kind == page_kind::small) frames_.note_small(page);
    for (std::uint32_t i = 0; i < pages; ++i) {
      page_desc* p = table_.by_page(first + i);
      if (p->evicted_in == transaction_) evicted_now_.insert(p->page);
      frames_.give_back(p->frame, 1);
      table_.erase(p);
    }
  }
  to_forget_.clear();
}

void pager::hide_leaving(page_desc* d, bool read_after) {
  // Releasing the frame (release_slot) hides the page in hardware mode, and
  // unmaps a frame mapping the store's file with no copy of its bytes (it
  // holds nothing the file does not): hidden first only when its bytes are
  // still to be read.
  const bool mapped = access_.frames().file_mapped(d->frame);
  if (!read_after && (page_access::release_hides || mapped)) return;
  // A frame mapping the file is read where it is (view()): made read-only,
  // no thread can change it while it is read, and its bytes are not
  // copied back into the frame's memory first.
  if (mapped) access_.set_access(d, false);
  else access_.hide(d);
}

void pager::evict_clean(page_desc* d) {
  hide_leaving(d, false);
  log_.forget_saved(d);
  release_slot(d);
}

void pager::evict_all_clean() {
  // The helper stops first: a populate of frames the program has since
  // reached, still under way, would give memory back to frames released
  // below.
  const auto [first, end] = fresh_.drop();
  table_.for_each([&](page_desc* d) {
    if (d->resident()) evict_clean(d);
  });
  // The frames populated for new pages to come give their memory back too.
  for (std::uint64_t f = first; f < end; ++f) {
    const page_desc* d = table_.by_frame(f);
    if (!d || !d->resident()) access_.frames().release(f);
  }
}

void pager::discard(page_desc* d) {
  if (d->resident()) {
    hide_leaving(d, false);
    release_slot(d);
  }
  log_.forget(d);
}

void pager::drop(page_desc* d) {
  discard(d);
  frames_.give_back(d->frame, 1);
  table_.erase(d);
}

void pager::mark_all_stale() {
  bool any = false;
  pool_.for_each_page([&](page_desc* d) {
    if (d->state() == page_state::readable) {
      left_unused(d);
      d->made_stale();
    }
    any = true;
  });
  if (any) access_.hide_all();
}

void pager::apply_invalidations() {
  bool all = store_.take_invalidations(invalidated_) || revalidate_all_;
  revalidate_all_ = false;
  for (const store::invalidation& i : invalidated_) {
    page_desc* d = table_.by_page(i.page);
    if (!d || d->state() != page_state::readable) continue;  // absent, or revalidated anyway
    if (i.version != store::removed_version && d->hdr.version >= i.version) continue;
    left_unused(d);
    d->made_stale();
    access_.hide(d);
  }
  invalidated_.clear();
  if (all) mark_all_stale();
}

namespace {

// Read, or could have been, by the open transaction: accessible, and not a
// page prefetched and still watched for its first touch.
bool accessible(const page_desc* d) {
  return (d->state() == page_state::readable && d->prefetched_by == prefetch_source::none) ||
         d->state() == page_state::writable;
}

}  // namespace

bool pager::could_have_read(std::uint64_t page, std::uint64_t version) const {
  const page_desc* d = table_.by_page(page);
  return d && accessible(d) && (version == store::removed_version || d->hdr.version < version);
}

std::string pager::invalidated_in_transaction() {
  bool all = store_.take_invalidations(invalidated_);
  if (all) {
    // Every cached page is to be revalidated: pages read untracked cannot
    // be vouched for. (The next begin revalidates them.)
    invalidated_.clear();
    revalidate_all_ = true;
    if (!store_.wrote()) return {};
    bool any = false;
    pool_.for_each_page([&](page_desc* d) { any = any || (accessible(d) && !d->is_new()); });
    if (any) return "the store can no longer tell which cached pages other clients changed (it reconnected)";
    return {};
  }
  // A transaction that wrote nothing read one snapshot: it stands.
  if (!store_.wrote()) return {};
  for (const store::invalidation& i : invalidated_)
    if (i.refuses && could_have_read(i.page, i.version))
      return "page " + std::to_string(i.page) + " (version " + std::to_string(table_.by_page(i.page)->hdr.version) +
             " in this client's cache) was changed by another client's commit while this transaction ran";
  return {};
}

void pager::committed() {
  ++transaction_;
  predict_writes_.end();
  refetches_now_ = 0;
  evicted_now_.clear();
  for (std::uint64_t page : frames_.take_unread()) to_forget_.push_back(page);
  for (page_desc* d : log_.written()) d->made_readable();
  access_.set_access(log_.written(), false);
  release_before_images(log_.written().size());
}

void pager::release_before_images(std::size_t written) {
  // The next transaction's pages take the same entries again. After a
  // transaction that wrote many pages, their memory is offered back (one
  // call), so that memory follows the pages written when the machine needs it.
  pool_.forget_before_images();
  if (written >= 1024) pool_.offer_before_images();
}

void pager::aborted() {
  ++transaction_;
  predict_writes_.end();
  refetches_now_ = 0;
  evicted_now_.clear();
  for (std::uint64_t page : frames_.take_unread()) to_forget_.push_back(page);
  for (page_desc* d : std::vector<page_desc*>(log_.written())) {
    if (log_.is_logged(d)) {
      // Its resident image came back from the store transaction: forget it.
      evict_clean(d);
      continue;
    }
    if (d->undo() == undo_kind::page) std::memcpy(image(d), before_image(d), page_size_);
    log_.put_back_saved(d, image(d));
    d->made_readable();
    access_.set_access(d, false);
  }
  for (page_desc* d : log_.logged())
    if (d->resident()) evict_clean(d);
  release_before_images(log_.written().size());
}

}  // namespace qs::detail
