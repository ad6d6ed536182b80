// qs/bdb/bdb_env.hpp: one Berkeley DB transactional environment and its databases,
// shared by every transaction that uses it.
//
// The embedded store (bdb_store) opens one for its single client;
// qs-pageserver opens one and runs a Berkeley DB transaction per client
// session on it. Every operation takes the transaction it belongs to
// explicitly (nullptr: no transaction; writes then commit on their own), so
// that any number of transactions can use the environment from their own
// threads (DB_THREAD).
//
// Page records are in the B-tree `pages.db`, in pieces of 1 KiB keyed by
// the big-endian page number and the piece's number (Berkeley DB rewrites a
// whole item, comparing it byte by byte, for every partial put: a small
// change to a page costs a piece, not a page); a page's mapping object is
// there too, right after its pieces (key: the page's 8 bytes and 'm'), on
// the same B-tree leaf as a rule, so that reading it with the page costs no
// extra I/O. Metadata is in the B-tree `meta.db`.
// Each index is a B-tree of its own, `index.<name>.db`, with sorted
// duplicates unless it is unique; index handles live as long as the
// environment and are numbered in the order opened. Page records carry their
// own checksum; meta.db and the indexes are created with DB_CHKSUM, so that
// Berkeley DB refuses a B-tree page of theirs whose bytes changed on disk
// (a store_error saying "checksum"). A site of a replication group also
// has `gate.db`, the replica gate (hold_replica_gate below).
//
// Partial page updates are Berkeley DB partial puts of the pieces they
// touch; Berkeley DB logs only the bytes between the first and last changed
// byte of each put.
//
// An environment may instead be laid out with a page file (page_file.hpp),
// chosen when it is created (page_file_slot) and kept for its life: page
// records are then slots of `pages.qs`, and only mapping objects stay in
// pages.db. A write to a record is an application record in Berkeley DB's
// log, in the writing transaction (page_log.hpp), written to the file once
// the commit is in the log (a durable commit's by a thread of their own,
// after it returned: background_apply.hpp); recovery (the environment's app_dispatch)
// writes the committed ones again. The file is synced before every
// checkpoint, qs's own and the clean close's. A record write reserves the
// file's blocks first, so that the write after the commit never needs room.
// Such an environment has one client, in its own process: it is neither
// multiversion (qs-pageserver's snapshots) nor replicated, and its hot
// backup copies the page file before Berkeley DB copies the rest.
//
// Opening runs Berkeley DB recovery only when it is needed: a clean close
// (every page checkpointed into the data files, the log flushed) leaves the
// file `closed-cleanly` in the directory, and the first write of the next
// open removes it (durably) before anything reaches the files. A process
// killed at any point therefore leaves either the mark and consistent files,
// or no mark, and then the next open recovers. An open that writes nothing
// changes no file. Log files are 8 MiB and removed once checkpointed. The
// transactional environment the first write needs may be opened ahead, on
// another thread (prepare_to_write): opening it writes nothing.
//
// Until its first write the environment is not transactional, and Berkeley
// DB maps its data files read-only (set_mp_mmapsize; unless told not to)
// instead of copying
// their B-tree pages into its cache: a read copies a record from the OS
// page cache once. A file of 4 GiB or more is read through the cache all
// the same: Berkeley DB 5.3 computes a mapped page's offset in 32 bits
// (page number times page size, mp_fget.c), so past 4 GiB it would hand
// out another page of the file. As with any mapped file, an I/O error under such a read
// (a failing disk, or a file truncated by someone else) ends the process
// with SIGBUS instead of an error; nothing committed is lost by it. The
// first write reopens the environment transactional, with its files read
// through the cache (Berkeley DB maps only files opened read-only).
//
// A failed write (a full disk, an I/O error) breaks the environment for
// good: the call that met it throws qs::write_failed, Berkeley DB is told to
// refuse everything from then on (so that no page reaches the files ahead of
// the log records it needs), and every later call throws the same error. A
// commit returns only when its commit record reached the log with no write
// failing on the way; one that met a failure throws, saying whether it may
// have committed.
//
// Errors throw qs::store_error naming the directory (deadlock_victim when
// Berkeley DB chose the transaction as a deadlock victim, qs::conflict when
// it refused a lock that was not granted within the lock or transaction
// timeout).
//
// Thread-safety: every member may be called from any thread at once, each
// transaction from one thread at a time.
#pragma once

