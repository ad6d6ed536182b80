// database_impl.hpp: the state of one open database, and the operations the
// mechanisms in paging.cpp, allocator.cpp, transaction.cpp and roots.cpp
// perform on it.
//
// One mutex guards everything here. Entry points (the fault handler, the
// allocation functions, transaction begin/commit/abort, roots) take it; the
// functions they call assume it is held. While holding it, the runtime reads
// and writes pages only through the buffer pool's addresses, never through
// their frames, so it cannot fault on its own lock.
//
// Invariants (beyond those of the parts):
//  * txn_open_ <=> the store has a transaction open.
//  * written_ lists every page made writable in the open transaction that is
//    still resident; a page evicted while writable has had its changes
//    written to the store transaction.
//  * Page and frame numbers come from store::allocate_pages.
//  * With a shared store, a page kept resident from an earlier transaction is
//    `stale` from begin() until it is revalidated (make_current): its frame
//    is inaccessible, so the program's first touch faults, and the runtime
//    calls make_current before reading its image itself.
#pragma once

#include "buffer_pool.hpp"
#include "frame_map.hpp"
#include "os/fault_signal.hpp"
#include "os/frames.hpp"
#include "page_heap.hpp"
#include "page_table.hpp"
#include "schema_registry.hpp"
#include "store.hpp"

#include <qs/database.hpp>
#include <qs/error.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs::detail {

struct index_entry;

class database_impl final : public fault_target {
 public:
  database_impl(std::unique_ptr<store> s, const options& opts);
  ~database_impl();

  // fault_target
  void on_fault(void* address, bool write) override;

  // Transactions (transaction.cpp)
  void begin();
  void commit();
  void abort();
  void abort_locked();
  bool in_transaction() const { return txn_open_; }

  // Allocation (allocator.cpp)
  void* allocate(const type_descriptor* d, std::size_t bytes, const void* near_object);
  void* allocate_locked(const type_descriptor* d, std::size_t bytes, const void* near_object);
  void deallocate(void* p);

  // Indexes (index.cpp)
  std::uint32_t open_index(const std::string& name, bool unique);
  void index_insert(std::uint32_t ix, const std::string& name, std::string_view key, std::string_view value);
  bool index_erase(std::uint32_t ix, std::string_view key, std::string_view value);
  // The stored location of the reference whose bytes qs::index passes.
  std::string location_of_ref(std::string_view value);
  std::vector<index_entry> index_scan(std::uint32_t ix, std::string_view lo, std::string_view hi, std::size_t limit);

  // Roots (roots.cpp)
  // Rewrites the records of the roots used here whose cells moved.
  void update_roots();
  // Software mode: root cells are written through the C++ reference
  // root<T>() returns, not through qs::write. Each cell handed out in a
  // transaction keeps its bytes as they were; commit announces the cells that
  // differ (with those bytes as their before-images) and abort puts them back.
  void announce_changed_roots();
  void restore_roots();
  void* root_cell(std::string_view name, const type_descriptor* d, std::size_t size, const std::type_info& t);
  bool has_root(std::string_view name);

  void release_cache();
  bool contains(const void* p) const {
    return frames_->contains(p) || (software_swizzling && pool_->memory().contains(p));
  }
  std::uint32_t page_size() const { return page_size_; }
  const std::string& name() const { return store_->name(); }
  statistics stats() const {
    std::lock_guard<std::mutex> g(mutex_);
    return stats_;
  }
  store& backing_store() { return *store_; }

