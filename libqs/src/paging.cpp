// Paging: faults, fetching pages into the buffer pool, write enabling,
// eviction and write-back.
#include "database_impl.hpp"
#include "diff.hpp"
#include "keys.hpp"
#include "page_heap.hpp"

#include <qs/error.hpp>

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

void database_impl::on_fault(void* address, bool write) {
  if (lock_scope::held())
    invalid_persistent_pointer(address, "the qs runtime touched a protected frame while holding its lock");
  if constexpr (software_swizzling)
    invalid_persistent_pointer(address, "in software mode persistent objects are reached through qs::ref; "
                                        "this raw address was kept after its page left the buffer pool");
  auto t0 = std::chrono::steady_clock::now();
  lock_scope g(*this);
  std::uint64_t frame = frames_->frame_of(address);
  page_desc* d = table_.by_frame(frame);
  if (d && !d->stale && (d->state == page_state::writable || (d->state == page_state::readable && !write))) return;
  if (!d) d = find_frame(frame);
  if (!d) invalid_persistent_pointer(address, ("no page of database " + name() + " is at this address").c_str());
  if (!txn_open_)
    throw no_transaction("persistent object at " + hex(reinterpret_cast<std::uintptr_t>(address)) + " (page " +
                         std::to_string(d->page) + " of database " + name() +
                         ") touched outside a transaction");
  if (d->state == page_state::absent) {
    ++stats_.read_faults;
    page_in(d);
  } else if (d->stale) {
    ++stats_.read_faults;
    revalidate(d);
  }
  if (write && d->state != page_state::writable) {
    ++stats_.write_faults;
    make_writable(d);
  }
  d->referenced = true;
  stats_.fault_ns += static_cast<std::uint64_t>((std::chrono::steady_clock::now() - t0).count());
}

page_desc* database_impl::find_frame(std::uint64_t frame) {
  // Every frame a valid pointer can lead to was given to its page when the
  // pointer came in (the mapping object of its page, a root, an index).
  return table_.by_frame(frame);
}

std::uint32_t database_impl::take_slot(page_desc* d) {
  std::uint32_t slot;
  while (!pool_->take_free(d, slot)) {
    page_desc* v = pool_->victim();
    if (!v) {
      if (software_swizzling)
        throw error("database " + name() + ": the transaction needs more pages than the buffer pool's " +
                    std::to_string(pool_->size()) +
                    " (in software mode a transaction keeps every page it uses until it ends); open the "
                    "database with a larger pool_pages");
      throw error("database " + name() + ": every page of the buffer pool (" + std::to_string(pool_->size()) +
                  " pages) is pinned");
    }
    evict(v);
  }
  return slot;
}

void database_impl::page_in(page_desc* d) {
  std::uint32_t slot = take_slot(d);
  std::byte* img = pool_->data(slot);
  if (d->is_new) {
    // A page created in this transaction that has never been built.
    std::memset(img, 0, page_size_);
    if (d->hdr.kind == page_kind::small) {
      init_small_page(img, page_size_);
    } else if (d->hdr.kind == page_kind::large_head) {
      *reinterpret_cast<page_header*>(img) = {page_magic, page_size_, 0, 1};
      auto* oh = reinterpret_cast<object_header*>(img + sizeof(page_header));
      *oh = make_header(d->hdr.type, d->hdr.size);
      set_tag(*oh, 1);
    }
    d->materialized = true;
    d->slot = static_cast<std::int32_t>(slot);
    d->state = page_state::writable;
    show(d, true);
    add_written(d);
    return;
  }
  record_header h;
  try {
    auto t0 = std::chrono::steady_clock::now();
    bool found = store_->read_page(d->page, h, img, d->mapping);
    stats_.fetch_ns += static_cast<std::uint64_t>((std::chrono::steady_clock::now() - t0).count());
    if (!found)
      throw corrupt_page(d->page, "database " + name() + ": page " + std::to_string(d->page) + " at frame " +
                                      std::to_string(d->frame) + " has no record in the store");
    accept_record(d, h, img);
  } catch (...) {
    pool_->release(slot);
    throw;
  }
  ++stats_.pages_fetched;
  d->slot = static_cast<std::int32_t>(slot);
  d->state = page_state::readable;
  show(d, false);
}