#include <qs/base/error.hpp>
#include <qs/bdb/background_apply.hpp>
#include <qs/bdb/fresh_slots.hpp>
#include <qs/bdb/page_file.hpp>
#include <qs/bdb/page_log.hpp>
#include <qs/bdb/replication.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

class DbEnv;
class Db;
class DbTxn;
class DbLsn;
class Dbt;

namespace qs::detail {

// The transaction was chosen by Berkeley DB's deadlock detector
// (DB_LOCK_DEADLOCK) and must abort; a qs::conflict, as a lock request
// refused for a timeout is.
class deadlock_victim : public conflict {
 public:
  using conflict::conflict;
};

// The file in a database's directory that marks it as a qs database, and
// whose flock says which process owns it (the embedded store or
// qs-pageserver).
constexpr const char* database_lock_file = "qs.lock";

// The most Berkeley DB locks one transaction may hold (a written page takes
// about two and a half): the lock table grows up to this as locks are taken.
constexpr std::uint32_t default_max_locks = 200000;

// A data file of this size or more is read through Berkeley DB's cache even
// before the first write, never mapped (see above).
constexpr std::uint64_t max_mapped_file_bytes = std::uint64_t{1} << 32;

// A durable commit that adds this many pages or more is written in a bulk
// transaction (txn_kind::bulk): in the page-file layout its new pages go
// into the page file in place, unlogged, the file synced before the commit
// record (the million-node build: 0.60 s and 73 MB logged against 0.29 to
// 0.33 s and 943 bytes; docs/performance.md). A commit that adds fewer,
// however many pages it changes, logs as always: a sync of the file per
// small commit would cost more than the few records it keeps out of the
// log. The page server runs such a commit alone (a plain transaction for
// Berkeley DB; see txn_kind).
constexpr std::size_t bulk_min_pages = 256;

struct bdb_options {
  std::uint32_t page_size;
  std::uint64_t cache_bytes;
  std::uint32_t max_locks = default_max_locks;
  bool map_files = true;   // see bdb_env's constructor
  bool page_file = false;  // a new environment is laid out with a page file
};

class bdb_env {
 public:
  // Opens (creating when absent) the environment in `dir`, running recovery
  // unless its last close was clean. `multiversion`: every database keeps
  // the versions of its B-tree pages that open snapshot transactions need
  // (DB_MULTIVERSION; qs-pageserver's snapshot reads).
  // `map_files`: until the first write, the data files are mapped (see
  // above); false reads them through the cache.
  // `replication`: the environment is a site of a replication group
  // (replication.hpp). It is then transactional from the start, always
  // recovers at open (no clean-close mark), and opens its databases only
  // when told it is the master (open_as_master); a commit whose
  // acknowledgements did not come in time throws qs::commit_unknown (it
  // stands on this site, and may or may not survive the loss of it).
  // `page_file_slot` (not 0): an environment created now is laid out with
  // a page file whose slots hold records of that many bytes (see above); an
  // existing one keeps the layout it has. Throws qs::invalid_argument for a
  // page-file environment opened multiversion or replicated.
  bdb_env(const std::string& dir, std::uint64_t cache_bytes, bool multiversion = false,
          std::uint32_t max_locks = default_max_locks, bool map_files = true,
          const replication_options* replication = nullptr, std::uint32_t page_file_slot = 0);
  // Checkpoints and closes; when that succeeded, marks the files as closed
  // cleanly, so that the next open runs no recovery. After a failed write
  // nothing is written: the next open recovers from the log.
  ~bdb_env();
  bdb_env(const bdb_env&) = delete;
  bdb_env& operator=(const bdb_env&) = delete;

