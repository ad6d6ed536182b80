// optimistic_transaction.hpp: one client transaction's concurrency control on
// the server: its snapshot, its write transaction, its locks, the reads it
// noted and the validation of its commit. The session (session.hpp) speaks
// the protocol and hands each request of a transaction to this.
//
// A client transaction is optimistic (as THOR's were): it reads one
// consistent snapshot of the database and takes no lock until it commits.
//  * Reads (pages, metadata) run in a Berkeley DB snapshot transaction
//    (DB_TXN_SNAPSHOT on a DB_MULTIVERSION environment), begun with the
//    client's transaction: they see the database as committed when the
//    first of them ran (Berkeley DB fixes a snapshot transaction's read
//    point at its first page read, one point for every database), never
//    wait for a writer, and never fail for concurrency.
//    The snapshot is taken when the transaction begins, before the answer
//    to begin (cache_directory.hpp's ordering rests on it). Revalidation of
//    a client's cached page compares its version with the snapshot's. The
//    snapshot transaction holds one lock: the transaction's identity
//    (commit_outcomes.hpp).
//  * Writes go to a second, ordinary Berkeley DB transaction, begun at the
//    first write: at the commit, or earlier for an index update or for the
//    pages a large transaction sends ahead (write). Index scans read the
//    snapshot with the transaction's own index updates laid over it, so
//    that what an index names is in the pages the transaction reads. The commit takes its
//    locks in one order (pages by number, then metadata keys), so that
//    commits never wait for each other in a cycle: page p's lock object is
//    "qs:p" + p, exclusive for a page written and shared for one read; a
//    metadata key's is "qs:m" + key (schema records "t:" share one; free-space
//    hints "s:" are advice and take none). Holding them it validates: every
//    page written must still have the version its page op says the snapshot
//    had, every metadata record written the snapshot's value; serializable
//    commits also check the pages the client says it read, and the metadata
//    records and prefixes this session read (clients scan the schema's "t:",
//    under its one lock object, and the free-space hints, which are not
//    checked; another prefix is checked but not locked). Then it applies the writes,
//    records the outcome and commits. A page or record that changed refuses
//    the commit with a conflict (error_code::conflict, naming it). A
//    Berkeley DB deadlock during the commit (B-tree page locks, not ours)
//    runs it again, a few times, unless the transaction wrote before its
//    commit (index updates, pages sent ahead): its client retries. A read set
//    of more than big_read_set pages would take too many of Berkeley DB's
//    locks (the lock table is shared by every session): such a commit waits
//    until it is the only commit running and keeps the others out until it
//    has ended, and locks only the pages it writes (no other commit can
//    change what it read meanwhile). While another transaction holds pages
//    it sent ahead (their locks last until its commit, which would wait for
//    this one), such a commit is refused with a conflict instead.
//  * A commit that adds many pages is written in bulk: a write request
//    whose adds_pages is bulk_min_pages or more (the client's first part of
//    a durable commit that adds that many pages), in a transaction that has
//    written nothing yet, begins its write transaction as a Berkeley DB bulk
//    transaction (bdb_env.hpp: the records on the pages it adds to
//    pages.db are not logged, and its commit syncs the file). Berkeley DB
//    allows one such writer per file, and no other meanwhile: the
//    transaction holds the commit gate alone from then until it ends, and
//    page numbers are handed out to others only after it. It does not
//    begin one while another transaction holds pages sent ahead, nor on a
//    site of a replication group (Berkeley DB ignores the flag there); an
//    index update in it is refused with a conflict. A client that stops
//    sending keeps the others waiting until its snapshot's age
//    (snapshot_max_age) fails its transaction.
//  * Pages sent ahead (write) are locked without waiting and validated at
//    once; a lock that is not free or a page that changed fails the
//    transaction with a conflict, answered at its commit. A failed
//    transaction (a conflict, a store error) has its write transaction
//    aborted at once, so that its locks go to the others; its reads are
//    still served from the snapshot (a client's faults never get a conflict),
//    its index calls and its commit get the error.
// A transaction that wrote nothing commits without validation: it saw one
// consistent snapshot.
// Holding its locks, after applying its writes and before its Berkeley DB
// commit, a commit pushes invalidations of the pages it changed to the
// other clients holding them, and, serializable, is undone when
// invalidations pushed to its own client had not all reached it
// (commit_request::invalidations_seen): one step of the cache directory's.
// That answer (error_code::crossed) leaves the transaction open, its
// writes undone, for the client to check them and commit again (refused
// with a conflict instead when it wrote before its commit).
//
// A snapshot makes Berkeley DB keep every version of a page committed since
// it began (in the cache, then in __db.freezer files past it), so one is
// kept at most snapshot_max_age: then it is released (release_snapshot_if_due,
// at the next request or when the server's wait for one runs out) and the
// transaction fails with a store error naming the limit, answered to its
// reads, index calls and commit.
//
// Optimistic transactions give no transaction a turn: one that keeps
// losing to others over the same pages could lose every time. A client
// whose commits were refused three times in a row names, at its next begin,
// the pages its last attempt wrote and read (at most wire::max_reserved):
// the session locks them (exclusive, shared), in page order, in its write
// transaction, and only then takes the snapshot. Nobody changes them until
// it commits, so if it touches the same pages again it cannot be refused;
// other commits that write them wait for it. A reservation that cannot be
// had (a lock timeout, a deadlock victim) answers begin with a conflict.
//
// Each transaction has an identity (commit_outcomes.hpp), sent with the
// answer to begin and recorded by its commit, by which a client whose
// connection dropped during the commit asks (outcome, outside a
// transaction) whether it committed.
//
// Thread-safety: one per session, used by the session's thread only; what
// it shares with the other sessions' transactions (the environment, the
// commit gate, the count of those sending ahead, the outcomes, the
// counters) is safe to share.
#pragma once