void database_impl::make_current(page_desc* d) {
  if (d->state == page_state::absent) page_in(d);
  else if (d->stale) revalidate(d);
}

void database_impl::revalidate(page_desc* d) {
  // The page is resident (readable, its frame inaccessible) from an earlier
  // transaction; the store resends it only if another client changed it.
  record_header h;
  try {
    switch (store_->read_page_if_changed(d->page, d->hdr.version, h, image(d), d->mapping)) {
      case store::page_read::absent:
        throw corrupt_page(d->page, "database " + name() + ": page " + std::to_string(d->page) + " at frame " +
                                        std::to_string(d->frame) + " has no record in the store any more");
      case store::page_read::unchanged:
        break;
      case store::page_read::read:
        accept_record(d, h, image(d));
        ++stats_.pages_fetched;
        break;
    }
  } catch (...) {
    evict_clean(d);  // the cached image is no good now
    throw;
  }
  d->stale = false;
  set_access(d, false);
}

void database_impl::accept_record(page_desc* d, const record_header& h, std::byte* img) {
  if (h.magic != record_magic)
    throw corrupt_page(d->page, "database " + name() + ": page " + std::to_string(d->page) +
                                    " has a damaged record header");
  auto t0 = std::chrono::steady_clock::now();
  std::uint32_t sum = record_checksum(h, img, page_size_);
  auto t1 = std::chrono::steady_clock::now();
  stats_.fetch_ns += static_cast<std::uint64_t>((t1 - t0).count());
  if (sum != h.checksum)
    throw corrupt_page(d->page, "database " + name() + ": page " + std::to_string(d->page) +
                                    " failed its checksum (stored " + hex(h.checksum) + ", computed " +
                                    hex(sum) + "); the page is not used");
  if (h.kind != page_kind::small && d->page - d->run_first != h.index)
    throw corrupt_page(d->page, "database " + name() + ": page " + std::to_string(d->page) + " is page " +
                                    std::to_string(h.index) + " of a large object, but was reached as page " +
                                    std::to_string(d->page - d->run_first) + " of one");
  d->hdr = h;
  fix_vptrs(d, img);
  stats_.swizzle_ns += static_cast<std::uint64_t>((std::chrono::steady_clock::now() - t1).count());
  relocate(d, img);
}

void database_impl::make_writable(page_desc* d) {
  bool was_writable = d->state == page_state::writable;  // software mode: objects saved
  if (!was_writable) store_->lock_for_write(d->page);
  std::memcpy(before_image(d), image(d), page_size_);
  put_back_saved(d, before_image(d));
  d->has_before = true;
  if (was_writable) return;
  d->state = page_state::writable;
  set_access(d, true);
  add_written(d);
}

void database_impl::write_back(page_desc* d) {
  std::byte* img = image(d);
  if (d->hdr.kind == page_kind::small && free_space_dirty_.count(d->page)) note_free_space(d);
  // Whole when the stored image is not the before-image (a new page, or one
  // whose pointers or vptrs were rewritten when it came in), or when nothing
  // says what changed (one-time relocation's write-back).
  bool whole = d->is_new || d->rewritten || (!d->has_before && d->saved.empty());
  std::vector<byte_range> ranges;
  if (!whole) {
    if (d->has_before) {
      diff_pages(before_image(d), img, page_size_, ranges);
    } else {
      // Software mode: only the objects written can differ. The image with
      // their before-images in place must be the stored one; if not,
      // something was changed without qs::write, and storing the objects'
      // ranges alone would leave a record that fails its checksum. (The
      // checksum runs over the pieces; nothing is copied.)
      std::sort(d->saved.begin(), d->saved.end(),
                [](const saved_object& a, const saved_object& b) { return a.offset < b.offset; });
      std::uint32_t sum = record_header_checksum(d->hdr);
      std::size_t at = 0;
      for (const saved_object& o : d->saved) {
        sum = crc32c(crc32c(sum, img + at, o.offset - at), saved_bytes_.data() + o.at, o.size);
        at = o.offset + o.size;
      }
      if (crc32c(sum, img + at, page_size_ - at) != d->hdr.checksum)
        throw error("database " + name() + ": commit refused: page " + std::to_string(d->page) +
                    " was changed outside the objects announced with qs::write (in software mode every update "
                    "goes through qs::write); the transaction is aborted");
      for (const saved_object& o : d->saved) {
        std::size_t first = ranges.size();
        diff_pages(saved_bytes_.data() + o.at, img + o.offset, o.size, ranges);
        for (std::size_t i = first; i < ranges.size(); ++i) ranges[i].offset += o.offset;
      }
    }
    if (ranges.empty()) return;
  }
  d->hdr.magic = record_magic;
  d->hdr.frame = d->frame;
  const std::string* mapping = update_mapping(d, img);
  ++d->hdr.version;  // clients caching the page see that it changed
  d->hdr.checksum = record_checksum(d->hdr, img, page_size_);
  if (whole) {
    store_->put_page(d->page, d->hdr, img, mapping);
    stats_.diff_bytes += page_size_;
  } else {
    store_->patch_page(d->page, d->hdr, img, ranges, mapping);
    for (auto& r : ranges) stats_.diff_bytes += r.length;
  }
  ++stats_.pages_written;
  d->is_new = false;
  d->rewritten = false;
  logged_.insert(d);
}

