// bdb_env.hpp: one Berkeley DB transactional environment and its databases,
// shared by every transaction that uses it.
//
// The embedded store (bdb_store) opens one for its single client;
// qs-pageserver opens one and runs a Berkeley DB transaction per client
// session on it. Every operation takes the transaction it belongs to
// explicitly (nullptr: no transaction; writes then commit on their own), so
// that any number of transactions can use the environment from their own
// threads (DB_THREAD).
//
// Page records are in the B-tree `pages.db`, keyed by big-endian page number;
// a page's mapping object is there too, right after its record (key: the
// page's 8 bytes and 'm'), on the same B-tree leaf as a rule, so that reading
// it with the page costs no extra I/O. Metadata is in the B-tree `meta.db`.
// Each index is a B-tree of its own, `index.<name>.db`, with sorted
// duplicates unless it is unique; index handles live as long as the
// environment and are numbered in the order opened. Page records carry their
// own checksum; meta.db and the indexes are created with DB_CHKSUM, so that
// Berkeley DB refuses a B-tree page of theirs whose bytes changed on disk
// (a store_error saying "checksum").
//
// Partial page updates are Berkeley DB partial puts; Berkeley DB logs only
// the bytes between the first and last changed byte of each put, as long as
// a record fits on a B-tree page (64 KiB B-tree pages keep records of up to
// 16 KiB on-page).
//
// Errors throw qs::store_error naming the directory (qs::deadlock when Berkeley
// DB chose the transaction as a deadlock victim, or refused a lock that was
// not granted within the lock or transaction timeout).
//
// Thread-safety: every member may be called from any thread at once, each
// transaction from one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

class DbEnv;
class Db;
class DbTxn;

namespace qs::detail {

struct bdb_options {
  std::uint32_t page_size;
  std::uint64_t cache_bytes;
};

class bdb_env {
 public:
  // Opens (creating when absent) the environment in `dir`, running recovery.
  bdb_env(const std::string& dir, std::uint64_t cache_bytes);
  ~bdb_env();
  bdb_env(const bdb_env&) = delete;
  bdb_env& operator=(const bdb_env&) = delete;

  DbTxn* begin();
  void commit(DbTxn* t, bool durable);
  void abort(DbTxn* t);

  // Reads the record of `page` into buf (capacity cap bytes); returns its size,
  // or 0 when there is none. `flags` are Berkeley DB get flags (e.g.
  // DB_READ_COMMITTED). With `part` set, reads only its first `cap` bytes.
  std::uint32_t read_record(DbTxn* t, std::uint64_t page, void* buf, std::uint32_t cap, std::uint32_t flags = 0,
                            bool part = false);
  void put_record(DbTxn* t, std::uint64_t page, const void* rec, std::uint32_t len);
  // Overwrites bytes [offset, offset + len) of the record.
  void put_record_part(DbTxn* t, std::uint64_t page, std::uint32_t offset, const void* p, std::uint32_t len);
  // Deletes the record of `page` and its mapping object.
  void delete_record(DbTxn* t, std::uint64_t page);
  // The page's mapping object; nullopt when it has none.
  std::optional<std::string> read_mapping(DbTxn* t, std::uint64_t page, std::uint32_t flags = 0);
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

  // Lock requests that wait longer than `lock_us`, and those of transactions
  // older than `txn_us`, fail with qs::deadlock (0: no limit), whose text adds
  // `how_to_change`. Berkeley DB checks them only when a request blocks or
  // when expire_waiters() runs. Call before the environment is shared.
  void set_timeouts(std::uint32_t lock_us, std::uint32_t txn_us, const std::string& how_to_change);
  // Refuses every waiting lock request whose timeout has passed; returns how
  // many it refused.
  int expire_waiters();

  std::uint64_t log_position();
  const std::string& dir() const { return dir_; }
  DbEnv* env() { return env_.get(); }
  // Throws for a Berkeley DB error code (nothing for 0).
  void check(int rc, const std::string& what) const;

 private:
  struct index_db {
    std::string name;
    bool unique;
    std::unique_ptr<Db> db;
  };
  index_db& index_at(std::uint32_t i);
  // Berkeley DB's own messages are collected (the last few distinct ones,
  // counted), and said in the qs::error of the next failing call, instead of
  // going to stderr.
  static void collect(const DbEnv* env, const char* prefix, const char* msg);
  std::string take_messages() const;

  std::string dir_;
  std::unique_ptr<DbEnv> env_;
  std::unique_ptr<Db> pages_;
  std::unique_ptr<Db> meta_;
  std::mutex index_mutex_;  // guards indexes_ (the handles themselves are thread-safe)
  std::vector<std::unique_ptr<index_db>> indexes_;
  std::uint32_t log_file_max_ = 0;
  std::string timeouts_;  // said with a lock refused for its timeout
  mutable std::mutex messages_mutex_;
  mutable std::vector<std::pair<std::string, int>> messages_;  // text, times
};

}  // namespace qs::detail
