// core/pager.hpp: pages in and out of the buffer pool.
//
// The pager brings a page's record into its frame's memory, under a pool
// slot (checking it and rewriting its vptrs and pointers), makes a page
// writable (taking its before-image), writes a page's changes to the store
// transaction (diffing it against its before-image), and evicts pages to
// make room (QuickStore's clock, buffer_pool.hpp), writing a dirty victim's
// changes first. It is the only component that moves a page_desc through
// its states (page_table.hpp), and it tells page_access of every move so the
// program sees the page as its state allows. A new page is built in its
// frame's memory, which a helper thread has most often given it already
// (fresh_frames.hpp).
//
// Invariants:
//  * A resident page's image (page_access::image) is its record, with vptrs
//    and pointers rewritten for this process, plus what the open
//    transaction wrote.
//  * A writable page is on the transaction log's written list; a page whose
//    changes went to the store transaction is on its logged list.
//  * A dirty page leaves the pool only after its changes are in the store
//    transaction.
//
// Depends on: store, buffer_pool, page_table, transaction_log, page_access,
// relocator, page_words, pointer_check, fresh_frames. Calls nothing above it.
//
// Thread-safety: none; the runtime's lock guards it (fresh_frames' helper
// thread touches none of its state).
#pragma once

#include "core/buffer_pool.hpp"
#include "core/fresh_frames.hpp"
#include "core/page_table.hpp"
#include "core/page_words.hpp"
#include "core/pointer_check.hpp"
#include "core/relocator.hpp"
#include "core/transaction_log.hpp"
#include "core/write_predictor.hpp"
#include "mode/page_access.hpp"
#include "store/store.hpp"

#include <qs/database.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace qs::detail {

class pager {
 public:
  pager(store& s, buffer_pool& pool, page_table& table, transaction_log& log, page_access& access, relocator& frames,
        page_words& words, pointer_check& pointers, statistics& stats, std::uint32_t page_size);

  std::byte* image(const page_desc* d) const { return access_.image(d); }
  const std::byte* before_image(const page_desc* d) const { return pool_.before(d->slot()); }
  std::uint32_t page_size() const { return page_size_; }

