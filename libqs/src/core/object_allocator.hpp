// core/object_allocator.hpp: which page a new object goes to.
//
// Small objects go first fit into a page's free blocks or its tail
// (page_heap.hpp): the page of the object given as `near` first, then the
// page the last allocation used, then pages listed with room, then a new
// page. Objects larger than a page take contiguous new pages and frames.
// Freed space is listed persistently ("s:" records, keys.hpp) so later
// transactions and runs reuse it. On a shared store the list is every
// client's, and the page it offers first is the same for all of them: after
// an abort (a conflict, most often over such a page), the next small object
// that fits neither near its neighbour nor on the current page goes to a new
// page, which no other client is given, and the objects after it follow it
// there.
//
// Invariants:
//  * The free-space list in memory is the stored one plus this
//    transaction's changes, which commit() writes into the store
//    transaction; after abort() the stored one is read again when next
//    needed (abort itself asks the store nothing: it may follow a commit
//    whose store is out of reach).
//  * Every change to a page goes through the pager (write enabling first),
//    so it is logged and undone like any other write.
//
// Depends on: store, pager, relocator, page_access, page_table,
// transaction_log, schema_registry.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/page_heap.hpp"
#include "core/page_table.hpp"
#include "core/pager.hpp"
#include "core/relocator.hpp"
#include "core/schema_registry.hpp"
#include "core/transaction_log.hpp"
#include "mode/page_access.hpp"
#include "store/store.hpp"

#include <qs/schema.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace qs::detail {

class object_allocator {
 public:
  object_allocator(store& s, pager& pages, relocator& frames, page_access& access, page_table& table,
                   transaction_log& log, schema_registry& schema, std::uint32_t page_size);

  // A zeroed object of `bytes` bytes (a whole number of d's), near
  // `near_object` when it has room there.
  void* allocate(const type_descriptor* d, std::size_t bytes, const void* near_object);
  void deallocate(void* p);

  // Reads the free-space list from the store.
  void load();
  // Writes the free-space records of the pages this transaction changed.
  void commit();
  // Forgets this transaction's changes, and the list read from the store.
  void abort();
  // The page table was emptied: no page is current.
  void forget_current_page() {
    current_page_ = 0;
    forget_freed();
  }

 private:
  // n page numbers from the store; a descriptor the page table keeps for
  // one of them (from a history the server lost) is dropped first.
  store::page_range new_numbers(std::uint64_t n);
  page_desc* new_page(page_kind kind, std::uint64_t page, std::uint64_t frame, std::uint64_t run_first,
                      std::uint32_t run_pages);
  void* allocate_small(std::uint32_t type, std::uint32_t payload, std::uint32_t align, const void* near_object);
  void* allocate_large(std::uint32_t type, std::uint64_t payload);
  void* try_allocate_on(page_desc* d, std::uint32_t type, std::uint32_t payload, std::uint32_t align);
  void changed(page_desc* d);
  // Lists (or unlists) page with `room` bytes free, in memory and in the store.
  void set_room(std::uint64_t page, std::uint64_t frame, std::uint32_t room);
  void ensure_loaded() {
    if (!loaded_) load();
  }

  store& store_;
  pager& pages_;
  relocator& frames_;
  page_access& access_;
  page_table& table_;
  transaction_log& log_;
  schema_registry& schema_;
  std::uint32_t page_size_;

  std::uint64_t current_page_ = 0;  // where the last small object went
  bool loaded_ = false;             // free_space_ holds the stored list
  bool fresh_after_abort_ = false;  // see above: the next listed page is skipped
  struct room_entry {
    std::uint64_t frame;
    std::uint32_t room;  // bytes available
  };
  std::map<std::uint64_t, room_entry> free_space_;                      // by page
  std::set<std::pair<std::uint32_t, std::uint64_t>> by_room_;           // (bytes, page)
  std::map<std::uint64_t, room_entry> changed_;                         // this transaction's, by page
  std::pair<const std::uint64_t, room_entry>* last_changed_ = nullptr;  // changed_'s entry changed last
  // The block starts of the pages this transaction freed on (page_heap.hpp),
  // so that the deletes on a page walk it about once, in whatever order they
  // come: read at a page's second free (the first walks as far as its
  // object: deletes scattered over many pages may free one object on each).
  // Dropped at every allocation, which may merge free blocks (a new
  // generation: the entries of older ones are stale), and at the
  // transaction's end. At most freed_pages_max pages: about 200 bytes each.
  struct freed_page {
    std::uint64_t generation = 0;
    bool built = false;  // starts read from the page
    heap_starts starts;
  };
  static constexpr std::size_t freed_pages_max = 16384;
  std::unordered_map<std::uint64_t, freed_page> freed_;  // by page
  std::uint64_t freed_generation_ = 1;
  std::uint64_t last_freed_page_ = 0;  // the last free's page
  freed_page* last_freed_ = nullptr;   // and its entry, when current
  heap_starts& starts_of(page_desc* d);
  void forget_freed() {
    ++freed_generation_;
    last_freed_ = nullptr;
  }
  void drop_freed() {
    forget_freed();
    freed_.clear();
  }
};

}  // namespace qs::detail