#include "cache_directory.hpp"
#include "commit_counters.hpp"
#include "commit_outcomes.hpp"

#include <qs/bdb/bdb_env.hpp>
#include <qs/wire/messages.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qs::server {

// What every session's transactions share.
struct transaction_config {
  detail::bdb_env* env;
  commit_outcomes* outcomes;
  commit_counters* counters;
  // Commits hold it shared, from their first lock to their end; one whose
  // read set is too large to lock page by page (big_read_set) holds it
  // alone and locks only what it writes.
  std::shared_mutex* commit_gate;
  // Which clients cache which pages: a commit pushes invalidations to the
  // others (cache_directory.hpp).
  cache_directory* directory;
  // Sessions whose write transaction holds pages sent ahead: their locks
  // (ours and Berkeley DB's) last until their commit, which a commit that
  // runs alone would keep waiting; it is refused instead while any do.
  std::atomic<int>* sending_ahead;
  // Each refused commit gets a log line (otherwise they are only counted).
  bool log_conflicts;
  // How long a transaction's snapshot is kept (zero: no limit); on a
  // replica, how long its reads keep their locks.
  std::chrono::milliseconds snapshot_max_age{};
  // A replica of a replication group serving read-only transactions:
  // Berkeley DB 5.3 takes no snapshot on a replication client, so a
  // transaction's reads run in an ordinary (degree 3) Berkeley DB
  // transaction that first takes the replica gate (bdb_env.hpp,
  // hold_replica_gate) and keeps its locks until it ends. The apply of the
  // master's transactions waits for it (at most snapshot_max_age) before
  // changing anything, so the pages one transaction reads are one committed
  // state of the database, and its reads never wait for the apply (never
  // a deadlock victim). Such a transaction claims no commit identity and
  // writes nothing.
  bool replica = false;
};

// A serializable commit that read more pages than this runs alone.
constexpr std::size_t big_read_set = 16384;

// Why a transaction failed, or a request of it is refused: what its client
// is answered. Thrown to the session by a request of a failed transaction.
struct transaction_failure {
  wire::error_code code;
  std::string text;
};

class optimistic_transaction {
 public:
  // `session` names the session in log lines.
  optimistic_transaction(const transaction_config& c, std::uint64_t session);
  ~optimistic_transaction();  // aborts an open one
  optimistic_transaction(const optimistic_transaction&) = delete;
  optimistic_transaction& operator=(const optimistic_transaction&) = delete;

  // Begins one: the pages to reserve locked (reserve: to write,
  // reserve_read: to read), then the snapshot taken. A reservation that
  // cannot be had is the failure returned (the transaction is not open);
  // other errors are thrown, the transaction not open either.
  std::optional<transaction_failure> begin(const std::vector<std::uint64_t>& reserve,
                                           const std::vector<std::uint64_t>& reserve_read);
  // The open transaction's identity (commit_outcomes.hpp).
  const wire::commit_id& id() const { return commit_id_; }
  // Pages sent ahead (see above); never fails the request: a conflict
  // fails the transaction, answered at its commit.
  void write_ahead(const wire::write_request& m);
  // Validates, applies and commits; the transaction has ended whatever
  // happens, except for a `crossed` answer (see above). A conflict or an
  // earlier failure is returned; other errors are thrown.
  std::optional<transaction_failure> commit(const wire::commit_request& m);
  // Ends the open transaction, if any, writing nothing.
  void abort() noexcept;

  // A Berkeley DB transaction is open (and may hold locks).
  bool open() const { return snap_ != nullptr || write_ != nullptr; }
  // The transaction failed: its write transaction is aborted now, and its
  // commit and index calls answer `code`, `text`.
  void fail(wire::error_code code, const std::string& text);
  // fail(), counted and logged as a request's error (a conflict or a store
  // error).
  void fail_request(wire::error_code code, const std::string& text);
  // Throws the failure of a failed transaction.
  void throw_if_failed() const;

  // Whether the transaction writes in bulk, holding the commit gate alone
  // (see above): what else takes the gate must not, on its session.
  bool writes_in_bulk() const { return bulk_gate_.owns_lock(); }