void database_impl::evict(page_desc* d) {
  ++stats_.evictions;
  // The frame goes first: once unmapped, no other thread can still be
  // writing to the page while its changes are diffed from the pool's copy.
  hide(d);
  bool writable = d->state == page_state::writable;
  if (writable || d->relocate_pending) {
    if (writable) {
      ++stats_.dirty_evictions;
      if (!check_pointers(d, false)) suspect_.insert(d);
    } else {
      store_->lock_for_write(d->page);  // one-time relocation writes it back
    }
    try {
      write_back(d);
    } catch (...) {
      show(d, writable);
      throw;
    }
    d->relocate_pending = false;
    if (writable) {
      d->has_before = false;
      d->forget_saved();
      remove_written(d);
    }
  }
  pool_->release(static_cast<std::uint32_t>(d->slot));
  d->slot = -1;
  d->state = page_state::absent;
  d->stale = false;
}

void database_impl::evict_clean(page_desc* d) {
  hide(d);
  d->forget_saved();
  pool_->release(static_cast<std::uint32_t>(d->slot));
  d->slot = -1;
  d->state = page_state::absent;
  d->has_before = false;
  d->stale = false;
}

void database_impl::discard(page_desc* d) {
  if (d->state != page_state::absent) {
    hide(d);
    pool_->release(static_cast<std::uint32_t>(d->slot));
    if (d->state == page_state::writable) remove_written(d);
    d->slot = -1;
    d->state = page_state::absent;
  }
  d->has_before = false;
  d->forget_saved();
  d->stale = false;
  if (d->txn_pinned) {
    std::erase(txn_pinned_, d);
    d->txn_pinned = false;
    --d->pins;
  }
  logged_.erase(d);
  suspect_.erase(d);
  free_space_dirty_.erase(d->page);
  if (d->relocate_pending) std::erase(relocated_, d);
  d->relocate_pending = false;
}

void database_impl::drop(page_desc* d) {
  discard(d);
  free_frames_->give_back(d->frame, 1);
  table_.erase(d);
}

void database_impl::release_cache() {
  lock_scope g(*this);
  if (txn_open_) throw error("database " + name() + ": release_cache inside a transaction");
  evict_all_clean();
}

void database_impl::evict_all_clean() {
  table_.for_each([&](page_desc* d) {
    if (d->state != page_state::absent) evict_clean(d);
  });
}

void database_impl::fix_vptrs(page_desc* d, std::byte* img) {
  for_each_word(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t which) {
    if (!is_vptr || !l.program || which >= l.program->vptr_count) return;
    const vptr_entry& e = l.program->vptrs[which];
    if (!e.vtable) return;
    auto want = reinterpret_cast<std::uintptr_t>(static_cast<const char*>(e.vtable) + e.address_point);
    std::uintptr_t have;
    std::memcpy(&have, img + off, sizeof have);
    if (have != want) {
      std::memcpy(img + off, &want, sizeof want);
      d->rewritten = true;
    }
  });
}

}  // namespace qs::detail
