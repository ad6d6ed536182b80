// qs/bdb/fresh_slots.hpp: whole records written straight into slots of the
// page file (page_file.hpp) that nothing committed holds, by a transaction
// that adds many pages, instead of through the log (page_log.hpp).
//
// A bulk transaction (bdb_env::txn_kind::bulk: a durable commit that adds
// bulk_min_pages pages or more) writes the whole record of a page into its
// slot in place, with no log record, when the slot is fresh: no committed
// transaction holds it, and no log record recovery may replay writes it.
// The environment syncs the file before the transaction's commit record
// (bdb_env::commit), so a commit that reached the log finds its new pages
// in the file; one that did not leaves bytes in slots that nothing refers
// to. A million-node build thus writes its 72 MB of pages once, where the
// log took them whole and the file again after the commit
// (docs/performance.md).
//
// Which slots are fresh: those at or past the floor. It is the larger of
// two bounds. One is where the committed pages end: the file's end at
// open, until the store says where its page counter stands (past_committed,
// at a transaction's first allocation). Nothing logged before the open is
// replayed again (recovery ends with a checkpoint). The other rises past
// every slot written through the log since the open, and past every slot
// of a transaction that wrote in place and committed. A slot below the
// floor may hold committed bytes, or be written again by a logged
// after-image in recovery; it is always written through the log. A
// transaction's own record of a page it wrote in place and then through
// the log is the logged one (applied after the commit, in order).
//
// What an uncommitted transaction left in place (it aborted, or the process
// died) lies past the committed pages: past_committed() gives those slots
// no record again before the pages past the committed ones are handed
// out, so that a page allocated and never written reads as no record, as
// it did. (Reads take no record past the page counter: bdb_store.)
//
// While a backup copies the page file (pause), every write goes through
// the log: the copy must hold, or its log replay, every page of a commit
// the copied log holds.
//
// The writes in place are made by a thread of their own (slot_writer.hpp):
// write() hands the record over and returns. Whoever needs them in the
// file waits for them (settle): the commit before it syncs the file, a
// read of the file (a transaction may read back a page it wrote in place:
// one evicted from a full pool), a pause, and an aborted transaction's end,
// before past_committed may look at its slots.
//
// Thread-safety: any number of transactions at once; the calls take a
// mutex (a write in place is handed over under it, and a pause waits for
// what was handed over).
#pragma once

#include <qs/bdb/page_file.hpp>
#include <qs/bdb/slot_writer.hpp>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

class DbTxn;

namespace qs::detail {

class fresh_slots {
 public:
  explicit fresh_slots(page_file& file);

  // t is a bulk transaction: its whole records may be written in place.
  void begin(DbTxn* t);
  // Hands page's whole record `rec` (len bytes, a slot's) over to be
  // written in place when t may (a bulk transaction, a fresh slot, no
  // backup copying) and returns true, with `error` 0, or the errno of a
  // write in place that failed earlier (the page in `failed_page`).
  // Returns false when the record must go through the log, the floor
  // raised past the slot.
  bool write(DbTxn* t, std::uint64_t page, const void* rec, std::uint32_t len, int& error, std::uint64_t& failed_page);
  // Waits until every record handed over is in the file; 0, or the errno of
  // the first write in place that failed (its page in `failed_page`).
  int settle(std::uint64_t& failed_page);
  // Whether records handed over may not be in the file yet (one load).
  bool unsettled() const { return writer_.busy(); }
  // A write to page's slot goes through the log: the floor rises past it.
  void logged(std::uint64_t page);
  // Whether t wrote a record in place (the file must be synced before its
  // commit record).
  bool wrote(DbTxn* t) const;
  // t committed, or its commit failed and may have committed: its slots
  // are below the floor from now on.
  void committed(DbTxn* t);
  // t ended without committing: what it wrote in place is for past_committed
  // (it is in the file when this returns).
  void forget(DbTxn* t);
  // No committed transaction holds a page from `first` on (the store's
  // page counter, read at a transaction's first allocation): those slots
  // are fresh unless written through the log since the open. Gives them no
  // record where an uncommitted transaction may have left one since the
  // last call (or since the open), and syncs the file when it wrote; 0 or
  // the errno of a failure. Nothing while a transaction writes in place.
  int past_committed(std::uint64_t first);
  // While on, every record goes through the log (a backup copies the file);
  // turned on, what was handed over before is in the file when it returns.
  void pause(bool on);

 private:
  page_file& file_;
  mutable std::mutex mutex_;
  std::uint64_t committed_end_;    // the first bound (above)
  std::uint64_t written_end_ = 0;  // the second
  std::uint64_t floor() const { return std::max(committed_end_, written_end_); }
  bool paused_ = false;
  bool maybe_left_ = true;  // an uncommitted transaction may have left records in place
  // Bulk transactions, each with one past the last page it wrote in place
  // (0: none yet).
  std::unordered_map<DbTxn*, std::uint64_t> txns_;
  slot_writer writer_;  // last: destroyed first, once what it holds is written
};

}  // namespace qs::detail
