// core/page_table.hpp: what the runtime knows about each page it has seen, and the
// page's lifecycle as a state machine.
//
// A page_desc exists for every page this process has faulted in, created or
// looked up since the database was opened (or since its frames were last
// reset), unless it was a small page at its home frame and has left the
// pool since (pager::forget_evicted; it comes back through its home frame,
// relocator.hpp). It is found by page number or by frame.
//
// Residency (page_state), changed only by the pager through the transition
// functions below, which refuse (as a runtime bug) any transition the
// diagram does not have:
//
//        load / build                begin (shared store)
//   absent ──────────► readable ─────────────────► stale
//     ▲                 │   ▲    ◄─────────────────  │
//     │   make_writable │   │ commit, abort   revalidate
//     │                 ▼   │
//     └──── evict ──── writable
//   (evict from any resident state)
//
// Where the page's record is (page_origin): `stored` pages have a record;
// pages created by the open transaction are `unbuilt` until their image is
// first built in a slot, then `built`, and `stored` once written to the
// store transaction.
//
// How a writable page's changes are found and undone (undo_kind): `page`,
// the pool's before-image of its slot holds the page as of its first write;
// `objects` (software mode), the before-images of the objects announced with
// qs::write, kept by the transaction log; `none`, the page is written whole
// (it is new, or its image was rewritten when it came in), and abort
// forgets it.
//
// Invariants (kept by the transition functions):
//  * state != absent  <=>  slot >= 0.
//  * undo != none  =>  state == writable.
//  * origin == unbuilt  =>  state == absent.
//  * The transaction membership (written list, software-mode pin,
//    one-time relocation, saved objects) is the transaction log's, in the
//    fields only it touches.
//
// Thread-safety: none; the runtime's lock guards every page_desc.
#pragma once

#include "core/page_format.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs::detail {

enum class page_state : std::uint8_t { absent, readable, stale, writable };
enum class page_origin : std::uint8_t { stored, unbuilt, built };
enum class undo_kind : std::uint8_t { none, objects, page };
// Which prefetch read a page ahead of use (pager.hpp).
enum class prefetch_source : std::uint8_t { none, page_order, pointers };

// Software mode: the before-image of one object written in the open
// transaction (its payload offset and size in the page, and where its bytes
// are in the transaction log's arena).
struct saved_object {
  std::uint32_t offset;
  std::uint32_t size;
  std::size_t at;
};

[[noreturn]] inline void page_state_bug(std::uint64_t page, const char* what) noexcept {
  std::fprintf(stderr, "qs: runtime bug: page %llu: %s\n", static_cast<unsigned long long>(page), what);
  std::abort();
}

class page_desc {
 public:
  page_desc(std::uint64_t page_number, std::uint64_t frame_number, std::uint64_t first, std::uint32_t pages)
      : page(page_number), frame(frame_number), run_first_(first), run_pages_(pages) {}

  // Identity: the page, its frame in this process, and the run of frames it
  // belongs to (the page alone, or every page of its large object, whose
  // frames stay contiguous). The run is widened once, by the page table,
  // when a page reached through its home frame turns out to be a large
  // object's (relocator::widen).
  const std::uint64_t page;
  const std::uint64_t frame;
  std::uint64_t run_first() const { return run_first_; }
  std::uint32_t run_pages() const { return run_pages_; }
  bool is_run_head() const { return run_first_ == page; }

  // The record: its header as last read or as it will be written, and its
  // mapping object as stored.
  record_header hdr{};
  std::string mapping;

  // The replacement policy's reference bit (set on every use).
  bool referenced = false;
  // The pager's: the page was read ahead by prefetch and not touched since
  // (none otherwise). Its frame stays hidden until the first touch, which
  // counts it used; a page that leaves unused counts against its source.
  prefetch_source prefetched_by = prefetch_source::none;
  // The replacement policy passed the page over once for being dirty.
  bool spared = false;
  // The pager's number of the transaction that last evicted the page (0:
  // none), to count pages fetched again by the transaction that evicted them.
  std::uint64_t evicted_in = 0;