  // Brings d in: builds a new page's image, or reads its record. With
  // `writable`, a stored page comes writable (make_current).
  void page_in(page_desc* d, bool writable = false);
  // Brings d's image up to date for the open transaction: faults it in when
  // absent (and prefetches), revalidates it with the store when stale,
  // shows it when it was prefetched and this is its first touch.
  // `touched`: where in the page the program touched it, when known (a
  // fault's offset), to prefetch along the pointers near it first.
  // `writable`: an absent stored page comes writable (expects_write said
  // so), unless its image was rewritten as it came in (a writable one is
  // written back whole, changed or not): shown writable with the image
  // just read as its before-image, or, mapping the store's file, made
  // writable once mapped. A watched prefetched page is shown writable at
  // its first touch the same way. Counted in
  // statistics::writable_on_arrival.
  void make_current(page_desc* d, std::uint32_t touched = 0, bool writable = false);
  // Whether make_current has work to do for d before the program may read it.
  static bool needs_current(const page_desc* d) {
    return d->state() == page_state::absent || d->state() == page_state::stale ||
           d->prefetched_by != prefetch_source::none;
  }
  // Prefetch: after a fault reads a page, up to `pages` more pages that
  // have frames here and are absent are read ahead, checked, relocated and
  // shown, so that touching them costs no fault. Only free pool slots are
  // used: a guess never evicts a page, and an unused one is the first the
  // pool evicts. Some are watched: their frames stay hidden until the
  // first touch, which shows them with no store read (a fault, in hardware
  // mode) and counts them used (statistics::prefetch_watched,
  // prefetched_used). Where the commit checks what the transaction read
  // (store::checks_reads: a page server's serializable transactions) every
  // prefetched page is watched, and becomes part of what the transaction
  // read only at that touch; elsewhere (embedded, snapshot isolation, a
  // read replica) one in watch_every is. Each source's window adapts to what
  // its watched pages show: it halves while fewer than half of them are
  // used before they leave the pool (evicted, or stale), and doubles, up
  // to `pages`, while three quarters are; at 0 it reads one page every
  // 16th fault, to see whether that changed. Pointers start at 8 pages (a
  // short transaction does not pay for 32 guesses; page order's are its
  // neighbours, read in one pass). 0 turns prefetch off.
  // Which pages (`order`):
  //  * page_order: the block of `window` pages that holds the page,
  //    aligned on that size, in one store pass (physical clustering:
  //    objects allocated together share neighbouring pages; a program
  //    that jumps about a database it reads whole takes each block at one
  //    fault);
  //  * pointers: the pages the read page's pointers lead to, those of the
  //    pointers at and after the touched offset first (the object the
  //    program reached, then the ones after it), in one store call
  //    (read_pages: one round trip to a page server);
  //  * both: pointers first, then page order with the room left.
  // Software mode's pages hold references, not pointers: there, pointers
  // finds nothing and both is page order.
  void set_prefetch(std::uint32_t pages, prefetch_order order) {
    prefetch_ = pages;
    order_ = order;
    gauge(prefetch_source::page_order) = {pages, 0, 0, 0};
    gauge(prefetch_source::pointers) = {std::min(pages, first_window), 0, 0, 0};
  }
  // Whether stored pages may be shown by mapping the store's file
  // (options::map_page_file; show_stored).
  void set_map_files(bool on) { map_files_ = on; }
  // Whether expects_write may say yes (options::writable_on_arrival).
  void set_writable_on_arrival(bool on) { writable_on_arrival_ = on; }
  // Takes d's before-image (taking in the objects saved on it so far) and
  // makes it writable.
  void make_writable(page_desc* d);
  // A write fault on d, readable or absent until the fault (hardware mode):
  // made writable, its neighbours with it (make_writable_around), and the
  // write counted for write_predictor.
  void write_fault(page_desc* d);
  // A read fault at instruction `code` is about to bring d in, or to show a
  // watched prefetched page at its first touch (hardware mode): whether it
  // is to come writable (make_current), because the pages read in there
  // have mostly been written since (write_predictor), so that the write to
  // come takes no second fault.
  bool expects_write(const page_desc* d, const void* code);
  // After a write fault made d writable: the resident read-only pages of
  // d's block of write_ahead_pages pages whose before-image is their image
  // in the store's file (stored_image: nothing to copy) become writable
  // too, in one call per run of neighbouring frames (copied into their
  // frames or mapping the file alike), so that the program's next writes
  // there take no fault. One the transaction does not change
  // costs its commit a comparison with the file's image and nothing else
  // (write_back writes nothing for it). A gauge stops it for a while when
  // most of such pages go unchanged (write_gauge).
  void make_writable_around(const page_desc* d);
  // Software mode: d becomes writable with its objects saved one by one
  // (nothing is copied now).
  void make_writable_by_objects(page_desc* d);
  // How write_back checks d's pointer words first (pointer_check), where
  // d's before-image says what changed reading only the changed ones: not
  // at all; the commit's check, which throws when one may not be stored;
  // or an eviction's, which makes such a page a suspect that the commit
  // looks at again (transaction_log::add_suspect).
  enum class pointer_checking { none, refuse, note_suspect };
  // Writes d's changes (or its whole image) to the store transaction,
  // after the check `checking` says.
  void write_back(page_desc* d, pointer_checking checking = pointer_checking::none);
  // The pages created by the open transaction whose image was never built
  // (pages of a large object nobody touched) get their records.
  void store_unbuilt(page_desc* d);

  // Evicts d, writing its changes first when it is dirty.
  void evict(page_desc* d);
  // Forgets a resident page's image without writing it.
  void evict_clean(page_desc* d);
  // Hides a page about to leave the pool; `read_after`: its image is read
  // before its slot is released.
  void hide_leaving(page_desc* d, bool read_after);
  // evict_clean() for every resident page (between transactions).
  void evict_all_clean();
  // Drops the entries of pages evicted since the last call that may go
  // (may_forget). Called where no caller holds a page_desc: at the start of
  // a fault, and between transactions.
  void forget_evicted();
  // Forgets a page's image and every transaction list it is on; it stays in
  // the page table with its frame.
  void discard(page_desc* d);
  // discard(), and the page leaves the page table, its frame free again.
  void drop(page_desc* d);

  // A transaction begins on a shared store: every resident page must be
  // revalidated before its next use.
  void mark_all_stale();
  // A transaction begins on a coherent store (store.hpp): the pages other
  // clients changed are revalidated before their next use; the others stay
  // as they are.
  void apply_invalidations();
  // Before a commit on a coherent store: why a page the transaction may
  // have read (resident and accessible) is invalid now, or nothing. The
  // invalidations are applied at the next begin.
  std::string invalidated_in_transaction();
  // Whether the open transaction could have read the cached `page` at a
  // version older than `version` (resident and accessible, not a prefetched
  // page still waiting for its first touch).
  bool could_have_read(std::uint64_t page, std::uint64_t version) const;
  // The open transaction committed: written pages become read-only.
  void committed();
  // The open transaction aborted: written pages get their before-images
  // back, or are forgotten when their changes reached the store transaction.
  void aborted();

