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
//  * A database belongs to the process that opened it: in a child made by
//    fork() its memory is gone (os/frames.hpp) and every call is refused.
//
// Thread-safety: one mutex guards everything here. Entry points (the fault
// handler, allocation, transaction begin/commit/abort, roots, indexes,
// software mode's references) take it; the components assume it is held.
// While holding it, the runtime reads and writes pages only through its own
// view of the frames' memory (page_access::image), never through the frames,
// so it cannot fault on its own lock.
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
#include "thread_annotations.hpp"
#include "transaction_log.hpp"

#include <qs/database.hpp>
#include <qs/index.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace qs::detail {

// The buffer pool's size in pages for options `o` and a database of
// `page_size` pages: pool_pages, pool_bytes, or the machine's default.
// Throws qs::invalid_argument, naming the option, for a size qs refuses.
std::uint32_t pool_pages_for(const options& o, std::uint32_t page_size, const std::string& name);

class database_impl final : public fault_target {
 public:
  database_impl(std::unique_ptr<store> s, const options& opts);
  ~database_impl();

  // fault_target
  void on_fault(void* address, bool write) override QS_EXCLUDES(mutex_);
  // The fault itself; on_fault fails the transaction with what it throws.
  void serve_fault(void* address, bool write) QS_REQUIRES(mutex_);

  void begin() QS_EXCLUDES(mutex_);
  // The calling thread works in the open transaction (begun by another
  // thread) until leave(); qs::join_transaction.
  void join() QS_EXCLUDES(mutex_);
  void leave() QS_EXCLUDES(mutex_);
  void commit() QS_EXCLUDES(mutex_);
  void abort() QS_EXCLUDES(mutex_);
  bool in_transaction() const QS_EXCLUDES(mutex_);

  void* allocate(const type_descriptor* d, std::size_t bytes, const void* near_object) QS_EXCLUDES(mutex_);
  void deallocate(void* p) QS_EXCLUDES(mutex_);
  // `delete` cannot throw: what went wrong while freeing (a deadlock, a lost
  // connection, a pointer to no object) fails the open transaction instead.
  // Every later call that needs the transaction (a fault, an allocation, a
  // root, an index, software mode's references) throws it again, and commit
  // aborts and throws it, so that db.run retries a deadlock as usual. False
  // when no transaction is open to carry it.
  bool fail_transaction(std::exception_ptr e) noexcept QS_EXCLUDES(mutex_);

  std::uint32_t open_index(const std::string& name, bool unique) QS_EXCLUDES(mutex_);
  void index_insert(std::uint32_t ix, const std::string& name, std::string_view key, std::string_view value)
      QS_EXCLUDES(mutex_);
  bool index_erase(std::uint32_t ix, std::string_view key, std::string_view value) QS_EXCLUDES(mutex_);
  std::vector<index_entry> index_scan(std::uint32_t ix, std::string_view lo, std::string_view hi, std::size_t limit)
      QS_EXCLUDES(mutex_);

  void* root_cell(std::string_view name, const type_descriptor* d, std::size_t size, const std::type_info& t)
      QS_EXCLUDES(mutex_);
  bool has_root(std::string_view name) QS_EXCLUDES(mutex_);

  // Schema evolution's entry points (schema_evolution.hpp). The pass runs
  // like a program, in a transaction, touching objects through their frames;
  // these list what is on a page and rewrite what lives outside pages.
  struct object_span {
    std::byte* address;
    std::uint32_t type;
    std::uint64_t bytes;
  };
  // Why this database cannot be converted here, or empty.
  std::string evolution_refused() QS_EXCLUDES(mutex_);
  std::vector<schema_registry::pending_change> pending_changes() QS_EXCLUDES(mutex_);
  type_layout stored_layout(std::uint32_t index) QS_EXCLUDES(mutex_);
  // The program's layout of a type by name, or the stored one, or empty.
  std::string members_of(const std::string& type) QS_EXCLUDES(mutex_);
  std::uint32_t adopt_type(const schema_registry::pending_change& p) QS_EXCLUDES(mutex_);
  // One more than the highest page number handed out.
  std::uint64_t page_limit() QS_EXCLUDES(mutex_);
  // The numbers of the stored pages in [first, last), in order.
  std::vector<std::uint64_t> stored_pages(std::uint64_t first, std::uint64_t last) QS_EXCLUDES(mutex_);
  // Brings page `page` in and lists its objects (a large object on its first
  // page only), or the addresses of its pointer words (not vptrs). False
  // when the database has no such page.
  bool objects_on_page(std::uint64_t page, std::vector<object_span>& out) QS_EXCLUDES(mutex_);
  struct pointer_word {
    std::byte* address;
    std::string_view pointee;  // what its member points to, or empty (pointees_of)
  };
  bool pointer_words_on_page(std::uint64_t page, std::vector<pointer_word>& out) QS_EXCLUDES(mutex_);
  // Rewrites named roots and qs::index entries that locate an object that
  // `forward` moves; returns how many changed.
  std::uint64_t move_roots(const std::function<void*(void*)>& forward) QS_EXCLUDES(mutex_);
  std::uint64_t move_index_entries(const std::function<void*(void*)>& forward) QS_EXCLUDES(mutex_);

