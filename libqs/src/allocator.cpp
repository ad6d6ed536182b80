// The allocator: which page a new object goes to, large objects on
// contiguous pages, freeing, and the free-space list that lets freed space be
// reused across transactions and runs.
#include "database_impl.hpp"
#include "keys.hpp"
#include "page_heap.hpp"

#include <qs/persistent.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace qs::detail {

void* database_impl::allocate(const type_descriptor* d, std::size_t bytes, const void* near_object) {
  lock_scope g(*this);
  return allocate_locked(d, bytes, near_object);
}

void* database_impl::allocate_locked(const type_descriptor* d, std::size_t bytes, const void* near_object) {
  require_transaction("allocating a persistent object");
  if (d->size == 0 || bytes % d->size != 0)
    throw invalid_argument("database " + name() + ": allocating " + std::to_string(bytes) +
                           " bytes of type " + d->name + " whose size is " + std::to_string(d->size));
  if (d->align > page_size_ / 4 || (d->align & (d->align - 1)))
    throw invalid_argument(std::string("type ") + d->name + " has an alignment of " + std::to_string(d->align) +
                           " bytes, which qs cannot place");
  std::uint32_t type = schema_.index_of(d);
  std::uint64_t payload = round8(bytes ? bytes : 1);
  std::uint32_t align = std::max<std::uint32_t>(d->align, 8);
  if (payload + align - 8 <= small_payload_limit(page_size_))
    return allocate_small(type, static_cast<std::uint32_t>(payload), align, near_object);
  if (align > 8)
    throw invalid_argument(std::string("type ") + d->name + ": over-aligned objects larger than a page are not supported");
  return allocate_large(type, payload);
}

page_desc* database_impl::new_page(page_kind kind, const store::page_range* at) {
  // Page numbers come from the store, which hands each out once even when
  // other clients allocate at the same time (qs-pageserver). Its frame
  // number is a hint: the page takes that frame when it is free here.
  store::page_range r = at ? *at : store_->allocate_pages(1);
  if (!at) r.frame = take_frames(r.frame, 1);
  page_desc* d = table_.add(r.page, r.frame);
  d->is_new = true;
  d->created_in_txn = true;
  d->run_first = at ? at->page : r.page;
  d->hdr = {record_magic, 0, d->frame, kind, 0, 0, 0, 0, 0, 0};
  created_.push_back(d);
  return d;
}

void* database_impl::try_allocate_on(page_desc* d, std::uint32_t type, std::uint32_t payload, std::uint32_t align) {
  if (d->hdr.kind != page_kind::small && d->state != page_state::absent) return nullptr;
  make_current(d);
  if (d->hdr.kind != page_kind::small) return nullptr;
  d->referenced = true;
  if (heap_available(image(d), page_size_) < payload + sizeof(object_header)) return nullptr;
  if (needs_page_image(d)) make_writable(d);
  pin_for_transaction(d);
  std::uint32_t off = heap_allocate(image(d), page_size_, type, payload, align);
  free_space_dirty_.insert(d->page);
  return off ? address(d) + off : nullptr;
}

void* database_impl::allocate_small(std::uint32_t type, std::uint32_t payload, std::uint32_t align,
                                    const void* near_object) {
  if (near_object) {
    if (page_desc* n = find_page_of(near_object))
      if (void* p = try_allocate_on(n, type, payload, align)) return p;
  }
  if (current_page_) {
    page_desc* c = table_.by_page(current_page_);
    if (c) {
      if (void* p = try_allocate_on(c, type, payload, align)) return p;
    }
  }
  // Pages with room, smallest room first that may fit; a few tries at most.
  std::uint32_t need = payload + sizeof(object_header) + (align > 8 ? align : 0);
  for (int tries = 0; tries < 4; ++tries) {
    auto it = by_room_.lower_bound({need, 0});
    if (it == by_room_.end()) break;
    std::uint64_t page = it->second;
    room_entry& entry = free_space_.at(page);
    page_desc* d = ensure_run(reinterpret_cast<std::uint64_t>(frames_->frame_address(entry.frame)), page, 1);
    // Whatever happens, this page is not offered again for this size.
    by_room_.erase(it);
    entry.room = need - 1;
    by_room_.insert({need - 1, page});
    if (!d || d->page != page) continue;
    if (void* p = try_allocate_on(d, type, payload, align)) {
      current_page_ = page;
      return p;
    }
  }
  page_desc* d = new_page(page_kind::small);
  current_page_ = d->page;
  void* p = try_allocate_on(d, type, payload, align);
  if (!p) throw error("database " + name() + ": an empty page could not take an object of " +
                      std::to_string(payload) + " bytes");
  return p;
}

