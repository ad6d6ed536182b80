// commit_outcomes.hpp: what became of recent commits, so that a client whose
// connection dropped during a commit can ask whether it committed.
//
// Every transaction gets an identity when it begins (claim): the server's
// clock (nanoseconds since the epoch) and a random 64-bit nonce, which the
// client keeps. The transaction takes an exclusive Berkeley DB lock on that
// identity (object "qs:c" + identity) and holds it until it ends; its commit
// writes a record under the identity, in the committing Berkeley DB
// transaction itself (record), so the record is there exactly when the
// commit is, across a crash and recovery too.
//
// A client that lost its connection during the commit asks on a new one
// (outcome). The identity's lock tells whether its transaction is still
// going on (pending: a session may still be applying or committing it); once
// the lock is free the transaction has ended and can never commit again, and
// the record says which way it went, until the record expires. A
// transaction that wrote nothing has no record (its commit writes nothing):
// its outcome is `aborted`, which for it is the same as committed.
//
// Records live in the B-tree outcomes.db, keyed by the identity (a lane of
// 16 taken from the nonce, so that concurrent commits seldom write the same
// leaf; then time and nonce, big-endian), with the commit's time as value.
// They are kept for a window (10 minutes by default) after both the
// transaction's begin and its commit; sweep() deletes older ones, a batch at
// a time, in a transaction of its own that waits for no lock (a sweep that
// meets a lock gives up until the next one), and raises the record
// "horizon": every identity whose time is at or before it may have lost its
// record. An identity without a record is `aborted` when its time is after
// the horizon, `expired` (unknown) otherwise; this holds whatever the clock
// does (a clock set back only makes more answers `expired`). Sweeps run when
// the server starts, once per 256 commits, and before each outcome is
// answered; so the table holds about the window's commits.
//
// Identities come from the client as hostile input: any value is a valid
// key, and answering about one locks and reads only that key (besides a
// sweep). A client that guesses another's identity (a 64-bit nonce) learns
// only its outcome, and cannot change it.
//
// Thread-safety: every member may be called from any session thread at once.
#pragma once

#include <qs/bdb/bdb_env.hpp>
#include <qs/wire/messages.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

class Db;

namespace qs::server {

class commit_outcomes {
 public:
  // Opens (creating when absent) outcomes.db in env, and sweeps it; on a
  // replica (env.replica_reads()), opens it read-only.
  commit_outcomes(detail::bdb_env& env, std::uint64_t window_seconds);
  // The commit time of about the newest commit recorded, as seen by t
  // (nanoseconds since the epoch; 0 when none): what a replica has applied.
  std::uint64_t newest_commit_ns(DbTxn* t);
  // The clock commit times are read from.
  static std::uint64_t now();
  // Closes outcomes.db; before env closes.
  ~commit_outcomes();
  commit_outcomes(const commit_outcomes&) = delete;
  commit_outcomes& operator=(const commit_outcomes&) = delete;

  // A new identity for transaction t, which holds its lock from now on.
  wire::commit_id claim(DbTxn* t);
  // Writes, in t, that t (whose identity is id) commits. Called after its
  // last write, before it commits.
  void record(DbTxn* t, const wire::commit_id& id);
  // Called after each commit: sweeps once per 256.
  void committed() noexcept;
  // What became of the transaction of identity id.
  wire::commit_outcome outcome(const wire::commit_id& id);
  // Deletes up to a batch of expired records; false when it deleted fewer
  // (nothing more to do, or it met a lock and gave up).
  bool sweep();

 private:
  detail::bdb_env& env_;
  std::uint64_t window_ns_;
  std::unique_ptr<Db> db_;
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<bool> sweeping_{false};
};

}  // namespace qs::server
