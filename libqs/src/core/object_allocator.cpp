// The object allocator: placing new objects, large objects on contiguous
// pages, freeing, and the persistent free-space list.
#include "core/object_allocator.hpp"

#include <qs/format/keys.hpp>
#include "core/page_heap.hpp"

#include <qs/error.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

namespace qs::detail {

object_allocator::object_allocator(store& s, pager& pages, relocator& frames, page_access& access, page_table& table,
                                   transaction_log& log, schema_registry& schema, std::uint32_t page_size)
    : store_(s),
      pages_(pages),
      frames_(frames),
      access_(access),
      table_(table),
      log_(log),
      schema_(schema),
      page_size_(page_size) {}

void* object_allocator::allocate(const type_descriptor* d, std::size_t bytes, const void* near_object) {
  if (d->size == 0 || bytes % d->size != 0)
    throw invalid_argument("allocating " + std::to_string(bytes) + " bytes of type " + d->name + " whose size is " +
                           std::to_string(d->size));
  if (d->align > page_size_ / 4 || (d->align & (d->align - 1)))
    throw invalid_argument(std::string("type ") + d->name + " has an alignment of " + std::to_string(d->align) +
                           " bytes, which qs cannot place");
  // A record header and an object header hold the payload's size in 32
  // bits; a large object's payload also shares its first page.
  if (bytes > std::uint64_t{0xffffffff} - page_size_)
    throw invalid_argument("an object of " + std::to_string(bytes) + " bytes (type " + d->name +
                           ") is larger than qs can store (" + std::to_string(std::uint64_t{0xffffffff} - page_size_) +
                           " bytes at most)");
  ensure_loaded();
  forget_freed();  // an allocation may merge free blocks
  std::uint32_t type = schema_.index_of(d);
  std::uint64_t payload = round8(bytes ? bytes : 1);
  std::uint32_t align = std::max<std::uint32_t>(d->align, 8);
  if (payload + align - 8 <= small_payload_limit(page_size_))
    return allocate_small(type, static_cast<std::uint32_t>(payload), align, near_object);
  if (align > 8)
    throw invalid_argument(std::string("type ") + d->name +
                           ": over-aligned objects larger than a page are not supported");
  return allocate_large(type, payload);
}

store::page_range object_allocator::new_numbers(std::uint64_t n) {
  store::page_range r = store_.allocate_pages(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    page_desc* d = table_.by_page(r.page + i);
    if (!d) continue;
    // No page of the store's history has this number; the cache knows it
    // from one the server lost (store::take_new_connection): that page is
    // forgotten, frame and all.
    if (d->is_new() || d->state() == page_state::writable)
      page_state_bug(d->page, "handed out as a new page while the transaction uses it");
    pages_.drop(d);
  }
  return r;
}

page_desc* object_allocator::new_page(page_kind kind, std::uint64_t page, std::uint64_t frame, std::uint64_t run_first,
                                      std::uint32_t run_pages) {
  page_desc* d = table_.add(page, frame, run_first, run_pages);
  d->created();
  d->hdr = {record_magic, 0, d->frame, kind, 0, 0, 0, 0, 0, 0};
  log_.add_created(d);
  return d;
}

void* object_allocator::try_allocate_on(page_desc* d, std::uint32_t type, std::uint32_t payload, std::uint32_t align) {
  if (d->hdr.kind != page_kind::small && d->state() != page_state::absent) return nullptr;
  pages_.make_current(d);
  if (d->hdr.kind != page_kind::small) return nullptr;
  d->referenced = true;
  if (heap_available(pages_.image(d), page_size_) < payload + sizeof(object_header)) return nullptr;
  if (d->needs_page_before()) pages_.make_writable(d);
  if constexpr (page_access::pins_transaction_pages) log_.pin(d);
  std::uint32_t off = heap_allocate(pages_.image(d), page_size_, type, payload, align);
  changed(d);
  return off ? access_.address(d) + off : nullptr;
}

void* object_allocator::allocate_small(std::uint32_t type, std::uint32_t payload, std::uint32_t align,
                                       const void* near_object) {
  if (near_object) {
    if (page_desc* n = frames_.page_of(near_object))
      if (void* p = try_allocate_on(n, type, payload, align)) return p;
  }
  if (current_page_) {
    if (page_desc* c = table_.by_page(current_page_))
      if (void* p = try_allocate_on(c, type, payload, align)) return p;
  }
  // Pages with room, smallest room first that may fit; a few tries at most.
  auto need = static_cast<std::uint32_t>(payload + sizeof(object_header) + (align > 8 ? align : 0));
  const bool listed = !std::exchange(fresh_after_abort_, false);
  for (int tries = 0; listed && tries < 4; ++tries) {
    auto it = by_room_.lower_bound({need, 0});
    if (it == by_room_.end()) break;
    std::uint64_t page = it->second;
    room_entry& entry = free_space_.at(page);
    page_desc* d = frames_.ensure_run(page, 1);
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
  store::page_range r = new_numbers(1);
  std::uint64_t frame = frames_.take_frames(r.page, 1);
  page_desc* d = new_page(page_kind::small, r.page, frame, r.page, 1);
  current_page_ = d->page;
  void* p = try_allocate_on(d, type, payload, align);
  if (!p) throw error("an empty page could not take an object of " + std::to_string(payload) + " bytes");
  return p;
}

void* object_allocator::allocate_large(std::uint32_t type, std::uint64_t payload) {
  std::uint64_t n = large_object_pages(payload, page_size_);
  store::page_range first = new_numbers(n);
  first.frame = frames_.take_frames(first.page, n);
  page_desc* head = nullptr;
  for (std::uint64_t i = 0; i < n; ++i) {
    page_desc* d = new_page(i == 0 ? page_kind::large_head : page_kind::large_tail, first.page + i, first.frame + i,
                            first.page, static_cast<std::uint32_t>(n));
    d->hdr.type = type;
    d->hdr.size = static_cast<std::uint32_t>(payload);
    d->hdr.index = static_cast<std::uint32_t>(i);
    if (i == 0) head = d;
  }
  pages_.page_in(head);
  head->referenced = true;
  if constexpr (page_access::builds_whole_objects) {
    // The mode touches no frame that is not mapped: the whole object is
    // built now, and stays for the transaction.
    for (std::uint64_t i = 1; i < n; ++i) pages_.page_in(table_.by_page(first.page + i));
    for (std::uint64_t i = 0; i < n; ++i) log_.pin(table_.by_page(first.page + i));
  }
  return access_.address(head) + sizeof(page_header) + sizeof(object_header);
}

void object_allocator::deallocate(void* p) {
  page_desc* d = frames_.page_of(p);
  auto where = [&] {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    return std::string(buf);
  };
  if (!d) throw error("delete of " + where() + ", which is no persistent object");
  pages_.make_current(d);
  auto off = static_cast<std::uint32_t>(static_cast<std::byte*>(p) - access_.address(d));
  if (d->hdr.kind == page_kind::small) {
    heap_starts& starts = starts_of(d);
    const heap_free_plan plan = heap_plan_free(pages_.image(d), page_size_, off, starts);
    if (!plan.found)
      throw error("delete of " + where() + " on page " + std::to_string(d->page) +
                  ", where no persistent object starts");
    if (d->needs_page_before()) pages_.make_writable(d);
    heap_apply_free(pages_.image(d), plan);
    starts.applied(plan);
    changed(d);
    return;
  }
  if (d->hdr.kind != page_kind::large_head || off != sizeof(page_header) + sizeof(object_header))
    throw error("delete of " + where() + " inside a large object on page " + std::to_string(d->page));
  std::uint64_t n = large_object_pages(d->hdr.size, page_size_);
  std::uint64_t page0 = d->page;
  for (std::uint64_t i = 0; i < n; ++i) {
    page_desc* t = i == 0 ? d : table_.by_page(page0 + i);
    if (t) {
      // The page keeps its frame: if the transaction aborts, an object that
      // existed before it is back, and the pointers to it on restored pages
      // lead to it again. One the transaction created stays on its created
      // list, so that an abort drops it with the page numbers it took.
      pages_.discard(t);
      t->stored();
    }
    store_.delete_page(page0 + i);
  }
}

heap_starts& object_allocator::starts_of(page_desc* d) {
  if (last_freed_ && last_freed_page_ == d->page && last_freed_->built) return last_freed_->starts;
  auto it = freed_.find(d->page);
  if (it == freed_.end()) {
    if (freed_.size() >= freed_pages_max) drop_freed();
    it = freed_.try_emplace(d->page).first;
  }
  freed_page& f = it->second;
  if (f.generation != freed_generation_) {
    // The first free on the page in this generation: a walk up to its object.
    f.generation = freed_generation_;
    f.built = false;
    f.starts.forget();
  } else if (!f.built) {
    // The second: worth a walk of the whole page.
    f.starts.build(pages_.image(d), page_size_);
    f.built = true;
  }
  last_freed_ = &f;
  last_freed_page_ = d->page;
  return f.starts;
}

void object_allocator::changed(page_desc* d) {
  const room_entry e{d->frame, heap_available(pages_.image(d), page_size_)};
  // Objects come in runs on one page: the entry of the last change is
  // most often this page's.
  if (last_changed_ && last_changed_->first == d->page) {
    last_changed_->second = e;
    return;
  }
  last_changed_ = &*changed_.insert_or_assign(d->page, e).first;
}

void object_allocator::set_room(std::uint64_t page, std::uint64_t frame, std::uint32_t room) {
  auto old = free_space_.find(page);
  bool listed = old != free_space_.end();
  if (listed) {
    by_room_.erase({old->second.room, page});
    free_space_.erase(old);
  }
  if (room >= page_size_ / 8) {
    free_space_[page] = {frame, room};
    by_room_.insert({room, page});
    store_.put(space_key(page), std::to_string(frame) + " " + std::to_string(room));
  } else if (listed) {
    store_.del(space_key(page));
  }
}

void object_allocator::commit() {
  if (!changed_.empty()) ensure_loaded();
  for (const auto& [page, e] : changed_) set_room(page, e.frame, e.room);
  changed_.clear();
  last_changed_ = nullptr;
  drop_freed();
}

void object_allocator::abort() {
  changed_.clear();
  last_changed_ = nullptr;
  drop_freed();
  current_page_ = 0;
  fresh_after_abort_ = store_.shared();
  free_space_.clear();
  by_room_.clear();
  loaded_ = false;
}

void object_allocator::load() {
  free_space_.clear();
  by_room_.clear();
  loaded_ = false;
  store_.scan("s:", [&](std::string_view key, std::string_view value) {
    std::uint64_t page = from_be64(key.substr(2)), frame = 0;
    std::uint32_t room = 0;
    std::sscanf(std::string(value).c_str(), "%" SCNu64 " %" SCNu32, &frame, &room);
    free_space_[page] = {frame, room};
    by_room_.insert({room, page});
  });
  loaded_ = true;
}

}  // namespace qs::detail