  std::uint32_t pool_pages() const { return pool_.size(); }

 private:
  // d goes on the transaction's written list; the transaction's first
  // tells the store that writes are coming (store::writes_coming).
  void add_written(page_desc* d);
  // Where d's stored image can serve as its before-image (its store's
  // read-only mapping of the page file), or nullptr: the before-image is
  // then a copy.
  const std::byte* stored_image(const page_desc* d);
  std::uint32_t take_slot(page_desc* d);
  void revalidate(page_desc* d);
  // Checks a record read from the store for d (magic, checksum, run) and
  // takes its header; throws qs::corrupt_page.
  void accept_record(page_desc* d, const record_header& h, std::byte* img, std::string mapping_object);
  void fix_vptrs(page_desc* d, std::byte* img);
  void release_slot(page_desc* d);
  // A slot goes back to the pool and the memory of the frame whose image it
  // held to the kernel: the two always go together.
  void free_slot(std::uint32_t slot, std::uint64_t frame);
  // A page coming in writable (page_in, first_use), before it is shown:
  // `img`, its image as it came, is its before-image; it is added to the
  // pages written and counted in statistics::writable_on_arrival.
  void arrive_writable(page_desc* d, const std::byte* img);
  // A prefetched page's first touch: shown, counted used. `writable`: shown
  // writable, its before-image the image it came with (expects_write said
  // so), counted in statistics::writable_on_arrival.
  void first_use(page_desc* d, bool writable = false);
  // A prefetched page leaves the pool, or goes stale, before its first touch.
  void left_unused(page_desc* d);
  // How a prefetch source's guesses fare (set_prefetch): its window, the
  // outcomes counted toward its next adjustment, and faults since a probe.
  struct prefetch_gauge {
    std::uint32_t window;
    std::uint32_t used, wasted;
    std::uint32_t since_probe;
  };
  prefetch_gauge& gauge(prefetch_source s) { return gauges_[s == prefetch_source::pointers ? 1 : 0]; }
  void count_outcome(prefetch_source s, bool used);
  // The pages a source may read ahead at this fault, at most `room`.
  std::uint32_t window_of(prefetch_source s, std::uint32_t room);
  // Page order: the block of `window` pages around d, aligned on its size.
  void prefetch_block(const page_desc* d, std::uint32_t window);
  // Along d's pointers, at most `room` pages; returns how many were asked for.
  std::uint32_t prefetch_targets(const page_desc* d, std::uint32_t touched, std::uint32_t room);
  // Stages what `read` brings (it calls want and got, in the order it
  // asked) and takes each record in as got hands it over; when `down`,
  // once all have come, backwards.
  template <class Read>
  void stage_and_take(std::uint32_t room, bool down, prefetch_source source, Read read);
  void release_before_images(std::size_t written);
  struct staged_page {
    std::uint64_t page;
    record_header h;
    std::string mapping;
    bool complete = false;
  };
  // Takes a staged record (`img`, checked and relocated in place) in as its
  // page's image when the page is known and absent; false when no pool slot
  // is free.
  bool take_in(staged_page& s, std::byte* img, prefetch_source source);
  // Takes d's page before-image: its image in the store's file, borrowed,
  // when `may_borrow` and there is one (stored_image); else a copy of
  // `current`, with the objects saved on d so far put back in it.
  void take_page_before(page_desc* d, const std::byte* current, bool may_borrow = true);
  // page_access::show, timed; with `image`, page_access::fill_and_show.
  void show(page_desc* d, bool writable, const std::byte* image = nullptr);
  // Shows a stored page just taken in, read-only, `img` its checked image;
  // true when it waits in to_map_ instead. When the store keeps that image
  // in a file (store::image_in_file) and d is not marked rewritten (by
  // taking it in now, or before), the page waits in to_map_, and
  // show_mapped() shows it and the pages that came in with it: each run of
  // neighbouring frames whose images are neighbours in the file is one
  // mapping of the file, with no copy (frame_space::map_file); a page
  // alone, or one the frames cannot map, is copied from the file's bytes.
  // Else, with `or_now`, it is shown now. make_current calls show_mapped
  // before it returns, whatever happens: a page in to_map_ is resident but
  // not shown.
  bool show_stored(page_desc* d, const std::byte* img, prefetch_source source, bool or_now = false);
  // A prefetched page stays hidden until its first touch (set_prefetch).
  void watch_now(page_desc* d, const std::byte* img, prefetch_source source);
  void show_mapped();
  // Where d's image can be read now: in the store's file while d waits in
  // to_map_.
  const std::byte* readable_image(const page_desc* d) const;
  struct file_page {
    page_desc* d;
    store::file_image at;
    prefetch_source source;      // none: the faulted page
    const std::byte* copy_from;  // its image, if it is copied after all
  };
  std::vector<file_page> to_map_;
  // The shortest run worth a mapping of its own (one costs about what
  // copying a page does).
  static constexpr std::size_t min_mapped_run = 2;
  // Whether stored pages whose images are the file's are mapped from it
  // (options::map_page_file). Whether the program goes on to write them
  // or not: a mapped page made writable becomes the process's own copy
  // when first written (the kernel copies only its 4 KiB halves written),
  // and a write fault makes its block writable in one call per run
  // (make_writable_around). The block is page order's prefetch block
  // (options::prefetch_pages' default), which a fault maps as one run: made
  // writable whole, the mapping does not split.
  bool map_files_ = true;
  // Pages made writable ahead (make_writable_around) and the pages written
  // back unchanged since the last sample: when more than half of
  // write_sample were unchanged, the next write_pause write faults make
  // nothing writable ahead.
  static constexpr std::uint64_t write_ahead_pages = 32;
  struct write_gauge {
    std::uint32_t ahead = 0, unchanged = 0;
    std::uint32_t pause = 0;
  };
  write_gauge writing_;
  write_predictor predict_writes_;
  bool writable_on_arrival_ = true;
  // The faulted page that is to be made writable once show_mapped mapped it
  // (make_current).
  page_desc* writable_when_mapped_ = nullptr;
  static constexpr std::uint32_t write_sample = 256;
  static constexpr std::uint32_t write_pause = 4096;
  std::vector<page_desc*> ahead_;  // make_writable_around's pages
  // Page-aligned memory for images on their way to their frames (the
  // kernel copies from it into a frame's memory: frame_space::fill).
  class page_buffer {
   public:
    page_buffer() = default;
    explicit page_buffer(std::size_t bytes)
        : p_(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{alignment}))) {}
    std::byte* get() const { return p_.get(); }

   private:
    static constexpr std::size_t alignment = 4096;
    struct release {
      void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{alignment}); }
    };
    std::unique_ptr<std::byte[], release> p_;
  };

  store& store_;
  buffer_pool& pool_;
  page_table& table_;
  transaction_log& log_;
  page_access& access_;
  relocator& frames_;
  page_words& words_;
  pointer_check& pointers_;
  statistics& stats_;
  std::uint32_t page_size_;
  std::unique_ptr<std::byte[]> zero_page_;
  // Counts transactions (committed and aborted) for page_desc::evicted_in.
  std::uint64_t transaction_ = 1;
  // Pages evicted whose entries may be dropped (forget_evicted), and pages
  // whose entries were dropped after an eviction in this transaction, for
  // refetch counting.
  std::vector<std::uint64_t> to_forget_;
  // Invalidations taken from a coherent store, applied at the next begin;
  // and whether the store asked for every cached page to be revalidated.
  std::vector<store::invalidation> invalidated_;
  bool revalidate_all_ = false;
  std::unordered_set<std::uint64_t> evicted_now_;
  std::uint64_t refetches_now_ = 0;  // in the open transaction
  bool warned_thrashing_ = false;    // once per open
  std::uint32_t prefetch_ = 0;
  prefetch_order order_ = prefetch_order::page_order;
  std::vector<std::uint64_t> targets_;         // prefetch_targets' pages
  std::vector<std::uint64_t> targets_before_;  // and those before the touched offset
  prefetch_gauge gauges_[2]{};                 // page order, pointers
  static constexpr std::uint32_t first_window = 8;
  static constexpr std::uint32_t watch_every = 8;
  std::uint32_t prefetched_since_watch_ = 0;
  std::uint64_t last_read_ = 0;  // the page prefetch_block last read around
  page_buffer incoming_;         // page_in's image
  page_buffer staging_;          // prefetch_ images, read ahead
  fresh_frames fresh_;           // new pages' memory, populated ahead
  std::uint32_t staging_pages_ = 0;
  std::vector<staged_page> staged_;  // during a prefetch
  void count_refetch(page_desc* d);
  // Whether d's entry may be dropped: it is not resident, not new, not
  // watched, relocator::forgettable, and the transaction log holds nothing
  // of it.
  bool may_forget(page_desc* d) const;
};

}  // namespace qs::detail