  // Whether `page` was sent ahead: its reads read the write transaction.
  bool sent_ahead(std::uint64_t page) const { return written_ahead_.contains(page); }
  // What the transaction's reads read: its snapshot; throws the failure of
  // a transaction whose snapshot was released.
  DbTxn* snapshot() const;
  // What a read of `page` reads: the write transaction for a page sent
  // ahead (as it wrote it), else the snapshot.
  DbTxn* reader_of(std::uint64_t page) const;
  // When the snapshot is due to be released (max: never).
  std::chrono::steady_clock::time_point snapshot_deadline() const;
  // Releases the snapshot if it is due (see above): the transaction fails.
  // Says whether it released one.
  bool release_snapshot_if_due();

  // A read the commit checks: metadata records and scanned prefixes, as
  // the snapshot had them.
  void note_read(std::string_view key, const std::optional<std::string>& value);
  void note_scan(std::string_view prefix, const std::vector<std::pair<std::string, std::string>>& entries);

  // Index calls: they read the snapshot with the transaction's own updates
  // laid over it (index_changes_); an update also goes to the write
  // transaction, and one that finds the latest committed index disagreeing
  // with the snapshot (another transaction inserted or erased the entry
  // since) is a conflict.
  bool index_insert(std::uint32_t index, std::string_view key, std::string_view value);
  bool index_erase(std::uint32_t index, std::string_view key, std::string_view value_prefix);
  // Calls f for the entries lo <= key <= hi of the transaction's view of
  // `index`, in (key, value) order, until f returns false.
  void scan_view(std::uint32_t index, std::string_view lo, std::string_view hi,
                 const std::function<bool(std::string_view, std::string_view)>& f);

 private:
  // The write transaction, begun when first needed.
  DbTxn* writer();
  void lock_page(std::uint64_t page, bool exclusive, bool wait = true);
  void lock_meta(std::string_view key, bool exclusive);
  void lock_object(const std::string& object, bool exclusive, bool wait);
  // Refuses (protocol_error) page ops whose records or patches do not fit
  // the database's records.
  void check_shapes(const std::vector<wire::page_op>& pages);
  // The writes of a write or commit request, in the write transaction, whose
  // locks are held; check_shapes has passed them.
  void apply(const std::vector<wire::page_op>& pages, const std::vector<wire::meta_op>& metas, bool commit);
  // Throws a conflict unless page `page` has version `version` now
  // (wire::no_record: no record). `how` says why the version was expected.
  void expect_version(std::uint64_t page, std::uint64_t version, const char* how);
  // The locks and checks of a commit (see above).
  void validate(const wire::commit_request& m, bool alone);
  // The pages the commit changes, with their new versions (no_record:
  // removed), once apply() has run.
  std::vector<wire::invalidation> changed_pages(const wire::commit_request& m);
  // Refuses a metadata write no client may make: a record the server owns
  // (page and frame counters, page size, format, base) once the database
  // exists, one created with a value out of range, or an unknown key.
  void check_meta(const wire::meta_op& op, bool database_exists);
  // A conflict that refuses a begin or a commit, counted and logged, as its
  // client is answered.
  transaction_failure conflict_answer(const std::string& text);
  void abort_writer() noexcept;
  // Throws a conflict in a transaction that writes in bulk.
  void refuse_index_update_in_bulk() const;
  // Begins the write transaction in bulk, holding the commit gate alone,
  // when it may (see above).
  void begin_bulk();
  // Lets the others have the commit gate, once the bulk write transaction
  // has ended.
  void release_bulk() noexcept;
  // Aborts txn, when open, and empties it; a failure is logged.
  void abort_txn(DbTxn*& txn) noexcept;
  // Empties what is kept of the transaction besides the Berkeley DB
  // transactions (locks held, reads noted, failure, reservation).
  void forget() noexcept;
  // Empties written_ahead_, and counts the session out of sending_ahead.
  void forget_written_ahead() noexcept;
  // Ends both Berkeley DB transactions: the write transaction committed
  // (durable or not) or aborted, then the snapshot.
  void end(bool commit, bool durable);
  std::uint32_t page_size();

  transaction_config c_;
  std::uint64_t session_;
  DbTxn* snap_ = nullptr;  // the snapshot the transaction reads
  std::chrono::steady_clock::time_point snap_began_{};
  DbTxn* write_ = nullptr;  // its writes, once it has some
  // The commit gate, held alone while write_ is a bulk transaction.
  std::unique_lock<std::shared_mutex> bulk_gate_;
  wire::commit_id commit_id_{};  // the open transaction's
  std::optional<transaction_failure> failed_;
  bool reserved_ = false;  // begin locked pages (see above)
  // Locks the write transaction holds: object -> exclusive.
  std::unordered_map<std::string, bool> locks_;
  // Pages sent ahead, in the write transaction: read from there.
  std::set<std::uint64_t> written_ahead_;
  // Metadata the transaction read in its snapshot (key -> value), and
  // prefixes it scanned (prefix -> the entries, encoded).
  std::map<std::string, std::optional<std::string>, std::less<>> meta_reads_;
  std::map<std::string, std::string, std::less<>> scan_reads_;
  struct index_change {
    std::uint32_t index;
    std::string key;
    std::string value;
    bool insert;  // else erased
  };
  std::vector<index_change> index_changes_;
  std::uint32_t page_size_ = 0;
};

}  // namespace qs::server