  // A Berkeley DB transaction; only once the environment is transactional
  // (see about_to_write). A snapshot transaction (multiversion environments)
  // reads the databases as they were committed when it began, without
  // locks; it is meant for reading. A bulk transaction is one that adds
  // many pages (bulk_min_pages). In the page-file layout it writes the
  // records of the pages it adds into the page file in place instead of
  // logging them, the file synced before its commit record
  // (fresh_slots.hpp). Elsewhere it is a plain transaction: Berkeley DB's
  // own bulk transactions (DB_TXN_BULK, which leave the items put on new
  // B-tree pages out of the log) are not used, since pages.db environments
  // whose bulk transaction was killed were left for Berkeley DB 5.3's
  // recovery to crash on (docs/performance.md). The page server still runs
  // such a commit alone.
  enum class txn_kind { plain, snapshot, bulk };
  DbTxn* begin(txn_kind kind = txn_kind::plain);
  void commit(DbTxn* t, bool durable);
  void abort(DbTxn* t);
  // Before a transaction first adds pages: `first` is the first page no
  // committed transaction holds (the store's page counter). In the
  // page-file layout, bulk transactions may write in place from there, and
  // the slots there where an uncommitted one left a record get none
  // (fresh_slots.hpp). Breaks the environment, throwing qs::write_failed,
  // when that write fails.
  void committed_pages_end(std::uint64_t first);

  // Reads the record of `page` into buf (capacity cap bytes); returns its size,
  // or 0 when there is none. `flags` are Berkeley DB get flags (e.g.
  // DB_READ_COMMITTED). With `part` set, reads only its first `cap` bytes.
  std::uint32_t read_record(DbTxn* t, std::uint64_t page, void* buf, std::uint32_t cap, std::uint32_t flags = 0,
                            bool part = false);
  void put_record(DbTxn* t, std::uint64_t page, const void* rec, std::uint32_t len);
  // Writes, whole, every piece of the record `rec` (len bytes, the record's
  // size) that one of `changed` (record offsets) touches.
  struct byte_span {
    std::uint32_t offset;
    std::uint32_t length;
  };
  void put_record_pieces(DbTxn* t, std::uint64_t page, const void* rec, std::uint32_t len,
                         const std::vector<byte_span>& changed);
  // Overwrites bytes [offset, offset + len) of the record.
  void put_record_part(DbTxn* t, std::uint64_t page, std::uint32_t offset, const void* p, std::uint32_t len);
  // Deletes the record of `page` and its mapping object.
  void delete_record(DbTxn* t, std::uint64_t page);
  // The page's mapping object; nullopt when it has none.
  std::optional<std::string> read_mapping(DbTxn* t, std::uint64_t page, std::uint32_t flags = 0);
  // Where read_range_into puts a record's bytes: its first head_bytes at
  // `head`, the next ones (up to rest_bytes) at `rest`; a null head skips
  // the record.
  struct record_place {
    void* head = nullptr;
    std::uint32_t head_bytes = 0;
    void* rest = nullptr;
    std::uint32_t rest_bytes = 0;
  };
  // Reads the records and mapping objects of pages first..last in page
  // order (a page's record, then its mapping object), in bulk. Each
  // record's pieces are copied straight to where place(page) says (asked
  // once per record, at its first piece), with no copy in between; then
  // f(page, false, nullptr, size) says the record is whole there. A mapping
  // object comes as f(page, true, data, size), its data living until f
  // returns. f returns false to stop. A record with a piece missing, or
  // longer than its place, is left out (what place() received for it is to
  // be ignored). `bulk_bytes`: how much one Berkeley DB call returns
  // (rounded to a multiple of 1 KiB, and to pages.db's B-tree page size at
  // least).
  void read_range_into(DbTxn* t, std::uint64_t first, std::uint64_t last,
                       const std::function<record_place(std::uint64_t)>& place,
                       const std::function<bool(std::uint64_t, bool, const void*, std::uint32_t)>& f,
                       std::uint32_t bulk_bytes = 256 * 1024);
  // Stores the page's mapping object; an empty one is removed.
  void put_mapping(DbTxn* t, std::uint64_t page, std::string_view mapping);