  page_state state() const { return state_; }
  bool resident() const { return state_ != page_state::absent; }
  std::uint32_t slot() const { return static_cast<std::uint32_t>(slot_); }
  page_origin origin() const { return origin_; }
  bool is_new() const { return origin_ != page_origin::stored; }
  undo_kind undo() const { return undo_; }
  // Its image differs from its record beyond what the program wrote (vptrs
  // or pointers rewritten when it came in): it is written whole.
  bool rewritten() const { return rewritten_; }
  // Whether every change to the page will be logged without saving objects:
  // it is written whole, or diffed against a page before-image.
  bool whole_page_logged() const { return undo_ == undo_kind::page || is_new() || rewritten_; }
  // Whether the pager must make d writable (take its page before-image)
  // before the runtime changes it anywhere: it is not writable yet, or only
  // its saved objects would be diffed.
  bool needs_page_before() const { return state_ != page_state::writable || !whole_page_logged(); }
  // Software mode: pinned in the pool until the transaction ends.
  bool pinned() const { return pinned_; }

  // Transitions (the pager's).
  void created() { origin_ = page_origin::unbuilt; }
  void built(std::uint32_t slot) {
    if (state_ != page_state::absent || origin_ != page_origin::unbuilt) page_state_bug(page, "built twice");
    slot_ = static_cast<std::int32_t>(slot);
    origin_ = page_origin::built;
    state_ = page_state::writable;
  }
  void loaded(std::uint32_t slot) {
    if (state_ != page_state::absent || origin_ == page_origin::unbuilt) page_state_bug(page, "loaded while resident");
    slot_ = static_cast<std::int32_t>(slot);
    state_ = page_state::readable;
  }
  void made_writable(undo_kind u) {
    if (state_ != page_state::readable) page_state_bug(page, "made writable from a state other than readable");
    state_ = page_state::writable;
    undo_ = u;
  }
  // A writable page's before-image is now its whole page.
  void took_page_before() {
    if (state_ != page_state::writable) page_state_bug(page, "page before-image of a page not writable");
    undo_ = undo_kind::page;
  }
  void made_readable() {
    if (state_ != page_state::writable) page_state_bug(page, "made readable from a state other than writable");
    state_ = page_state::readable;
    undo_ = undo_kind::none;
  }
  void made_stale() {
    if (state_ != page_state::readable) page_state_bug(page, "made stale from a state other than readable");
    state_ = page_state::stale;
  }
  void revalidated() {
    if (state_ != page_state::stale) page_state_bug(page, "revalidated while not stale");
    state_ = page_state::readable;
  }
  void evicted() {
    if (state_ == page_state::absent) page_state_bug(page, "evicted while absent");
    state_ = page_state::absent;
    slot_ = -1;
    undo_ = undo_kind::none;
  }
  void stored() {
    if (origin_ == page_origin::unbuilt && state_ != page_state::absent) page_state_bug(page, "stored unbuilt");
    origin_ = page_origin::stored;
    rewritten_ = false;
  }
  void mark_rewritten() { rewritten_ = true; }

 private:
  friend class transaction_log;
  friend class page_table;

  std::uint64_t run_first_;
  std::uint32_t run_pages_;
  page_state state_ = page_state::absent;
  page_origin origin_ = page_origin::stored;
  undo_kind undo_ = undo_kind::none;
  bool rewritten_ = false;
  std::int32_t slot_ = -1;

  // The transaction log's.
  bool pinned_ = false;
  bool relocate_pending_ = false;
  bool written_ = false;
  std::size_t written_pos_ = 0;
  std::vector<saved_object> saved_;
  std::vector<std::uint64_t> saved_at_;  // bit k: an object at offset 8k is saved
};