  // Software mode (residency.cpp): the entry points of qs/ref.hpp.
  void* sw_resolve(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write);
  void sw_identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag);
  // Makes this the database qs::ref resolves in.
  void make_current_database();

 private:
  friend class lock_scope;
  // residency.cpp: how the program reaches a resident page. Hardware mode:
  // through its frame, mapped with the protection its state allows.
  // Software mode: through the residency table, at the page's pool slot
  // (small pages) or at its frames, mapped read-write (large objects, which
  // must be contiguous); nothing is ever protected.
  //
  // The page came into its slot.
  void show(page_desc* d, bool writable);
  // The page leaves its slot (or must be revalidated before the next use).
  void hide(page_desc* d);
  // The resident page's access becomes `writable` (or read-only).
  void set_access(page_desc* d, bool writable);
  // Every resident page must be revalidated before its next use.
  void hide_all();
  // Where the program sees the bytes of page d (a run's head for a large
  // object).
  std::byte* address(const page_desc* d) const {
    if (software_swizzling && d->hdr.kind == page_kind::small) return image(d);
    return frame_address(d);
  }
  page_desc* find_page_of(const void* p);
  // Software mode: the page's descriptor (a large object's head, with frames
  // for its whole run), its run resident and current; throws
  // qs::dangling_reference when the page cannot hold objects a reference
  // names.
  page_desc* sw_locate(std::uint64_t page);
  void* resolve_locked(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write);
  void identify_locked(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag);
  void set_resident(std::uint64_t page, std::byte* at);
  // Records the before-image of the object at `offset` of page d, which
  // becomes writable (software mode).
  void save_object(page_desc* d, std::uint32_t offset);
  // Copies the before-images of the objects saved on d into the page image
  // `into` (d's own, or its page before-image), and forgets them.
  void put_back_saved(page_desc* d, std::byte* into);
  // Makes the object at `offset` of the run headed by h writable: its
  // before-image saved, or a large object's pages logged whole.
  void announce_write(page_desc* h, std::uint32_t offset);
  void forget_current_database();
  // Software mode: keeps d in the pool until the transaction ends, so that
  // the addresses references gave stay valid.
  void pin_for_transaction(page_desc* d) {
    if (!software_swizzling || d->txn_pinned) return;
    d->txn_pinned = true;
    ++d->pins;
    txn_pinned_.push_back(d);
  }
  void unpin_transaction_pages();
  // Whether every change to the writable page d will be logged: it is
  // written whole, or diffed against a page before-image. (Otherwise only its
  // saved objects are diffed.)
  bool whole_page_logged(const page_desc* d) const { return d->has_before || d->is_new || d->rewritten; }
  // Whether the runtime must call make_writable before changing d anywhere.
  bool needs_page_image(const page_desc* d) const {
    return d->state != page_state::writable || !whole_page_logged(d);
  }

  // paging.cpp
  page_desc* find_frame(std::uint64_t frame);
  void page_in(page_desc* d);
  // Brings d's image up to date for the open transaction: faults it in when
  // absent, revalidates it with the store when stale.
  void make_current(page_desc* d);
  void revalidate(page_desc* d);
  // Checks a record read from the store for d (magic, checksum, frame) and
  // takes its header; throws qs::corrupt_page.
  void accept_record(page_desc* d, const record_header& h, std::byte* img);
  // Takes d's before-image (taking in the objects saved on it so far) and
  // makes it writable.
  void make_writable(page_desc* d);
  // The written list: add, and remove in constant time (swap with the last).
  void add_written(page_desc* d) {
    d->written_pos = written_.size();
    written_.push_back(d);
  }
  void remove_written(page_desc* d) {
    page_desc* last = written_.back();
    written_[d->written_pos] = last;
    last->written_pos = d->written_pos;
    written_.pop_back();
  }
  void evict(page_desc* d);
  // Forgets a resident page's image without writing it.
  void evict_clean(page_desc* d);
  // evict_clean() for every resident page (between transactions).
  void evict_all_clean();
  std::uint32_t take_slot(page_desc* d);
  // Forgets a page's image and every transaction list it is on; it stays in
  // the page table with its frame.
  void discard(page_desc* d);
  // discard(), and the page leaves the page table, its frame free again.
  void drop(page_desc* d);
  void write_back(page_desc* d);
  void fix_vptrs(page_desc* d, std::byte* image);
  std::byte* image(const page_desc* d) const { return pool_->data(static_cast<std::uint32_t>(d->slot)); }
  std::byte* before_image(const page_desc* d) const { return pool_->before(static_cast<std::uint32_t>(d->slot)); }
  std::byte* frame_address(const page_desc* d) const { return frames_->frame_address(d->frame); }
  template <class F>
  void for_each_word(const page_desc* d, const std::byte* img, F f);

  // relocation.cpp
  // The first page of the run (large object) d belongs to.
  page_desc* run_head(page_desc* d) { return d->run_first == d->page ? d : table_.by_page(d->run_first); }
  // The page run {page, pages} that was at `address` when a pointer to it
  // was stored: its head in this process, given frames now if it has none
  // (its old ones when they are free). Throws qs::reservation_full.
  page_desc* ensure_run(std::uint64_t address, std::uint64_t page, std::uint32_t pages);
  // Frames for a run of n new pages, near `hint` when free there.
  std::uint64_t take_frames(std::uint64_t hint, std::uint64_t n);
  // Decodes d's mapping object (read with its record) and rewrites the
  // pointers of its image `img` into runs that moved.
  void relocate(page_desc* d, std::byte* img);
  // d's mapping object as its pointers are now: the new one, for the write of
  // d's record, when it changed; nullptr when it did not.
  const std::string* update_mapping(page_desc* d, const std::byte* img);
  // A persistent address as (page, offset in its run, run length, run
  // address), and back: how roots and indexes keep references that survive
  // relocation.
  // (Software mode: the object's identifier, with its page's objects
  // resident when decoded.)
  std::string encode_location(const void* p);
  void* decode_location(std::string_view s);
  // Software mode: a location from an object identifier, and back.
  std::string encode_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag);
  void decode_identity(std::string_view s, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag);
  // Between transactions, when the reservation runs short: forget every
  // frame assignment (the pool is emptied).
  void reset_frames();

  // allocator.cpp
  // A new page; its numbers from the store, or `at` when given.
  page_desc* new_page(page_kind kind, const store::page_range* at = nullptr);
  void* allocate_small(std::uint32_t type, std::uint32_t payload, std::uint32_t align, const void* near_object);
  void* allocate_large(std::uint32_t type, std::uint64_t payload);
  void* try_allocate_on(page_desc* d, std::uint32_t type, std::uint32_t payload, std::uint32_t align);
  void note_free_space(page_desc* d);
  void load_free_space();

  // transaction.cpp
  // Checks that every pointer word on d is null or persistent. Throws
  // qs::transient_pointer, or returns false when `throw_on_violation` is off.
  bool check_pointers(page_desc* d, bool throw_on_violation);
  void require_transaction(const char* what) const;

  void load_or_create(const options& opts);

  std::unique_ptr<store> store_;
  std::uint32_t page_size_;
  bool durable_;
  mutable std::mutex mutex_;
  std::unique_ptr<frame_space> frames_;
  std::unique_ptr<frame_map> free_frames_;  // which frames of frames_ are taken
  relocation policy_;
  unsigned force_relocation_percent_;
  std::vector<page_desc*> relocated_;  // one-time relocation: to write back
  std::unique_ptr<buffer_pool> pool_;
  page_table table_;
  schema_registry schema_;
  statistics stats_;

  bool txn_open_ = false;
  std::vector<page_desc*> written_;
  std::vector<page_desc*> created_;  // pages created by the open transaction
  std::set<page_desc*> logged_;      // pages written to the store transaction
  std::set<page_desc*> suspect_;     // evicted holding a non-persistent pointer
  std::uint64_t txn_log_start_ = 0;

  // Allocator state: the page new objects go to, and pages with room.
  std::uint64_t current_page_ = 0;
  struct room_entry {
    std::uint64_t frame;
    std::uint32_t room;  // bytes available
  };
  std::map<std::uint64_t, room_entry> free_space_;            // by page
  std::set<std::pair<std::uint32_t, std::uint64_t>> by_room_;  // (bytes, page)
  std::set<std::uint64_t> free_space_dirty_;
  // Roots used in this process: the cell's location and type, and its
  // address (hardware mode; in software mode the cell is found again each
  // time, as its page may have left the pool).
  struct root_entry {
    std::string location;
    std::string type;
    void* cell;
  };
  std::unordered_map<std::string, root_entry> roots_;
  struct root_read {
    void* cell;
    std::string before;
  };
  std::vector<root_read> root_reads_;  // software mode, this transaction
  // Software mode: the residency table (page number -> address or null),
  // and the before-images of the objects written in the transaction.
  std::vector<std::byte*> resident_;
  std::vector<page_desc*> txn_pinned_;
  std::vector<std::byte> saved_bytes_;
  std::unique_ptr<std::byte[]> zero_page_;

};

