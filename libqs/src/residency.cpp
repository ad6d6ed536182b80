// Residency: how the program reaches a resident page, in either mode, and
// the software-swizzling entry points of qs/ref.hpp (dereference on a miss,
// write with an object-level before-image, identify an address).
#include "database_impl.hpp"
#include "page_heap.hpp"

#include <qs/ref.hpp>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <typeinfo>

#include <cxxabi.h>

namespace qs::detail {

#if QS_SOFTWARE_SWIZZLE
residency sw_residency;
#endif

namespace {

// The database software-mode references resolve in.
std::atomic<database_impl*> sw_database{nullptr};

std::string where(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  return "page " + std::to_string(page) + ", offset " + std::to_string(offset) + ", tag " + std::to_string(tag);
}

}  // namespace

void database_impl::make_current_database() {
  if constexpr (software_swizzling) {
    sw_database.store(this);
#if QS_SOFTWARE_SWIZZLE
    sw_residency = {resident_.data(), resident_.size()};
#endif
  }
}

void database_impl::set_resident(std::uint64_t page, std::byte* at) {
  if (page >= resident_.size()) {
    if (!at) return;
    resident_.resize(std::max<std::size_t>(page + 1, resident_.size() * 2), nullptr);
    if (sw_database.load() == this) make_current_database();
  }
  resident_[page] = at;
}

void database_impl::show(page_desc* d, bool writable) {
  auto t0 = std::chrono::steady_clock::now();
  if constexpr (!software_swizzling) {
    frames_->map(d->frame, pool_->memory(), static_cast<std::uint32_t>(d->slot), writable);
  } else if (d->hdr.kind == page_kind::small) {
    set_resident(d->page, image(d));
  } else {
    frames_->map(d->frame, pool_->memory(), static_cast<std::uint32_t>(d->slot), true);
    set_access(d, true);
  }
  stats_.protect_ns += static_cast<std::uint64_t>((std::chrono::steady_clock::now() - t0).count());
}

void database_impl::hide(page_desc* d) {
  if constexpr (!software_swizzling) {
    frames_->unmap(d->frame);
  } else if (d->hdr.kind == page_kind::small) {
    set_resident(d->page, nullptr);
  } else {
    frames_->unmap(d->frame);
    set_resident(d->run_first, nullptr);
  }
}

void database_impl::set_access(page_desc* d, bool writable) {
  if constexpr (!software_swizzling) {
    frames_->protect(d->frame, writable);
  } else if (d->hdr.kind == page_kind::small) {
    set_resident(d->page, image(d));
  } else {
    // A large object is reachable once every page of it is.
    page_desc* h = run_head(d);
    for (std::uint32_t i = 0; i < h->run_pages; ++i) {
      page_desc* t = table_.by_page(h->page + i);
      if (!t || t->state == page_state::absent || t->stale) return;
    }
    set_resident(h->page, frame_address(h));
  }
}

void database_impl::hide_all() {
  if constexpr (!software_swizzling) frames_->revoke_all();
  else std::fill(resident_.begin(), resident_.end(), nullptr);
}

void database_impl::unpin_transaction_pages() {
  for (page_desc* d : txn_pinned_) {
    d->txn_pinned = false;
    --d->pins;
  }
  txn_pinned_.clear();
}

page_desc* database_impl::find_page_of(const void* p) {
  if (frames_->contains(p)) return find_frame(frames_->frame_of(p));
  if constexpr (software_swizzling) return pool_->owner_of(p);
  return nullptr;
}

page_desc* database_impl::sw_locate(std::uint64_t page) {
  page_desc* d = table_.by_page(page);
  if (!d) {
    // Not seen in this process: the record says whether it heads a large
    // object, which needs frames for all of its pages.
    d = ensure_run(0, page, 1);
    make_current(d);
    if (d->hdr.kind == page_kind::large_head) {
      std::uint64_t n = (sizeof(page_header) + sizeof(object_header) + std::uint64_t{d->hdr.size} + page_size_ - 1) /
                        page_size_;
      if (n > 1) {
        std::uint64_t hint = d->hdr.frame;
        drop(d);
        d = ensure_run(reinterpret_cast<std::uint64_t>(frames_->frame_address(hint)), page,
                       static_cast<std::uint32_t>(n));
      }
    }
  }
  page_desc* h = run_head(d);
  for (std::uint32_t i = 0; i < h->run_pages; ++i) {
    page_desc* t = i == 0 ? h : table_.by_page(h->page + i);
    make_current(t);
    t->referenced = true;
    pin_for_transaction(t);
    set_access(t, t->state == page_state::writable);  // back in the residency table
  }
  if (h->page != page)
    throw dangling_reference("database " + name() + ": a reference names page " + std::to_string(page) +
                             ", which is inside a large object");
  return h;
}

void* database_impl::sw_resolve(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write) {
  lock_scope g(*this);
  return resolve_locked(page, offset, tag, for_write);
}

void database_impl::sw_identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) {
  lock_scope g(*this);
  identify_locked(p, page, offset, tag);
}