  std::optional<std::string> get(DbTxn* t, std::string_view key, std::uint32_t flags = 0);
  void put(DbTxn* t, std::string_view key, std::string_view value);
  void del(DbTxn* t, std::string_view key);
  // The entries are gathered first, then given to f (f may use the
  // environment). `admit`, when given, is told each entry's size before it is
  // gathered, and may throw to end the scan.
  void scan(DbTxn* t, std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f,
            std::uint32_t flags = 0, const std::function<void(std::size_t)>& admit = {});

  // Opens an index in transaction t (nullptr: in one of its own).
  std::uint32_t open_index(DbTxn* t, const std::string& name, bool unique);
  bool index_insert(DbTxn* t, std::uint32_t index, std::string_view key, std::string_view value);
  bool index_erase(DbTxn* t, std::uint32_t index, std::string_view key, std::string_view value);
  void index_scan(DbTxn* t, std::uint32_t index, std::string_view lo, std::string_view hi,
                  const std::function<bool(std::string_view, std::string_view)>& f);
  // Whether index `index` (an open one) is unique.
  bool index_unique(std::uint32_t index) { return index_at(index).unique; }

  // Lock requests that wait longer than `lock_us`, and those of transactions
  // older than `txn_us`, fail with qs::deadlock (0: no limit), whose text adds
  // `how_to_change`. Berkeley DB checks them only when a request blocks or
  // when expire_waiters() runs. Call before the environment is shared.
  void set_timeouts(std::uint32_t lock_us, std::uint32_t txn_us, const std::string& how_to_change);
  // Refuses every waiting lock request whose timeout has passed; returns how
  // many it refused.
  int expire_waiters();

  // Must precede anything that may change the environment's files: removes
  // the clean-close mark (the next open after a crash then recovers) and
  // turns the read-only handles of a cleanly closed environment into
  // transactional ones. The members that write call it themselves; code that
  // writes through env() calls it first. Until it has run, the environment
  // is used by one thread at a time (the embedded store); a server calls it
  // before sharing the environment. Throws qs::store_error when the mark
  // cannot be removed.
  void about_to_write();
  // Opens, ahead of about_to_write() and beside the program, the
  // transactional environment it will need, which about_to_write() then
  // takes instead of opening its own: Berkeley DB reads the log's last file
  // through to find its end, and sets the cache and lock tables up
  // (milliseconds). Nothing of it reaches the files until about_to_write()
  // has removed the mark; one left unused is closed with the environment,
  // which then appends the record of its transaction ids to the log (no
  // data changes). Nothing for a replicated site, or once transactional;
  // a failure is left for about_to_write() to meet and report. Meant for
  // a helper thread, while the environment is still read-only.
  void prepare_to_write();
  // How many times about_to_write() took the environment prepare_to_write()
  // had opened (0 or 1).
  std::uint32_t prepared_taken() const { return prepared_taken_.load(std::memory_order_relaxed); }
  // Whether transactions exist yet: false from a clean open to the first
  // about_to_write(); reads then take no transaction (nullptr).
  bool transactional() const { return wrote_.load(std::memory_order_acquire); }

