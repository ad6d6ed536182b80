// database_impl.hpp: one open database, the coordinator of its components.
//
// The components each own their state and call only downwards:
//
//   database_impl ─┬─ roots ───────────┐
//                  ├─ indexes ─────────┤
//                  ├─ references (mode, upper half)
//                  ├─ object_allocator ┤
//                  └─ pager ─┬─ relocator ─┬─ page_access (mode, lower half)
//                            ├─ pointer_check ┤
//                            └─ page_words ───┴─ schema_registry
//   (all of them over transaction_log, page_table, buffer_pool and the store)
//
// database_impl wires them, holds the lock, and runs the sequences that
// span components: a fault, begin, commit, abort, a fresh frame assignment.
//
// Invariants (beyond those of the parts):
//  * log_.open() <=> the store has a transaction open.
//  * Page and frame numbers come from store::allocate_pages.
//
// Thread-safety: one mutex guards everything here. Entry points (the fault
// handler, allocation, transaction begin/commit/abort, roots, indexes,
// software mode's references) take it; the components assume it is held.
// While holding it, the runtime reads and writes pages only through the
// buffer pool's addresses, never through their frames, so it cannot fault
// on its own lock.
#pragma once

#include "buffer_pool.hpp"
#include "indexes.hpp"
#include "object_allocator.hpp"
#include "os/fault_signal.hpp"
#include "page_access.hpp"
#include "page_table.hpp"
#include "page_words.hpp"
#include "pager.hpp"
#include "pointer_check.hpp"
#include "references.hpp"
#include "relocator.hpp"
#include "roots.hpp"
#include "schema_registry.hpp"
#include "store.hpp"
#include "transaction_log.hpp"

#include <qs/database.hpp>
#include <qs/index.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace qs::detail {

class database_impl final : public fault_target {
 public:
  database_impl(std::unique_ptr<store> s, const options& opts);
  ~database_impl();

  // fault_target
  void on_fault(void* address, bool write) override;

  void begin();
  void commit();
  void abort();
  bool in_transaction() const { return log_.open(); }

  void* allocate(const type_descriptor* d, std::size_t bytes, const void* near_object);
  void deallocate(void* p);

  std::uint32_t open_index(const std::string& name, bool unique);
  void index_insert(std::uint32_t ix, const std::string& name, std::string_view key, std::string_view value);
  bool index_erase(std::uint32_t ix, std::string_view key, std::string_view value);
  std::vector<index_entry> index_scan(std::uint32_t ix, std::string_view lo, std::string_view hi, std::size_t limit);

  void* root_cell(std::string_view name, const type_descriptor* d, std::size_t size, const std::type_info& t);
  bool has_root(std::string_view name);

  // Software mode's entry points of qs/ref.hpp.
  void* resolve_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write);
  void identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag);

  void release_cache();
  bool contains(const void* p) const { return access_->contains(p); }
  std::uint32_t page_size() const { return page_size_; }
  const std::string& name() const { return store_->name(); }
  statistics stats() const;
  store& backing_store() { return *store_; }

 private:
  friend class lock_scope;
  void abort_locked();
  void require_transaction(const std::string& what) const;
  // Between transactions, when the reservation runs short: forget every
  // frame assignment (the pool is emptied).
  void reset_frames();

  std::unique_ptr<store> store_;
  std::uint32_t page_size_;
  bool durable_;
  mutable std::mutex mutex_;
  statistics stats_;
  schema_registry schema_;
  page_table table_;
  transaction_log log_;
  std::uint64_t txn_log_start_ = 0;
  std::unique_ptr<buffer_pool> pool_;
  std::unique_ptr<page_access> access_;
  std::unique_ptr<page_words> words_;
  std::unique_ptr<pointer_check> pointers_;
  std::unique_ptr<relocator> relocator_;
  std::unique_ptr<pager> pager_;
  std::unique_ptr<object_allocator> allocator_;
  std::unique_ptr<references> refs_;
  std::unique_ptr<roots> roots_;
  std::unique_ptr<indexes> indexes_;
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

}  // namespace qs::detail
