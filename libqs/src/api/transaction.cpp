// The public qs::transaction object, and database::run.
#include "api/database_impl.hpp"

#include <qs/persistent.hpp>
#include <qs/transaction.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

namespace qs::detail {

namespace {
// The innermost open transaction of this thread; each links to the next
// outer one.
thread_local transaction* current_txn = nullptr;
// The innermost transaction of another thread this thread joined.
thread_local transaction* joined_txn = nullptr;
}  // namespace

database& current_database() {
  transaction* t = current_txn ? current_txn : joined_txn;
  if (!t) throw no_transaction("qs::allocator needs a transaction: none is open");
  return t->db();
}

}  // namespace qs::detail

namespace qs {

transaction::transaction(database& db) : db_(&db) {
  detail::impl_of(db).begin();
  previous_ = detail::current_txn;
  detail::current_txn = this;
}

void transaction::unlink() noexcept {
  // Usually the innermost; a transaction on another database may end first.
  for (transaction** at = &detail::current_txn; *at; at = &(*at)->previous_) {
    if (*at == this) {
      *at = previous_;
      return;
    }
  }
}

transaction::~transaction() {
  if (!active_) return;
  try {
    abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs: abort of database %s failed: %s\n", db_->path().c_str(), e.what());
  }
}

void transaction::commit() {
  if (!active_) throw error("database " + db_->path() + ": commit of a finished transaction");
  active_ = false;
  unlink();
  detail::impl_of(*db_).commit();
}

void transaction::abort() {
  if (!active_) return;
  active_ = false;
  unlink();
  detail::impl_of(*db_).abort();
}

transaction* transaction::current() noexcept { return detail::current_txn; }

join_transaction::join_transaction(transaction& tx) : tx_(&tx), previous_(nullptr) {
  if (!tx.active()) throw no_transaction("database " + tx.db().path() + ": joining a finished transaction");
  detail::impl_of(tx.db()).join();
  previous_ = detail::joined_txn;
  detail::joined_txn = &tx;
}

join_transaction::~join_transaction() {
  detail::joined_txn = previous_;
  try {
    detail::impl_of(tx_->db()).leave();
  } catch (...) {
  }
}

void database::run(const std::function<void()>& body, int attempts) {
  if (attempts < 1) throw invalid_argument("database " + path() + ": run needs at least one attempt");
  std::minstd_rand rng(static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                       static_cast<unsigned>(::getpid()));
  for (int attempt = 1;; ++attempt) {
    try {
      transaction tx(*this);
      body();
      tx.commit();
      return;
    } catch (const conflict& e) {
      // The transaction has been aborted (by the commit, or by tx's
      // destructor). Wait a little, longer after each loss, and retry.
      if (attempt >= attempts)
        throw conflict(std::string(e.what()) + " (db.run gave up after " + std::to_string(attempt) +
                       (attempt == 1 ? " attempt" : " attempts") +
                       ", each refused by a conflict; a larger `attempts` argument allows more)");
      int cap_us = 200 << std::min(attempt, 7);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % cap_us));
    } catch (const connection_lost&) {
      // The transaction is aborted (a commit whose outcome is unknown
      // throws commit_unknown instead). With a replication group's sites
      // named, the next begin finds the master, waiting for an election
      // within options::reconnect_budget_ms.
      if (!detail::impl_of(*this).follows_master() || attempt >= attempts) throw;
    }
  }
}

}  // namespace qs
