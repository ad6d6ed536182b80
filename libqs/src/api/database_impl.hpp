// api/database_impl.hpp: one open database, the coordinator: its lock, and
// the entry points the public API, the fault handler and software mode's
// references call.
//
// What it coordinates is built elsewhere, once: the components of the page
// cache in a runtime (runtime.hpp), the sequences at a transaction's edges
// in a transaction_engine (transaction_engine.hpp), and schema evolution's
// view of pages, roots and index entries in evolution_access
// (evolution_access.hpp), a facade over the runtime that takes this lock.
// Each entry point here takes the lock, asks the engine whether the calling
// thread may act, and hands the work to one component; the fault path
// (serve_fault) is the one sequence of its own. The entry points are the
// boundary where errors get the database's name: the components below
// throw without it, and an error leaving an entry point (or the open) says
// "database NAME: ..." once (qs::error::name_database).
//
// Invariants (beyond those of the parts):
//  * Page and frame numbers come from store::allocate_pages.
//  * A database belongs to the process that opened it: in a child made by
//    fork() its memory is gone (os/frames.hpp) and every call is refused.
//
// Thread-safety: one mutex guards the runtime and the engine, biased
// towards the thread that took it last (os/biased_mutex.hpp: a program's
// thread that allocates and faults takes it with no atomic instruction
// until another thread asks for it). Entry points
// (the fault handler, allocation, transaction begin/commit/abort, roots,
// indexes, software mode's references, evolution_access) take it; the
// components assume it is held. While holding it, the runtime reads and
// writes pages only through its own view of the frames' memory
// (page_access::image), never through the frames, so it cannot fault on its
// own lock.
#pragma once

#include "api/runtime.hpp"
#include "api/transaction_engine.hpp"
#include "os/biased_mutex.hpp"
#include "os/fault_signal.hpp"
#include "store/store.hpp"
#include "util/thread_annotations.hpp"

#include <qs/database.hpp>
#include <qs/index.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
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
  void on_fault(void* address, bool write, const void* code) override QS_EXCLUDES(mutex_);

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
  // qs::load_dump: makes the object at `cell` root `name`, holding a
  // `mangled_type` (typeid's name), in the open transaction.
  void adopt_root(std::string_view name, void* cell, const std::string& mangled_type) QS_EXCLUDES(mutex_);

  // Runs f(runtime&, transaction_engine&) under the lock, and returns what
  // it returns: how the facades over the runtime (evolution_access,
  // software mode's references in software_ref.cpp) reach it.
  template <class F>
  decltype(auto) with_runtime(F&& f) QS_EXCLUDES(mutex_);

  void release_cache() QS_EXCLUDES(mutex_);
  // qs::database::backup: the store's job, made under the lock, run without it.
  void backup(const std::string& target) QS_EXCLUDES(mutex_);
  // The reservation's and the pool's bounds never change while the database
  // is open: no lock.
  bool contains(const void* p) const QS_NO_THREAD_SAFETY_ANALYSIS { return rt_.access.contains(p); }
  std::uint32_t page_size() const QS_NO_THREAD_SAFETY_ANALYSIS { return rt_.page_size; }
  std::uint32_t pool_pages() const QS_NO_THREAD_SAFETY_ANALYSIS { return rt_.pool.size(); }
  // Whether the program's touches fault pages in (hardware mode). Fixed for
  // the database's life: no lock.
  bool faults_pages_in() const QS_NO_THREAD_SAFETY_ANALYSIS { return page_access::faults_pages_in; }
  // The store's name never changes: no lock.
  const std::string& name() const QS_NO_THREAD_SAFETY_ANALYSIS { return store_->name(); }
  bool follows_master() const QS_NO_THREAD_SAFETY_ANALYSIS { return store_->follows_master(); }
  statistics stats() const QS_EXCLUDES(mutex_);

 private:
  friend class lock_scope;
  // Runs f; a qs::error it throws names this database.
  template <class F>
  decltype(auto) named(F&& f) const;
  // The fault itself, taken by the instruction at `code`; on_fault fails
  // the transaction with what it throws.
  void serve_fault(void* address, bool write, const void* code) QS_REQUIRES(mutex_);
  // Whether `page` is past every page the database has allocated.
  bool beyond_last_page(std::uint64_t page) QS_REQUIRES(mutex_);

  mutable biased_mutex mutex_;
  std::unique_ptr<store> store_;
  const std::uint64_t fork_generation_;  // of the process that opened it
  runtime rt_ QS_GUARDED_BY(mutex_);
  transaction_engine tx_ QS_GUARDED_BY(mutex_);
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
  biased_mutex& mutex_;
};

template <class F>
decltype(auto) database_impl::named(F&& f) const {
  try {
    return f();
  } catch (error& e) {
    e.name_database(name());
    throw;
  }
}

template <class F>
decltype(auto) database_impl::with_runtime(F&& f) {
  return named([&]() -> decltype(auto) {
    lock_scope g(*this);
    return f(rt_, tx_);
  });
}

}  // namespace qs::detail