  // Hot backup: copies the environment as committed into `target` (a
  // directory that does not exist, or is empty), while transactions go on
  // in other threads, with Berkeley DB's own backup (DbEnv::backup: the data
  // files, then every log file; none is removed meanwhile). The copy is then
  // recovered catastrophically (every log record copied is replayed), so
  // it holds the state of the last commit whose record was copied, is
  // given its database_lock_file and is closed cleanly: it opens as a
  // database, with no recovery. Makes the
  // environment transactional first (about_to_write). Throws
  // qs::invalid_argument for a target that is not empty, qs::store_error
  // when copying or recovering failed (the target is then left as it is,
  // not a database: its clean-close mark is written last).
  // `progress` (when set) is told the bytes copied of those the files held
  // when the copy began. One backup at a time: a second waits.
  void backup(const std::string& target, const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

  // Whether page records are in a page file (see above).
  bool has_page_file() const { return page_file_ != nullptr; }
  // The run of unchanged bytes between two changed ranges of a record
  // below which writing the ranges merged costs less than apart: in a page
  // file a range costs its log record 8 bytes (page_log.hpp), so a run of
  // one word is worth writing again and anything longer is not; in
  // pages.db, put_record_pieces weighs Berkeley DB's cost per piece itself
  // and ranges are merged past runs of up to 64 bytes before it.
  std::uint32_t range_merge_gap() const { return page_file_ ? page_log::piece_head_bytes + 8 : 64; }
  // Brings the B-tree pages that hold the records of `pages` into the
  // cache, ahead of a writer that is writing them in that order and has
  // started on the first `passed` of them (the pages.db layout; nothing on
  // a page file, or for a replicated site). Called on a thread of its own,
  // beside that writer, until `stop` or the end of `pages`; its reads wait
  // for no lock and skip what the writer holds. Throws nothing: what it does not bring
  // in, the writer reads.
  void warm_records(const std::vector<std::uint64_t>& pages, const std::atomic<std::size_t>& passed,
                    const std::atomic<bool>& stop);
  // The page-file layout: where page's image, as transaction t reads it,
  // lies in pages.qs (its file descriptor, its offset there, its bytes in
  // the file's mapping), so that it can be mapped with no copy. False when
  // the environment has no page file, when t wrote to the page (what t
  // reads is not in the file yet), when commits that did not flush the log
  // wrote to it, or when the file's mapping does not reach the image (a
  // durable commit's writes still on their way are waited for). The caller
  // checks the bytes: nothing here vouches for them.
  struct file_image {
    int fd;
    std::uint64_t offset;
    const std::byte* bytes;
  };
  bool image_in_file(DbTxn* t, std::uint64_t page, file_image& where) const;

  // Where the log ends, in bytes; after the environment broke, where it
  // ended when last asked.
  std::uint64_t log_position();
  // How many times the log was flushed to disk since the environment was
  // opened (commits that share a flush are one: group commit); 0 after it
  // broke.
  std::uint64_t log_flushes();
  const std::string& dir() const { return dir_; }
  DbEnv* env() { return env_.get(); }
  // Takes a Berkeley DB lock on `object` for transaction t (mode: a
  // db_lockmode_t; flags: lock_get's), held until t ends; returns Berkeley
  // DB's code. The object is stored padded to a multiple of 4 bytes, a
  // length byte last: a master's commit copies its transaction's write
  // locks into the commit record for the replicas, and Berkeley DB 5.3
  // sizes that copy without the padding it gives each object (a heap
  // overflow). Every lock qs takes goes through here.
  int lock_object(DbTxn* t, std::string_view object, int mode, std::uint32_t flags);
  // Flags every Db::open of a database in the environment adds: a
  // replicated multiversion environment opens each database
  // DB_MULTIVERSION (the environment's flag would refuse internal init).
  std::uint32_t open_flags() const;
  // The replication group this site belongs to; null when not replicated.
  replication* replicated() { return repl_.get(); }
  // A replicated site that became master opens its databases (creating
  // them in a new group; again after a failure, then nothing); a replica
  // opens them read-only, to serve
  // read-only transactions. Either closes what was open before (index
  // numbers start again): call with no transaction open. A replica's
  // handles die when replication rolls its databases back (after an
  // election): reads then throw qs::connection_lost, and the server opens
  // them again.
  void open_as_master();
  void open_as_replica();
  // Whether a call met handles that replication made stale (reopen them).
  bool handles_dead() const { return handles_dead_.load(std::memory_order_acquire); }
  // The replica gate, which makes a replica's read-only transactions read
  // one committed state without ever being a deadlock victim of the apply
  // of the master's log.
  //
  // gate.db is a Berkeley DB queue of replica_gate_lanes small records,
  // made by the master. Every master transaction that wrote pages.db or
  // meta.db writes one of them (a lane chosen by its id) just before it
  // commits; Berkeley DB copies a master transaction's write locks into its
  // commit record, and a replica applies the transaction only once it holds
  // all of them, taken in that list's order before any change is made. A
  // record lock sorts before every B-tree page lock in that list (the lock
  // type first: DB_RECORD_LOCK 2, DB_PAGE_LOCK 3), and the gate record is
  // the newest lock when the list is too short to be sorted, so an apply
  // holds its gate record before it takes any page.
  //
  // A replica's read-only transaction first reads every lane
  // (hold_replica_gate), keeping their read locks until it ends. An apply
  // then waits, holding no page, until no reader holds its lane; and a
  // reader's page reads never wait for an apply: no apply holds a page
  // while a reader holds the gate. So the pages a reader reads are one
  // committed state, and its reads never wait on a cycle (what the lock
  // timeouts and deadlock detector would break by failing a read, which a
  // page fault must not see). Master transactions on different lanes
  // commit side by side.
  static constexpr std::uint32_t replica_gate_lanes = 16;
  // On a replica: t (a locking transaction) takes every lane of the gate,
  // held until t ends. Waits while the apply of a master transaction holds
  // one. Throws qs::store_error when gate.db is not there yet (a group
  // whose master has not opened it), qs::conflict after the lock timeout.
  void hold_replica_gate(DbTxn* t);
  // Whether the databases are open read-only, on a replica.
  bool replica_reads() const { return replica_reads_.load(std::memory_order_acquire); }
  // Throws for a Berkeley DB error code (nothing for 0).
  void check(int rc, const std::string& what) const;

 private:
  struct index_db {
    std::string name;
    bool unique;
    std::unique_ptr<Db> db;
    std::uint64_t room = 0;  // see reserve_room
  };
  index_db& index_at(std::uint32_t i);
  // Opens `file` (set_flags `db_flags`, B-tree page size `page_size` when not
  // 0): transactional and created when absent once anything was written,
  // else read-only. Returns Berkeley DB's code; db is null unless 0.
  int open_db(std::unique_ptr<Db>& db, const char* file, std::uint32_t db_flags, std::uint32_t page_size, DbTxn* t);
  void open_data_files();
  // Closes pages.db and meta.db (a failed or repeated open_as_master,
  // open_as_replica), and the indexes too when `and_indexes`.
  void close_data_files(bool and_indexes = false);
  // Opens env_: transactional (with recovery when `recover`) once anything
  // was written, else with its cache only.
  void open_environment(bool recover);
  // A DbEnv set up as open_environment opens it; `flags` gets its open flags.
  std::unique_ptr<DbEnv> configured_environment(bool transactional, bool recover, std::uint32_t& flags);
  // The environment prepare_to_write() opened, or null.
  std::unique_ptr<DbEnv> take_prepared();
  // Closes every handle and the environment, on failure or to reopen them.
  void close_handles();
  // The clean-close mark's file.
  std::string marker_path() const;
  // The transaction a read runs in: none while the handles are read-only
  // (flags that need one are dropped).
  DbTxn* reading(DbTxn* t, std::uint32_t& flags) const;
  // Berkeley DB's own messages are collected (the last few distinct ones,
  // counted), and said in the qs::error of the next failing call, instead of
  // going to stderr.
  static void collect(const DbEnv* env, const char* prefix, const char* msg);
  std::string take_messages() const;
  // Throws the error every call gets once the environment is broken; a
  // write failure that Berkeley DB only said (write_failed_) breaks it here.
  void refuse_if_broken() const;
  // Breaks the environment for good after a failed write: Berkeley DB is
  // told to refuse everything (a panic), so that nothing more reaches the
  // files, least of all pages whose log records the disk did not take; the
  // close leaves no clean-close mark, and the next open recovers.
  void break_for_writes(const std::string& message) const;
  // `message` with the room left and what to do after a failed write.
  std::string after_failed_write(const std::string& message) const;
  // Breaks the environment for writes and throws qs::write_failed, saying
  // after_failed_write(message).
  [[noreturn]] void fail_writes(const std::string& message) const;
  // fail_writes for a record written in place (fresh_slots.hpp) that failed.
  [[noreturn]] void fail_in_place(int error, std::uint64_t page) const;
  // Waits for the records handed over to be written in place, so that a
  // read of the page file finds them; fail_in_place when one failed.
  void settle_in_place() const;
  // Reserves the disk blocks a data file will grow into, a few MiB past
  // the last page Berkeley DB has for it (written or still in its cache),
  // before anything is written there: on a full disk the reservation fails
  // while the files are whole, and breaks the environment then, instead of
  // a page write failing halfway (a page torn at the end of its file, which
  // recovery cannot repair). `room`: how far the file is reserved.
  void reserve_room(Db& db, std::uint64_t& room);
  // The same for the current log file, whole (Berkeley DB makes a new log
  // file sparse): a log write then fails, if ever, only where a new file
  // starts.
  void reserve_log();
  // Whether Berkeley DB's code `rc` (or what it said) is a failed write.
  bool is_write_fault(int rc) const;

  // The page-file layout's writes (see above): logs `pieces` of page's
  // slot in t (in a transaction of its own when t is null), its blocks
  // reserved first.
  void write_slot(DbTxn* t, std::uint64_t page, std::span<const page_log::piece> pieces);
  // Reads page's slot as t sees it into buf (cap bytes at most); the
  // record's size, or 0 when the page has none.
  std::uint32_t read_slot(DbTxn* t, std::uint64_t page, void* buf, std::uint32_t cap);
  // Copies the page file into the backup directory `target` (as
  // Berkeley DB's backup copies its files, counted the same); 0 or an
  // errno.
  int copy_page_file(const std::string& target);
  // A checkpoint, the page file synced before it (the deferred writes
  // written first); Berkeley DB's code.
  int checkpoint(std::uint32_t kbytes);
  // The page-file layout: flushes the log, then writes the deferred page
  // writes (page_log::defer) to the page file; `before` says what needs
  // it, in the message of a failure (fail_writes). The pause points:
  // `flushed_point` (none when null) once the log is flushed, and
  // `halfway_point` halfway through the writes. Nothing when none wait.
  void apply_deferred(const char* before, const char* flushed_point = "page_file.deferred",
                      const char* halfway_point = "page_file.deferred_half_applied");
  // applier_'s work, after a durable commit: apply_deferred; a failure
  // breaks the environment (the commits are in the log: the next open
  // writes them), and the calls after it say why.
  void apply_in_background() noexcept;
  // The checkpoint a commit may make due (every 16 MiB of log): after a
  // durable commit's page writes, on the applier's thread; a failure
  // breaks the environment.
  void checkpoint_after_commit() noexcept;
  // How many bytes of deferred page writes the commits that do not flush
  // the log may leave waiting before one flushes it and writes them.
  static constexpr std::size_t deferred_max_bytes = std::size_t{32} << 20;
  // The environment's app_dispatch: page_log::redo for the page writes
  // recovery replays.
  static int dispatch(DbEnv* env, Dbt* record, DbLsn* lsn, int op);

  std::string dir_;
  std::uint64_t cache_bytes_;
  std::unique_ptr<page_file> page_file_;  // the page-file layout's
  std::unique_ptr<Db> warm_db_;           // pages.db again, for warm_records (writable, pages.db layout)
  std::unique_ptr<page_log> page_log_;
  std::unique_ptr<fresh_slots> fresh_;  // the page-file layout's records written in place
  // Writes a durable commit's page writes to the page file after it
  // returned (made at the first; stopped before the handles close).
  std::unique_ptr<background_apply> applier_;
  // t ends without committing: the page-file layout's writes kept for it
  // are forgotten.
  void forget_writes(DbTxn* t);
  std::mutex checkpoint_mutex_;        // one checkpoint() at a time (the page-file layout's)
  std::uint64_t checkpointed_at_ = 0;  // log_position() at the last checkpoint (the page-file layout's)
  bool multiversion_;
  std::uint32_t max_locks_;
  bool map_files_;
  std::unique_ptr<DbEnv> env_;
  std::mutex prepared_mutex_;  // guards the two below (prepare_to_write)
  std::unique_ptr<DbEnv> prepared_;
  bool prepare_started_ = false;
  std::atomic<std::uint32_t> prepared_taken_{0};
  std::unique_ptr<Db> pages_;
  std::unique_ptr<Db> meta_;
  std::unique_ptr<Db> gate_;  // gate.db, on a replicated site (hold_replica_gate)
  // The master's transactions that wrote pages.db or meta.db, which write
  // their gate lane at commit (a replicated site's only).
  void wrote_in(DbTxn* t);
  // Whether t wrote (and forgets it).
  bool take_written(DbTxn* t);
  // Opens gate.db: on the master, creating it and its lanes when absent.
  void open_gate();
  // Reads (taking its read lock in t) or writes lane `lane` of gate.db;
  // Berkeley DB's code.
  int read_lane(DbTxn* t, std::uint32_t lane);
  int write_lane(DbTxn* t, std::uint32_t lane);
  std::mutex gate_mutex_;
  std::vector<DbTxn*> written_;  // wrote_in
  std::mutex index_mutex_;       // guards indexes_ (the handles themselves are thread-safe)
  std::vector<std::unique_ptr<index_db>> indexes_;
  std::uint32_t log_file_max_ = 0;
  std::atomic<std::uint64_t> last_log_position_{0};
  std::mutex room_mutex_;  // guards the rooms and log_room_file_
  std::uint64_t pages_room_ = 0, meta_room_ = 0;
  std::uint32_t log_room_file_ = 0;
  std::mutex writing_mutex_;
  // The backup under way, whose bytes backup_write counts.
  struct backup_progress {
    const std::function<void(std::uint64_t, std::uint64_t)>* progress;
    std::uint64_t done, total;
  };
  std::mutex backup_mutex_;  // one backup at a time
  backup_progress* copying_ = nullptr;
  std::unique_ptr<replication> repl_;
  std::atomic<bool> replica_reads_{false};  // open_as_replica
  mutable std::atomic<bool> handles_dead_{false};
  static void on_event(DbEnv* env, std::uint32_t which, void* info);
  // Berkeley DB's message callback: passes a message to replication.
  static void on_message(DbEnv* env, DbChannel* channel, Dbt* messages, std::uint32_t n, std::uint32_t flags);
  static int backup_write(DbEnv* env, std::uint32_t gigabytes, std::uint32_t bytes, std::uint32_t size,
                          std::uint8_t* buf, void* handle);
  std::atomic<bool> wrote_{false};  // something was written; the handles are transactional
  // Why every call is refused (set once, before broken_): reopening for
  // writing failed (the handles are closed; qs::store_error), or a write to
  // the files failed (the environment is panicked; qs::write_failed).
  enum broken_kind : int { not_broken, reopen_failed, write_fault };
  mutable std::atomic<int> broken_{not_broken};
  mutable std::mutex broken_mutex_;
  mutable std::string broken_message_;
  // Berkeley DB said that a write to its files failed (set by collect()).
  // Berkeley DB 5.3 does not always return that failure: a commit whose log
  // write failed at the start of a new log file returns 0, its commit record
  // on no disk. qs therefore trusts a commit only when no write failed.
  std::atomic<bool> write_failed_{false};
  std::string timeouts_;  // said with a lock refused for its timeout
  mutable std::mutex messages_mutex_;
  mutable std::vector<std::pair<std::string, int>> messages_;  // text, times
};

}  // namespace qs::detail