  // Software mode's entry points of qs/ref.hpp.
  void* resolve_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write)
      QS_EXCLUDES(mutex_);
  void identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) QS_EXCLUDES(mutex_);

  void release_cache() QS_EXCLUDES(mutex_);
  // The reservation's and the pool's bounds never change while the database
  // is open: no lock.
  bool contains(const void* p) const QS_NO_THREAD_SAFETY_ANALYSIS { return access_->contains(p); }
  std::uint32_t page_size() const { return page_size_; }
  std::uint32_t pool_pages() const { return pool_pages_; }
  // Whether the program's touches fault pages in (hardware mode). Fixed for
  // the database's life: no lock.
  bool faults_pages_in() const QS_NO_THREAD_SAFETY_ANALYSIS { return access_->faults_pages_in(); }
  // The store's name never changes: no lock.
  const std::string& name() const QS_NO_THREAD_SAFETY_ANALYSIS { return store_->name(); }
  statistics stats() const QS_EXCLUDES(mutex_);

 private:
  friend class lock_scope;
  void abort_locked() QS_REQUIRES(mutex_);
  // Throws when no transaction is open, or when it failed (fail_transaction).
  void require_transaction(const std::string& what) const QS_REQUIRES(mutex_);
  // Whether the calling thread may touch persistent data in the open
  // transaction (it began it, or joined it).
  bool in_this_transaction() const QS_REQUIRES(mutex_);
  // The qs::no_transaction of a thread outside the open transaction.
  [[noreturn]] void outside_transaction(const std::string& what) const QS_REQUIRES(mutex_);
  void throw_if_failed() const QS_REQUIRES(mutex_);
  // Between transactions, when the reservation runs short: forget every
  // frame assignment (the pool is emptied).
  void reset_frames() QS_REQUIRES(mutex_);
  // The page's descriptor, given frames now when it has none; nullptr when
  // the database has no such page.
  page_desc* desc_of_page(std::uint64_t page) QS_REQUIRES(mutex_);
  // The same, brought up to date for the open transaction (schema
  // evolution's walks).
  page_desc* current_page(std::uint64_t page) QS_REQUIRES(mutex_);
  // Each layout's pointees (evolution_plan.hpp's pointees_of), by type name.
  std::unordered_map<std::string, std::vector<std::string>> pointees_ QS_GUARDED_BY(mutex_);

  mutable mutex mutex_;
  std::unique_ptr<store> store_ QS_PT_GUARDED_BY(mutex_);
  const std::uint64_t fork_generation_;  // of the process that opened it
  std::uint32_t page_size_;
  std::uint32_t pool_pages_;
  const bool durable_;
  statistics stats_ QS_GUARDED_BY(mutex_);
  schema_registry schema_ QS_GUARDED_BY(mutex_);
  page_table table_ QS_GUARDED_BY(mutex_);
  transaction_log log_ QS_GUARDED_BY(mutex_);
  std::uint64_t txn_log_start_ QS_GUARDED_BY(mutex_) = 0;
  std::exception_ptr failed_ QS_GUARDED_BY(mutex_);  // see fail_transaction; null after abort
  // The threads that may touch persistent data while a transaction is open:
  // the one that began it, and those that joined it (qs::join_transaction).
  std::thread::id txn_thread_ QS_GUARDED_BY(mutex_);
  std::vector<std::thread::id> joined_threads_ QS_GUARDED_BY(mutex_);
  // The components: each pointer is set once, in the constructor; what it
  // points to is guarded by the lock.
  std::unique_ptr<buffer_pool> pool_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<page_access> access_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<page_words> words_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<pointer_check> pointers_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<relocator> relocator_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<pager> pager_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<object_allocator> allocator_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<references> refs_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<roots> roots_ QS_PT_GUARDED_BY(mutex_);
  std::unique_ptr<indexes> indexes_ QS_PT_GUARDED_BY(mutex_);
};

// Holds a database's mutex and marks the thread as inside the runtime.
// Refuses (qs::error) a database opened by the parent of a forked process.
class QS_SCOPED_CAPABILITY lock_scope {
 public:
  explicit lock_scope(const database_impl& db) QS_ACQUIRE(db.mutex_);
  ~lock_scope() QS_RELEASE();
  lock_scope(const lock_scope&) = delete;
  lock_scope& operator=(const lock_scope&) = delete;
  // Whether the calling thread is inside the runtime of some database.
  static bool held() noexcept;

 private:
  mutex& mutex_;
};

}  // namespace qs::detail
