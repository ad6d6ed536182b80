// qs/transaction.hpp: ACID transactions over a database.
//
// A transaction begins when constructed and ends with commit(); if it is
// destroyed without a commit, it aborts and every persistent byte it changed
// is restored. At commit every page the transaction wrote is diffed against
// its before-image and the changed ranges go to the store in one store
// transaction, atomically and (by default) durably.
//
// Invariants:
//  * At most one transaction per database handle is open at a time.
//  * A transaction belongs to the thread that began it. Another thread
//    touches persistent data of that database only after joining it
//    (qs::join_transaction below); until then every touch of it that qs
//    sees (a fault on a page, an allocation, a root, an index) throws
//    qs::no_transaction in that thread, whatever other threads are doing,
//    exactly as when no transaction is open. (A page the transaction has
//    already made resident, or writable, no longer faults: a stray thread's
//    touch of it cannot be seen. Keep threads out of data their thread's
//    transaction does not cover.)
//  * Each thread has its own current transaction: the innermost one it
//    began (or joined) that is still open (transactions on different
//    databases may nest, and may end in any order). qs::allocator allocates
//    in its database.
//  * After commit() or abort() the object is finished: no second commit.
//  * A commit that throws has aborted the transaction, with one exception:
//    qs::commit_unknown (error.hpp). A database served by qs-pageserver
//    whose connection drops during the commit connects again and asks the
//    server whether the transaction committed (for up to
//    options::reconnect_budget_ms): if it did, commit() returns normally;
//    if not, it throws qs::connection_lost and the transaction is aborted.
//    When the server cannot be reached in time, or no longer remembers the
//    commit, commit() throws qs::commit_unknown: the transaction may have
//    committed or not. Either way its changes in memory are discarded, as
//    by an abort, and the handle stays usable: the next transaction
//    connects again and sees what the server has. The program should
//    begin a new transaction (or reopen the database) and check whether
//    the transaction's effects are there before doing it again;
//    database::run does not retry it.
//  * `delete` (and qs::destroy, qs::allocator's deallocate) cannot throw.
//    When freeing a persistent object fails (a page server's deadlock or
//    lost connection, or a pointer to no object), the transaction fails
//    instead: the next use of it (a fault, an allocation, a root or an index)
//    throws what went wrong, and so does commit(), which aborts. db.run
//    retries such a deadlock as any other.
//
// Thread-safety: a transaction belongs to the thread that began it; it is
// committed, aborted and destroyed there. Threads that joined it
// (qs::join_transaction) may touch persistent data at the same time as it;
// they must have left before it commits or aborts.
#pragma once

#include <qs/database.hpp>

namespace qs {

class transaction {
 public:
  explicit transaction(database& db);
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  ~transaction();

  void commit();
  void abort();
  bool active() const { return active_; }
  database& db() const { return *db_; }

  // The current transaction of the calling thread, or nullptr.
  static transaction* current() noexcept;

 private:
  // Leaves the calling thread's stack of open transactions.
  void unlink() noexcept;

  database* db_;
  transaction* previous_;  // the next outer open transaction of this thread
  bool active_ = true;
};

// For its lifetime, the calling thread works in `tx`, a transaction another
// thread began: its faults are served in it, and qs::allocator allocates
// in it. Throws qs::no_transaction when tx is finished. Ends before tx
// commits or aborts (join the worker threads first).
//
//   qs::transaction tx(db);
//   std::thread worker([&] {
//     qs::join_transaction in(tx);
//     for (Node* n = head; n; n = n->next) n->value += 1;
//   });
//   worker.join();
//   tx.commit();
class join_transaction {
 public:
  explicit join_transaction(transaction& tx);
  ~join_transaction();
  join_transaction(const join_transaction&) = delete;
  join_transaction& operator=(const join_transaction&) = delete;

 private:
  transaction* tx_;
  transaction* previous_;  // what this thread had joined before
};

}  // namespace qs