// Holds a database's mutex and marks the thread as inside the runtime.
class lock_scope {
 public:
  explicit lock_scope(const database_impl& db);
  ~lock_scope();
  static bool held() noexcept;

 private:
  std::unique_lock<std::mutex> lock_;
};

database_impl* database_of(const void* p) noexcept;

// Calls f(page_offset, is_vptr, layout, which) for every pointer word and
// vptr on the page image `img` of d (`which` indexes layout.pointers or
// layout.vptrs).
template <class F>
void database_impl::for_each_word(const page_desc* d, const std::byte* img, F f) {
  auto visit = [&](const type_layout& l, std::uint64_t obj_begin, std::uint64_t elems, std::uint64_t lo,
                   std::uint64_t hi, std::int64_t shift) {
    // Words of elements [0, elems) of an object at obj_begin whose object
    // offset lies in [lo, hi); page offset = object offset + shift.
    if (l.pointers.empty() && l.vptrs.empty()) return;
    std::uint64_t first = lo / l.size, last = std::min<std::uint64_t>(elems, (hi + l.size - 1) / l.size);
    for (std::uint64_t e = first; e < last; ++e) {
      std::uint64_t base = obj_begin + e * l.size;
      for (std::uint32_t i = 0; i < l.pointers.size(); ++i) {
        std::uint64_t w = base + l.pointers[i];
        if (w >= lo && w < hi) f(static_cast<std::uint32_t>(w + shift), false, l, i);
      }
      for (std::uint32_t i = 0; i < l.vptrs.size(); ++i) {
        std::uint64_t w = base + l.vptrs[i];
        if (w >= lo && w < hi) f(static_cast<std::uint32_t>(w + shift), true, l, i);
      }
    }
  };
  auto layout_or_throw = [&](std::uint32_t type) -> const type_layout& {
    const type_layout* l = schema_.layout(type);
    if (!l && store_->shared()) {
      // Another client may have added the type since the schema was loaded.
      schema_.load();
      l = schema_.layout(type);
    }
    if (!l)
      throw corrupt_page(d->page, "database " + name() + ": page " + std::to_string(d->page) +
                                      " holds an object of unknown type index " + std::to_string(type));
    return *l;
  };
  if (d->hdr.kind == page_kind::small) {
    heap_for_each(img, [&](std::uint32_t payload, const object_header& oh) {
      const type_layout& l = layout_or_throw(oh.type);
      visit(l, 0, oh.size / l.size, 0, oh.size, payload);
    });
    return;
  }
  // A page of a large object: object bytes [lo, hi) are on this page.
  const type_layout& l = layout_or_throw(d->hdr.type);
  constexpr std::uint64_t start = sizeof(page_header) + sizeof(object_header);
  std::uint64_t page_begin = std::uint64_t{d->hdr.index} * page_size_;
  std::uint64_t lo = page_begin > start ? page_begin - start : 0;
  std::uint64_t hi = std::min<std::uint64_t>(d->hdr.size, page_begin + page_size_ - start);
  if (lo >= hi) return;
  visit(l, 0, d->hdr.size / l.size, lo, hi, static_cast<std::int64_t>(start) - static_cast<std::int64_t>(page_begin));
}

}  // namespace qs::detail
