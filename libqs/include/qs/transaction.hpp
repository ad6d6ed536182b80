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
//  * Each thread has its own current transaction: the innermost one it
//    began that is still open (transactions on different databases may
//    nest, and may end in any order). qs::allocator allocates in its
//    database.
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
// committed, aborted and destroyed there.
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

}  // namespace qs