void* database_impl::allocate_large(std::uint32_t type, std::uint64_t payload) {
  if (payload > 0xffffffffull - page_size_)
    throw invalid_argument("database " + name() + ": objects of " + std::to_string(payload) +
                           " bytes are larger than qs supports (4 GiB)");
  std::uint64_t total = sizeof(page_header) + sizeof(object_header) + payload;
  std::uint64_t n = (total + page_size_ - 1) / page_size_;
  store::page_range first = store_->allocate_pages(n);
  first.frame = take_frames(first.frame, n);
  page_desc* head = nullptr;
  for (std::uint64_t i = 0; i < n; ++i) {
    store::page_range at{first.page + i, first.frame + i};
    page_desc* d = new_page(i == 0 ? page_kind::large_head : page_kind::large_tail, &at);
    d->run_first = first.page;
    d->run_pages = static_cast<std::uint32_t>(n);
    d->hdr.type = type;
    d->hdr.size = static_cast<std::uint32_t>(payload);
    d->hdr.index = static_cast<std::uint32_t>(i);
    if (i == 0) head = d;
  }
  page_in(head);
  head->referenced = true;
  // Software mode touches no frame that is not mapped: the whole object is
  // built now.
  if constexpr (software_swizzling) {
    for (std::uint64_t i = 1; i < n; ++i) page_in(table_.by_page(first.page + i));
    for (std::uint64_t i = 0; i < n; ++i) pin_for_transaction(table_.by_page(first.page + i));
  }
  return address(head) + sizeof(page_header) + sizeof(object_header);
}

void database_impl::deallocate(void* p) {
  lock_scope g(*this);
  require_transaction("freeing a persistent object");
  page_desc* d = find_page_of(p);
  auto where = [&] {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    return std::string(buf);
  };
  if (!d) throw error("database " + name() + ": delete of " + where() + ", which is no persistent object");
  make_current(d);
  std::uint32_t off = static_cast<std::uint32_t>(static_cast<std::byte*>(p) - address(d));
  if (d->hdr.kind == page_kind::small) {
    if (!heap_object_at(image(d), off))
      throw error("database " + name() + ": delete of " + where() + " on page " + std::to_string(d->page) +
                  ", where no persistent object starts");
    if (needs_page_image(d)) make_writable(d);
    heap_free(image(d), page_size_, off);
    free_space_dirty_.insert(d->page);
    return;
  }
  if (d->hdr.kind != page_kind::large_head || off != sizeof(page_header) + sizeof(object_header))
    throw error("database " + name() + ": delete of " + where() + " inside a large object on page " +
                std::to_string(d->page));
  std::uint64_t n = (sizeof(page_header) + sizeof(object_header) + std::uint64_t{d->hdr.size} + page_size_ - 1) /
                    page_size_;
  std::uint64_t page0 = d->page;
  for (std::uint64_t i = 0; i < n; ++i) {
    page_desc* t = i == 0 ? d : table_.by_page(page0 + i);
    if (t) {
      // The page keeps its frame: if the transaction aborts, the object is
      // back, and the pointers to it on restored pages lead to it again.
      auto c = std::find(created_.begin(), created_.end(), t);
      if (c != created_.end()) created_.erase(c);
      discard(t);
      t->is_new = false;
      t->materialized = false;
    }
    store_->delete_page(page0 + i);
  }
}

void database_impl::note_free_space(page_desc* d) {
  std::uint32_t room = heap_available(image(d), page_size_);
  auto old = free_space_.find(d->page);
  bool listed = old != free_space_.end();
  if (listed) {
    by_room_.erase({old->second.room, d->page});
    free_space_.erase(old);
  }
  if (room >= page_size_ / 8) {
    free_space_[d->page] = {d->frame, room};
    by_room_.insert({room, d->page});
    store_->put(space_key(d->page), std::to_string(d->frame) + " " + std::to_string(room));
  } else if (listed) {
    store_->del(space_key(d->page));
  }
}

void database_impl::load_free_space() {
  free_space_.clear();
  by_room_.clear();
  store_->scan("s:", [&](std::string_view key, std::string_view value) {
    std::uint64_t page = from_be64(key.substr(2)), frame = 0;
    std::uint32_t room = 0;
    std::sscanf(std::string(value).c_str(), "%" SCNu64 " %" SCNu32, &frame, &room);
    free_space_[page] = {frame, room};
    by_room_.insert({room, page});
  });
}

// The public allocation functions of qs/persistent.hpp.

void* allocate(database& db, const type_descriptor* d, std::size_t bytes, const void* near_object) {
  return impl_of(db).allocate(d, bytes, near_object);
}

void* allocate_near(const void* near_object, const type_descriptor* d, std::size_t bytes) {
  database_impl* db = database_of(near_object);
  if (!db) throw invalid_argument("qs::near: the object given is not persistent");
  return db->allocate(d, bytes, near_object);
}

void release(void* p) noexcept {
  if (!p) return;
  database_impl* db = database_of(p);
  if (!db) {
    ::operator delete(p);
    return;
  }
  try {
    db->deallocate(p);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs: cannot free a persistent object: %s\n", e.what());
    std::abort();
  }
}

void check_class_size(std::size_t requested, std::size_t own, const char* cls) {
  if (requested != own)
    throw schema_error(std::string("allocating ") + std::to_string(requested) + " bytes through " + cls +
                       "'s operator new (" + cls + " has " + std::to_string(own) +
                       " bytes): a class derived from " + cls + " needs its own QS_PERSISTENT line");
}

}  // namespace qs::detail