void* database_impl::resolve_locked(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write) {
  page_desc* h;
  if (page < resident_.size() && resident_[page]) {
    h = table_.by_page(page);
  } else {
    if (!txn_open_)
      throw no_transaction("database " + name() + ": a reference to " + where(page, offset, tag) +
                           " was followed outside a transaction, and the page is not resident");
    auto t0 = std::chrono::steady_clock::now();
    std::uint64_t before = stats_.pages_fetched;
    h = sw_locate(page);
    if (stats_.pages_fetched != before) {
      ++stats_.read_faults;
      stats_.fault_ns += static_cast<std::uint64_t>((std::chrono::steady_clock::now() - t0).count());
    }
  }
  // Is the object still there? Its header holds the reference's tag (the
  // check the inline fast path makes too).
  const object_header* oh = nullptr;
  bool small = h->hdr.kind == page_kind::small;
  if (small ? offset >= sizeof(page_header) + sizeof(object_header) &&
                  offset <= reinterpret_cast<const page_header*>(image(h))->top
            : offset == sizeof(page_header) + sizeof(object_header))
    oh = reinterpret_cast<const object_header*>(image(h) + offset - sizeof(object_header));
  if (!oh || oh->type == free_type || tag_of(*oh) != tag) {
    bool other = small && offset < page_size_ && heap_object_at(image(h), offset);
    throw dangling_reference("database " + name() + ": the reference to " + where(page, offset, tag) +
                             (other ? " names a deleted object (another object is there now)"
                                    : " names a deleted object"));
  }
  if (for_write) {
    require_transaction("qs::write");
    announce_write(h, offset);
  }
  return address(h) + offset;
}

void database_impl::announce_write(page_desc* h, std::uint32_t offset) {
  if (h->hdr.kind == page_kind::small) {
    save_object(h, offset);
    return;
  }
  // A large object is logged page by page.
  for (std::uint32_t i = 0; i < h->run_pages; ++i) {
    page_desc* t = i == 0 ? h : table_.by_page(h->page + i);
    if (t->state != page_state::writable) {
      ++stats_.write_faults;
      make_writable(t);
    }
  }
}

void database_impl::save_object(page_desc* d, std::uint32_t offset) {
  if (d->state != page_state::writable && d->rewritten) {
    // Its image differs from the stored one already: it is logged whole, and
    // abort needs the whole before-image.
    ++stats_.write_faults;
    make_writable(d);
    return;
  }
  if (d->state != page_state::writable) {
    store_->lock_for_write(d->page);
    d->state = page_state::writable;
    add_written(d);
  }
  if (whole_page_logged(d)) return;
  if (d->is_saved(offset)) return;
  ++stats_.write_faults;
  auto* oh = reinterpret_cast<const object_header*>(image(d) + offset - sizeof(object_header));
  std::size_t at = saved_bytes_.size();
  saved_bytes_.insert(saved_bytes_.end(), image(d) + offset, image(d) + offset + oh->size);
  d->saved.push_back({offset, oh->size, at});
  d->note_saved(offset, page_size_);
}

void database_impl::put_back_saved(page_desc* d, std::byte* into) {
  for (const saved_object& o : d->saved) std::memcpy(into + o.offset, saved_bytes_.data() + o.at, o.size);
  d->forget_saved();
}

void database_impl::identify_locked(const void* p, std::uint64_t& page, std::uint32_t& offset,
                                    std::uint32_t& tag) {
  page_desc* d = find_page_of(p);
  if (d) {
    page_desc* h = run_head(d);
    auto off = static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - address(h));
    const object_header* oh = nullptr;
    if (h->hdr.kind == page_kind::small) oh = heap_object_at(image(h), static_cast<std::uint32_t>(off));
    else if (off == sizeof(page_header) + sizeof(object_header))
      oh = reinterpret_cast<const object_header*>(image(h) + sizeof(page_header));
    if (oh) {
      page = h->page;
      offset = static_cast<std::uint32_t>(off);
      tag = tag_of(*oh);
      return;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%p", p);
  throw invalid_argument("database " + name() + ": a qs::ref made from " + buf +
                         (d ? ", where no persistent object starts (on page " + std::to_string(d->page) + ")"
                            : ", which is not a resident persistent object"));
}

#if QS_SOFTWARE_SWIZZLE

namespace {

database_impl& sw_current() {
  database_impl* db = sw_database.load();
  if (!db) throw no_transaction("a qs::ref was followed, but no database is open");
  return *db;
}

std::string demangle(const char* n) {
  int status = 0;
  char* d = abi::__cxa_demangle(n, nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : n;
  std::free(d);
  return s;
}

}  // namespace

void* sw_resolve(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  return sw_current().sw_resolve(page, offset, tag, false);
}

void* sw_write(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  return sw_current().sw_resolve(page, offset, tag, true);
}

void sw_identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) {
  database_impl* db = database_of(p);
  if (!db) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    throw invalid_argument(std::string("a qs::ref made from ") + buf + ", which is not in an open database");
  }
  db->sw_identify(p, page, offset, tag);
}

void sw_bad_conversion(const char* from, const char* to) {
  throw invalid_argument("qs::ref<" + demangle(from) + "> converted to qs::ref<" + demangle(to) +
                         ">: in software mode a reference names a whole object, so the base class must be at "
                         "offset 0");
}

#endif

void database_impl::forget_current_database() {
  database_impl* self = this;
  if (sw_database.compare_exchange_strong(self, nullptr)) {
#if QS_SOFTWARE_SWIZZLE
    sw_residency = {};
#endif
  }
}

}  // namespace qs::detail
