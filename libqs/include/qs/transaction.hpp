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
//  * The transaction most recently begun in the process is the current one;
//    qs::allocator allocates in its database.
//  * After commit() or abort() the object is finished: no second commit.
//  * A commit that throws has aborted the transaction.
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

  // The current transaction of this process, or nullptr.
  static transaction* current() noexcept;

 private:
  database* db_;
  transaction* previous_;
  bool active_ = true;
};

}  // namespace qs
