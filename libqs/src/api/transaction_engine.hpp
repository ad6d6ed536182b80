// api/transaction_engine.hpp: begin, commit and abort of one open database, and
// which threads may work in its open transaction.
//
// The engine runs the sequences that span the runtime's components at a
// transaction's edges: begin (a fresh frame assignment when the reservation
// runs short, the store's transaction, revalidation of a shared store's
// cached pages, or of those a coherent store says changed), commit (a
// coherent store's check that no page the transaction could have read was
// invalidated while it ran, the pointer checks, one-time relocation's write
// backs, the written and created pages, the allocator's list, the store's
// commit) and abort (everything the transaction changed, undone). It also
// keeps the transaction's thread rule: the thread that began it and those
// that joined it (qs::join_transaction) may touch persistent data; any other
// thread is refused with qs::no_transaction. And a failed transaction (an
// error raised in a fault, or where an exception could not be thrown) can
// only abort: every later call in it throws that error again.
//
// Invariants:
//  * open() <=> the store has a transaction open;
//  * failed() is null whenever no transaction is open;
//  * after a commit or abort, whatever happened, no transaction is open
//    (commit aborts on any error).
//
// Thread-safety: none of its own; the coordinator calls it under the lock
// that guards the runtime.
#pragma once

#include "api/runtime.hpp"

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace qs::detail {

class database_impl;

class transaction_engine {
 public:
  transaction_engine(runtime& rt, bool durable) : rt_(rt), durable_(durable) {}
  transaction_engine(const transaction_engine&) = delete;
  transaction_engine& operator=(const transaction_engine&) = delete;

  bool open() const { return rt_.log.open(); }
  // Begins a transaction of the calling thread; `db` becomes the current
  // database of the mode (software mode's references).
  void begin(database_impl* db);
  // Commits the open transaction, or aborts it and throws what went wrong
  // (the failure a failed transaction carries, first).
  void commit();
  // Undoes the open transaction. Requires open().
  void abort();

  // The calling thread works in the open transaction until leave(); `db`
  // becomes its current database (software mode's references).
  void join(database_impl* db);
  void leave();
  // Whether the calling thread began or joined the open transaction.
  bool in_this_transaction() const;
  // Records `e` as the open transaction's failure, unless it has one; false
  // when no transaction is open.
  bool fail(std::exception_ptr e);
  // The failure of an error raised in a fault, when the faulting thread is
  // in the open transaction (another thread's refusal fails nothing).
  void fail_from_fault(std::exception_ptr e);

  // The checks below take the words of their message as views, and make a
  // message only to refuse: they run on every allocation and on every slow
  // path of a software-mode reference.
  //
  // Throws unless the calling thread is in the open, unfailed transaction;
  // `what` says what needed it ("allocating a persistent object").
  void require(std::string_view what) const;
  // Throws when a transaction is open that the calling thread is not in, or
  // when it failed: what a call that also works outside a transaction needs.
  // `what` names what needed it, with `name`, quoted, when given.
  void require_not_other(std::string_view what, std::string_view name = {}) const {
    if (open() && !in_this_transaction()) outside(what, name);
    throw_if_failed();
  }
  // The qs::no_transaction of a thread outside the open transaction.
  [[noreturn]] void outside(std::string_view what, std::string_view name = {}) const;
  void throw_if_failed() const;

 private:
  // e, its qs::error naming the database (qs::error::name_database).
  std::exception_ptr named(std::exception_ptr e) const;

  runtime& rt_;
  const bool durable_;
  std::uint64_t log_start_ = 0;  // the store's log position at begin
  std::exception_ptr failed_;    // see fail(); null after abort
  // A coherent store (store.hpp): transactions still to follow their reads
  // page by page, after a commit refused for a conflict.
  static constexpr int tracked_after_conflict = 8;
  int tracked_left_ = 0;
  // The threads that may touch persistent data while a transaction is open:
  // the one that began it, and those that joined it.
  std::thread::id thread_;
  std::vector<std::thread::id> joined_;
};

}  // namespace qs::detail
