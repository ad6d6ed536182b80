// qs/bdb/page_log.hpp: writes to the page file (page_file.hpp) as Berkeley
// DB application log records, kept by transaction until it ends.
//
// In an environment laid out with a page file, every write to a page record
// is one log record, of type page_write_record, in the writing transaction:
// the page, the slot size, and byte ranges of the slot with their new bytes
// (after-images). It is chained into its transaction (DB_SET_TXN_LSNP), so
// that Berkeley DB writes a commit record for a transaction that logged
// nothing else, and walks past it when aborting. It is also kept here until
// the transaction ends: the transaction's own reads see it (overlay), its
// commit defers it (defer: below) once the commit record is in the log,
// its abort forgets it (forget). Nothing of a transaction reaches
// the file through here before its commit is in the log (a bulk
// transaction's new pages reach it in place instead: fresh_slots.hpp).
//
// A commit's writes, deferred, join those of the
// transactions committed before it, in commit order, which every read lays
// over the file (overlay, deferred) until apply_committed writes them
// there, once the log holding them is on the disk. A durable commit's are
// written by a thread of their own right after it (background_apply.hpp);
// a commit that does not flush the log (a non-durable one) leaves them
// until the next durable commit, checkpoint or close, or until they reach
// a bound. The file never holds a write whose log record an
// operating-system crash could lose.
//
// Recovery: redo() is what the environment's app_dispatch does with such a
// record in Berkeley DB's forward pass (committed transactions) and when a
// replica applies a transaction: it writes the ranges to the page file
// again. Other passes need nothing. Replaying after-images in log order
// leaves the same bytes whether or not the file held them already, so a
// record replayed twice, or one the file had before the crash, does no harm.
//
// Every record is checked before any of it is used (sizes, the slot): a
// damaged one is refused with an error naming its LSN, never half applied.
//
// Thread-safety: any number of transactions at once, each from one thread
// at a time (the per-transaction state is under a mutex).
#pragma once

#include <qs/bdb/page_file.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

class DbEnv;
class DbTxn;

namespace qs::detail {

class page_log {
 public:
  // Application log record types start at Berkeley DB's DB_user_BEGIN.
  static constexpr std::uint32_t page_write_record = 10000 + 1;

  // A range of a slot and its new bytes.
  using piece = page_file::piece;
  // What a piece adds to its record beside its bytes: its offset and length.
  static constexpr std::uint32_t piece_head_bytes = 8;

  explicit page_log(page_file& file) : file_(file) {}

  // Logs a write of `pieces` to page's slot in transaction t; Berkeley DB's
  // error code (0: logged, and kept for t).
  int write(DbEnv& env, DbTxn* t, std::uint64_t page, std::span<const piece> pieces);
  // Lays the deferred writes of committed transactions to `page`, then t's
  // (t may be null), in order, over `record` (the first `cap` bytes of the
  // slot as the file holds it); false when there were none.
  bool overlay(DbTxn* t, std::uint64_t page, void* record, std::uint32_t cap) const;
  // t committed without flushing the log: its writes are deferred.
  void defer(DbTxn* t);
  // Whether committed writes to `page` wait to be written to the file.
  bool deferred(std::uint64_t page) const;
  // The bytes of the deferred writes' records (0: none wait).
  std::size_t deferred_bytes() const;
  // Writes the deferred writes to the page file, in commit order, and
  // forgets them; 0 or the errno of the first write that failed (recovery
  // makes them all from the log). The log must be on the disk first:
  // `flush` puts it there, called when writes wait, under the same lock as
  // the writes, so that no commit defers writes between the two. Its
  // nonzero result (Berkeley DB's error) goes into `flush_error`, and
  // nothing is written. `halfway_point` is the pause point passed halfway.
  int apply_committed(const std::function<int()>& flush, int& flush_error, const char* halfway_point);
  // Counts apply_committed's calls that wrote something: a read of the
  // file that took the same count before it and after its overlay read
  // what the deferred writes left.
  std::uint64_t applications() const;
  // Whether t has written anything to the page file.
  bool wrote(DbTxn* t) const;
  // Whether t has written to page's record.
  bool wrote(DbTxn* t, std::uint64_t page) const;
  // t ended without committing.
  void forget(DbTxn* t);

  // Writes the ranges of the log record `rec` (size bytes, as Berkeley DB
  // returned it) to `file`. Returns 0, or EINVAL with `why` said when the
  // record is not a sound page write for this file (nothing written then),
  // or the errno of a failed write.
  static int redo(page_file& file, const void* rec, std::size_t size, std::string& why);

 private:
  // A transaction's log records, one after another in log order, in
  // chunks of at least chunk_bytes that are never moved or zeroed (a large
  // transaction logs every page it makes).
  struct chunk {
    std::unique_ptr<std::byte[]> bytes;
    std::size_t used = 0, size = 0;
  };
  static constexpr std::size_t chunk_bytes = std::size_t{1} << 20;
  struct pending {
    std::vector<chunk> chunks;
    // Where each page's records start, in order.
    std::unordered_map<std::uint64_t, std::vector<const std::byte*>> by_page;
    // Room for a record of `size` bytes at the end of the last chunk.
    std::byte* append(std::size_t size);
  };
  // Writes `p`'s records to the file in order, passing `halfway_point`
  // (a pause point) halfway; 0 or the first errno.
  int write_out(const pending& p, const char* halfway_point);
  page_file& file_;
  mutable std::mutex mutex_;
  std::unordered_map<DbTxn*, pending> txns_;
  pending committed_;  // deferred writes of committed transactions
  std::size_t committed_bytes_ = 0;
  std::atomic<std::uint64_t> applications_{0};
};

}  // namespace qs::detail
