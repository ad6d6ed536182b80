// session.hpp: one client connection's conversation with the server: the
// protocol's state machine and its transaction.
//
// States: waiting for hello -> idle <-> in a transaction.
//
// A client transaction is optimistic (as THOR's were): it reads one
// consistent snapshot of the database and takes no lock until it commits.
//  * Reads (pages, metadata) run in a Berkeley DB snapshot transaction
//    (DB_TXN_SNAPSHOT on a DB_MULTIVERSION environment), begun with the
//    client's transaction: they see the database as committed when the
//    first of them ran (Berkeley DB fixes a snapshot transaction's read
//    point at its first page read, one point for every database), never
//    wait for a writer, and never fail for concurrency.
//    Revalidation of a client's cached page compares its version with the
//    snapshot's. The snapshot transaction holds one lock: the transaction's
//    identity (commit_outcomes.hpp).
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
//  * Pages sent ahead (write) are locked without waiting and validated at
//    once; a lock that is not free or a page that changed fails the
//    transaction with a conflict, answered at its commit. A failed
//    transaction (a conflict, a store error) has its write transaction
//    aborted at once, so that its locks go to the others; its reads are
//    still served from the snapshot (a client's faults never get a conflict),
//    its index calls and its commit get the error.
// A transaction that wrote nothing commits without validation: it saw one
// consistent snapshot.
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
// handle() turns one request body into one response and says whether the
// connection must close (a protocol error, a failed hello). It never throws
// for anything a client sends. refuse() answers a request the server did not
// take (its body was dropped): the request fails, and so does its
// transaction, as after a store error.
#pragma once

#include "commit_counters.hpp"
#include "commit_outcomes.hpp"
#include "page_numbers.hpp"

#include <qs/bdb/bdb_env.hpp>
#include <qs/wire/messages.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace qs::server {

struct session_config {
  detail::bdb_env* env;
  page_numbers* numbers;
  commit_outcomes* outcomes;
  commit_counters* counters;
  // Commits hold it shared, from their first lock to their end; one whose
  // read set is too large to lock page by page (big_read_set) holds it
  // alone and locks only what it writes.
  std::shared_mutex* commit_gate;
  // Sessions whose write transaction holds pages sent ahead: their locks
  // (ours and Berkeley DB's) last until their commit, which a commit that
  // runs alone would keep waiting; it is refused instead while any do.
  std::atomic<int>* sending_ahead;
  // Each refused commit gets a log line (otherwise they are only counted).
  bool log_conflicts;
  bool need_secret;
  std::string secret;
  // How long a transaction's snapshot is kept (zero: no limit).
  std::chrono::milliseconds snapshot_max_age{};
  // Told the bytes an answer is about to take as a scan gathers it; throws
  // (a qs::error, whose text the client gets) when the server cannot give
  // them. Empty: answers are not counted.
  std::function<void(std::size_t)> charge;
};

// A serializable commit that read more pages than this runs alone.
constexpr std::size_t big_read_set = 16384;

class session {
 public:
  session(const session_config& c, std::uint64_t id);
  ~session();  // aborts an open transaction
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Handles a request body; writes the response to `out`. Sets `close` when
  // the connection must be closed after the response is sent.
  void handle(std::span<const std::byte> body, wire::writer& out, bool& close);
  // `first` holds the refused request's first byte (its type); `why` is the
  // error's text.
  void refuse(std::span<const std::byte> first, const std::string& why, wire::writer& out);
  bool in_transaction() const { return state_ == state::txn; }
  // A Berkeley DB transaction is open (and may hold locks).
  bool transaction_open() const { return snap_ != nullptr || write_ != nullptr; }
  // When the open transaction's snapshot is due to be released (max: never).
  std::chrono::steady_clock::time_point snapshot_deadline() const;
  // Releases the snapshot if it is due (see above): the transaction fails.
  // Says whether it released one.
  bool release_snapshot_if_due();