// A sparse map from page or frame numbers to slots (a descriptor, and
// what the fault path reads beside it), for the lookups of the fault path (a
// mapping object names hundreds of pages): slots in chunks of 512
// consecutive numbers, found through a table of chunks indexed by chunk
// number (8 bytes for each 512 numbers below the highest one used, up to
// 2^30 numbers), past it through a small hash map of chunks, with the last
// chunk remembered. A chunk stays once made. Memory follows the numbers
// used, never their size: a page's lookup in a database of millions of
// pages costs a load from the table, not a hash map's search through
// nodes scattered over the heap.
template <class Slot>
class sparse_index {
 public:
  Slot find(std::uint64_t key) const {
    const std::uint64_t c = key >> chunk_bits;
    if (!last_ || c != last_key_) {
      const slots* chunk = chunk_of(c);
      if (!chunk) return Slot{};
      last_key_ = c;
      last_ = chunk;
    }
    return (*last_)[key & chunk_mask];
  }
  void set(std::uint64_t key, Slot d) {
    const std::uint64_t c = key >> chunk_bits;
    std::unique_ptr<slots>* chunk;
    if (c < dense_chunks) {
      if (c >= table_.size()) table_.resize(std::max<std::size_t>(c + 1, 2 * table_.size()));
      chunk = &table_[c];
    } else {
      chunk = &far_[c];
    }
    if (!*chunk) *chunk = std::make_unique<slots>();
    (**chunk)[key & chunk_mask] = d;
  }
  void clear() {
    table_.clear();
    far_.clear();
    last_ = nullptr;
  }

 private:
  static constexpr unsigned chunk_bits = 9;
  static constexpr std::uint64_t chunk_mask = (std::uint64_t{1} << chunk_bits) - 1;
  static constexpr std::uint64_t dense_chunks = std::uint64_t{1} << (30 - chunk_bits);
  using slots = std::array<Slot, std::size_t{1} << chunk_bits>;
  const slots* chunk_of(std::uint64_t c) const {
    if (c < table_.size()) return table_[c].get();
    if (c < dense_chunks) return nullptr;
    auto it = far_.find(c);
    return it == far_.end() ? nullptr : it->second.get();
  }
  std::vector<std::unique_ptr<slots>> table_;  // chunks below dense_chunks
  std::unordered_map<std::uint64_t, std::unique_ptr<slots>> far_;
  mutable std::uint64_t last_key_ = 0;
  mutable const slots* last_ = nullptr;
};

// What the page index keeps of a page: its descriptor, and the first frame
// of its run, so that the fault path finds where a run lies without
// touching the descriptor (a cache miss per mapping entry, hundreds a
// fault, in a table of millions).
struct page_slot {
  page_desc* d = nullptr;
  std::uint64_t head_frame = 0;
};

class page_table {
 public:
  page_desc* by_page(std::uint64_t page) const { return page_index_.find(page).d; }
  page_slot slot_of_page(std::uint64_t page) const { return page_index_.find(page); }
  page_desc* by_frame(std::uint64_t frame) const { return frame_index_.find(frame); }
  // The first page of the run d belongs to.
  page_desc* run_head(page_desc* d) const { return d->is_run_head() ? d : by_page(d->run_first()); }
  // Makes d (a page alone) page `d->page - first` of the run {first, pages}.
  void set_run(page_desc* d, std::uint64_t first, std::uint32_t pages) {
    d->run_first_ = first;
    d->run_pages_ = pages;
    page_index_.set(d->page, {d, d->frame - (d->page - first)});
  }
  page_desc* add(std::uint64_t page, std::uint64_t frame, std::uint64_t run_first, std::uint32_t run_pages) {
    if (by_page(page) || by_frame(frame)) page_state_bug(page, "added to the page table twice");
    auto d = std::make_unique<page_desc>(page, frame, run_first, run_pages);
    page_desc* p = d.get();
    pages_[page] = std::move(d);
    page_index_.set(page, {p, frame - (page - run_first)});
    frame_index_.set(frame, p);
    return p;
  }
  void erase(page_desc* d) {
    frame_index_.set(d->frame, nullptr);
    page_index_.set(d->page, {});
    pages_.erase(d->page);
  }
  void clear() {
    frame_index_.clear();
    page_index_.clear();
    pages_.clear();
  }
  std::size_t size() const { return pages_.size(); }
  template <class F>
  void for_each(F f) {
    for (auto& [k, d] : pages_) f(d.get());
  }

 private:
  std::unordered_map<std::uint64_t, std::unique_ptr<page_desc>> pages_;  // owns them
  sparse_index<page_slot> page_index_;
  sparse_index<page_desc*> frame_index_;
};

}  // namespace qs::detail