 private:
  enum class state { hello, idle, txn };
  // Answers one request: hello first, then the handler of its type (on).
  wire::response dispatch(const wire::request& r);
  wire::response hello(const wire::hello_request& m);
  // One handler per request type.
  wire::response on(const wire::hello_request& m);  // a second hello: refused
  wire::response on(const wire::begin_request& m);
  wire::response on(const wire::abort_request& m);
  wire::response on(const wire::write_request& m);
  wire::response on(const wire::commit_request& m);
  wire::response on(const wire::read_page_request& m);
  wire::response on(const wire::get_request& m);
  wire::response on(const wire::scan_request& m);
  wire::response on(const wire::allocate_request& m);
  wire::response on(const wire::open_index_request& m);
  wire::response on(const wire::index_insert_request& m);
  wire::response on(const wire::index_erase_request& m);
  wire::response on(const wire::index_scan_request& m);
  wire::response on(const wire::log_position_request& m);
  wire::response on(const wire::outcome_request& m);
  wire::response on(const wire::ping_request& m);
  // What a read reads: the open transaction's snapshot, or nullptr outside
  // one; throws the failure of a transaction whose snapshot was released.
  DbTxn* read_snapshot() const;
  // Refuses (protocol_error) a request of `type` outside a transaction.
  void require_txn(wire::msg type) const;
  // Whether an index call runs in the open transaction; throws its failure.
  bool index_in_txn() const;
  wire::response error_reply(wire::error_code code, std::string text);
  wire::response commit(const wire::commit_request& m);
  wire::response write_ahead(const wire::write_request& m);
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
  // Refuses a metadata write no client may make: a record the server owns
  // (page and frame counters, page size, format, base) once the database
  // exists, one created with a value out of range, or an unknown key.
  void check_meta(const wire::meta_op& op, bool database_exists);
  // A read the commit checks: metadata records and scanned prefixes, as the
  // snapshot had them.
  void note_read(std::string_view key, const std::optional<std::string>& value);
  void note_scan(std::string_view prefix, const std::vector<std::pair<std::string, std::string>>& entries);
  // Index calls in a transaction: they read its snapshot with its own
  // updates laid over it (index_changes_); an update also goes to the write
  // transaction, and one that finds the latest committed index disagreeing
  // with the snapshot (another transaction inserted or erased the entry
  // since) is a conflict.
  bool index_insert(std::uint32_t index, std::string_view key, std::string_view value);
  bool index_erase(std::uint32_t index, std::string_view key, std::string_view value_prefix);
  // Calls f for the entries lo <= key <= hi of the transaction's view of
  // `index`, in (key, value) order, until f returns false.
  void scan_view(std::uint32_t index, std::string_view lo, std::string_view hi,
                 const std::function<bool(std::string_view, std::string_view)>& f);
  // The transaction failed: its write transaction is aborted now, and its
  // commit and explicit calls answer `code`, `text`.
  void fail(wire::error_code code, const std::string& text);
  void abort_writer() noexcept;
  // Aborts txn, when open, and empties it; a failure is logged.
  void abort_txn(DbTxn*& txn) noexcept;
  // Empties what the session keeps of its transaction besides the Berkeley
  // DB transactions (locks held, reads noted, failure, reservation).
  void forget_transaction() noexcept;
  // Empties written_ahead_, and counts the session out of sending_ahead.
  void forget_written_ahead() noexcept;
  // Ends both Berkeley DB transactions: the write transaction committed
  // (durable or not) or aborted, then the snapshot.
  void end_transaction(bool commit, bool durable);
  void abort_quietly() noexcept;
  std::uint32_t page_size();

  session_config c_;
  std::uint64_t id_;
  state state_ = state::hello;
  DbTxn* snap_ = nullptr;  // the snapshot the transaction reads
  std::chrono::steady_clock::time_point snap_began_{};
  DbTxn* write_ = nullptr;       // its writes, once it has some
  wire::commit_id commit_id_{};  // the open transaction's
  struct failure {
    wire::error_code code;
    std::string text;
  };
  std::optional<failure> failed_;
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
  std::vector<std::byte> scratch_;
  std::string mapping_;  // the mapping object sent with the last page
  std::uint32_t page_size_ = 0;
  std::string text_;        // backs byte strings of the response (value, pong)
  std::string error_text_;  // backs an error response's text
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace qs::server
