// One client transaction's optimistic concurrency control
// (optimistic_transaction.hpp).
#include "optimistic_transaction.hpp"

#include "log.hpp"

#include <qs/base/error.hpp>
#include <qs/base/pause_point.hpp>
#include <qs/format/keys.hpp>
#include <qs/format/page_record.hpp>

#include <db_cxx.h>

#include <cstdlib>
#include <cstring>

namespace qs::server {

optimistic_transaction::optimistic_transaction(const transaction_config& c, std::uint64_t session)
    : c_(c), session_(session) {}

optimistic_transaction::~optimistic_transaction() { abort(); }

void optimistic_transaction::forget_written_ahead() noexcept {
  if (written_ahead_.empty()) return;
  written_ahead_.clear();
  c_.sending_ahead->fetch_sub(1);
}

void optimistic_transaction::abort_txn(DbTxn*& txn) noexcept {
  if (!txn) return;
  DbTxn* t = txn;
  txn = nullptr;
  try {
    c_.env->abort(t);
  } catch (const std::exception& e) {
    log_line(session_, std::string("error: abort failed: ") + e.what());
  }
}

void optimistic_transaction::forget() noexcept {
  reserved_ = false;
  failed_.reset();
  meta_reads_.clear();
  scan_reads_.clear();
  index_changes_.clear();
  locks_.clear();
  forget_written_ahead();
}

void optimistic_transaction::abort_writer() noexcept {
  locks_.clear();
  forget_written_ahead();
  abort_txn(write_);
  release_bulk();
}

void optimistic_transaction::abort() noexcept {
  forget();
  abort_txn(write_);
  release_bulk();
  abort_txn(snap_);
}

void optimistic_transaction::begin_bulk() {
  // (Pages sent ahead, index updates and reservations began write_.)
  if (write_ || c_.replica || c_.env->replicated()) return;
  std::unique_lock<std::shared_mutex> sole(*c_.commit_gate);
  // Their write transactions hold B-tree locks this one could wait for,
  // while their commits wait for the gate.
  if (c_.sending_ahead->load() > 0) return;
  write_ = c_.env->begin(detail::bdb_env::txn_kind::bulk);
  bulk_gate_ = std::move(sole);
  c_.counters->add(c_.counters->bulk);
}

void optimistic_transaction::release_bulk() noexcept {
  if (bulk_gate_.owns_lock()) bulk_gate_.unlock();
}

std::chrono::steady_clock::time_point optimistic_transaction::snapshot_deadline() const {
  if (!snap_ || c_.snapshot_max_age.count() <= 0) return std::chrono::steady_clock::time_point::max();
  return snap_began_ + c_.snapshot_max_age;
}

bool optimistic_transaction::release_snapshot_if_due() {
  if (std::chrono::steady_clock::now() < snapshot_deadline()) return false;
  const std::string limit = seconds(c_.snapshot_max_age);
  if (c_.replica) {
    fail(wire::error_code::store,
         "its reads on a replica kept their locks for " + limit +
             ", the limit of qs-pageserver --replica-read-max (they hold up the replica's apply of the master's "
             "log); run it again, in less time, or read from the master");
    abort_txn(snap_);
    log_line(session_, "a read-only transaction's locks released after " + limit +
                           " (--replica-read-max); the transaction will abort");
    return true;
  }
  fail(wire::error_code::store, "its snapshot was released after " + limit +
                                    ", the limit of qs-pageserver --snapshot-max-age (the server keeps every page "
                                    "version committed since a snapshot began); run it again, in less time");
  abort_txn(snap_);
  log_line(session_, "snapshot released after " + limit + " (--snapshot-max-age); the transaction will abort");
  return true;
}

void optimistic_transaction::fail(wire::error_code code, const std::string& text) {
  abort_writer();
  // A replica's reads lock: after a deadlock or a lock timeout Berkeley DB
  // takes no more requests of the transaction, and its locks go now; its
  // later requests get this failure.
  if (c_.replica) abort_txn(snap_);
  if (!failed_) failed_ = transaction_failure{code, "the transaction failed: " + text};
}

void optimistic_transaction::fail_request(wire::error_code code, const std::string& text) {
  fail(code, text);
  if (code == wire::error_code::conflict) {
    c_.counters->add(c_.counters->conflicts);
    if (c_.log_conflicts) log_line(session_, "conflict: " + text + "; the transaction will abort");
  } else {
    log_line(session_, "error: " + text + "; the transaction will abort");
  }
}

void optimistic_transaction::throw_if_failed() const {
  if (failed_) throw *failed_;
}

DbTxn* optimistic_transaction::snapshot() const {
  // One whose snapshot was released reads nothing more.
  if (!snap_) throw_if_failed();
  return snap_;
}

DbTxn* optimistic_transaction::reader_of(std::uint64_t page) const {
  DbTxn* snap = snapshot();
  return written_ahead_.contains(page) ? write_ : snap;
}

std::uint32_t optimistic_transaction::page_size() {
  if (page_size_ == 0) {
    if (auto v = c_.env->get(nullptr, "page_size")) {
      unsigned long n = std::strtoul(v->c_str(), nullptr, 10);
      if (n >= 4096 && n <= 65536 && (n & (n - 1)) == 0) page_size_ = static_cast<std::uint32_t>(n);
    }
  }
  return page_size_;
}

std::optional<transaction_failure> optimistic_transaction::begin(const std::vector<std::uint64_t>& reserve_write,
                                                                 const std::vector<std::uint64_t>& reserve_read) {
  try {
    // Reserved pages are locked first, in page order, and only then is the
    // snapshot taken: nobody changes them in between, so the commit cannot
    // be refused for them.
    std::map<std::uint64_t, bool> reserve;  // page -> written
    for (std::uint64_t page : reserve_read) reserve[page] = false;
    for (std::uint64_t page : reserve_write) reserve[page] = true;
    if (c_.replica) reserve.clear();  // it writes nothing, and its reads lock
    for (const auto& [page, written] : reserve) lock_page(page, written);
    reserved_ = !reserve.empty();
    snap_ = c_.env->begin(c_.replica ? detail::bdb_env::txn_kind::plain : detail::bdb_env::txn_kind::snapshot);
    snap_began_ = std::chrono::steady_clock::now();
    if (c_.replica) {
      // Its reads lock, behind the replica gate: what it reads is one
      // committed state, and its reads never wait for the apply
      // (bdb_env::hold_replica_gate). It commits nothing.
      c_.env->hold_replica_gate(snap_);
      return std::nullopt;
    }
    commit_id_ = c_.outcomes->claim(snap_);
    // Berkeley DB fixes a snapshot's read point at its first read: fixed
    // now, before the answer to begin, so that every invalidation pushed
    // to the client for a commit the snapshot holds comes before that
    // answer (cache_directory.hpp).
    (void)c_.env->get(snap_, "page_size");
  } catch (const conflict& e) {
    abort();
    return conflict_answer(std::string("reserving pages: ") + e.what());
  } catch (...) {
    abort();
    throw;
  }
  return std::nullopt;
}

void optimistic_transaction::write_ahead(const wire::write_request& m) {
  check_shapes(m.pages);
  // A failed transaction's writes go nowhere: its commit is refused.
  if (failed_) return;
  if (m.adds_pages >= detail::bulk_min_pages) begin_bulk();
  // Not while a commit runs alone (it may be reading these pages), unless
  // it is this transaction's, in bulk.
  std::shared_lock<std::shared_mutex> gate(*c_.commit_gate, std::defer_lock);
  if (!writes_in_bulk()) gate.lock();
  try {
    // Locks out of the commit's order: taken without waiting, so that a
    // transaction sending pages ahead never closes a cycle of waits.
    for (const wire::page_op& op : m.pages) lock_page(op.page, true, false);
    for (const wire::page_op& op : m.pages)
      if (!written_ahead_.contains(op.page)) expect_version(op.page, op.base_version, "written by this transaction");
    apply(m.pages, {}, false);
  } catch (const conflict& e) {
    // Answered at the commit: the pages were sent from an eviction, where
    // the client cannot take an error.
    fail_request(wire::error_code::conflict, e.what());
    return;
  }
  if (written_ahead_.empty() && !m.pages.empty()) c_.sending_ahead->fetch_add(1);
  for (const wire::page_op& op : m.pages) written_ahead_.insert(op.page);
  pause_point("server.write.applied");  // in the write transaction, not committed
}

transaction_failure optimistic_transaction::conflict_answer(const std::string& text) {
  c_.counters->add(c_.counters->conflicts);
  if (c_.log_conflicts) log_line(session_, "conflict: " + text);
  return transaction_failure{wire::error_code::conflict, text};
}

std::optional<transaction_failure> optimistic_transaction::commit(const wire::commit_request& m) {
  try {
    check_shapes(m.pages);
  } catch (...) {
    abort();
    throw;
  }
  if (failed_) {
    transaction_failure f = std::move(*failed_);
    abort();
    return f;
  }
  if (m.pages.empty() && m.metas.empty() && !write_) {
    // It wrote nothing: it saw one snapshot, and that is all.
    end(false, false);
    c_.counters->add(c_.counters->commits);
    c_.counters->add(c_.counters->read_only);
    return std::nullopt;
  }
  // Writes made before the commit (index updates, pages sent ahead) are in
  // the write transaction, and so are reserved pages' locks: a commit that
  // loses it cannot run again here.
  const bool earlier = write_ != nullptr;
  const bool alone = m.serializable && m.reads.size() > big_read_set;
  std::shared_lock<std::shared_mutex> shared_gate(*c_.commit_gate, std::defer_lock);
  std::unique_lock<std::shared_mutex> sole_gate(*c_.commit_gate, std::defer_lock);
  if (writes_in_bulk()) {
    // It has held the gate alone since its first write, when no other
    // transaction held pages sent ahead.
  } else if (alone) {
    sole_gate.lock();
    if (c_.sending_ahead->load() > (written_ahead_.empty() ? 0 : 1)) {
      // Their locks last until their commits, which wait for this one.
      abort();
      c_.counters->add(c_.counters->conflicts);
      return transaction_failure{wire::error_code::conflict,
                                 "commit refused: it read " + std::to_string(m.reads.size()) +
                                     " pages, so it runs alone, and other transactions that sent pages ahead are "
                                     "open"};
    }
  } else {
    shared_gate.lock();
  }
  std::vector<wire::invalidation> changed;
  for (int attempt = 1;; ++attempt) {
    try {
      validate(m, alone);
      apply(m.pages, m.metas, true);
      c_.outcomes->record(write_, commit_id_);
      changed = changed_pages(m);
      // Other clients holding these pages are told before the change is
      // visible to any snapshot (cache_directory.hpp), and this client's
      // unannounced cached reads are checked in the same step.
      if (!c_.directory->check_and_invalidate(session_, m.serializable ? m.invalidations_seen : wire::unchecked_version,
                                              changed)) {
        const std::string why =
            "another client's commit changed pages this client holds, and the invalidation had not reached it when "
            "it committed";
        if (earlier) throw conflict("commit refused: " + why);
        // Undone, the transaction still open: the client, having the
        // invalidations (queued before this answer), checks them and commits
        // again.
        abort_writer();
        return transaction_failure{wire::error_code::crossed, why};
      }
      pause_point("server.commit.before_commit");
      try {
        end(true, m.durable);
      } catch (...) {
        // The directory counts the client holding what it did not commit.
        c_.directory->commit_ended(changed, false);
        c_.directory->reset(session_);
        throw;
      }
      c_.directory->commit_ended(changed, true);
      break;
    } catch (const conflict& e) {
      if (dynamic_cast<const detail::deadlock_victim*>(&e) && !earlier && attempt < 5) {
        // Berkeley DB's deadlock detector chose this commit over B-tree page
        // locks: nothing of it stands; run it again.
        abort_writer();
        c_.counters->add(c_.counters->retried);
        continue;
      }
      abort();
      return conflict_answer(e.what());
    } catch (...) {
      abort();
      throw;
    }
  }
  pause_point("server.commit.after_commit");  // committed; the client not told yet
  c_.outcomes->committed();
  c_.counters->add(c_.counters->commits);
  return std::nullopt;
}

std::vector<wire::invalidation> optimistic_transaction::changed_pages(const wire::commit_request& m) {
  std::vector<wire::invalidation> out;
  auto header_version = [&](std::uint64_t page, std::string_view bytes) -> std::uint64_t {
    detail::record_header h{};
    if (bytes.size() >= sizeof h) {
      std::memcpy(&h, bytes.data(), sizeof h);
      return h.version;
    }
    // Read back as this commit wrote it.
    std::uint32_t n = c_.env->read_record(write_, page, &h, sizeof h, 0, true);
    return n == sizeof h ? h.version : wire::no_record;
  };
  std::set<std::uint64_t> seen;
  for (const wire::page_op& op : m.pages) {
    if (!seen.insert(op.page).second) continue;
    switch (op.kind) {
      case wire::page_op_kind::put: out.push_back({op.page, header_version(op.page, op.record)}); break;
      case wire::page_op_kind::patch: {
        std::string_view head;
        for (const wire::part& p : op.parts)
          if (p.offset == 0) head = p.data;
        out.push_back({op.page, header_version(op.page, head)});
        break;
      }
      case wire::page_op_kind::remove: out.push_back({op.page, wire::no_record}); break;
    }
  }
  for (std::uint64_t page : written_ahead_)
    if (seen.insert(page).second) out.push_back({page, header_version(page, {})});
  return out;
}

DbTxn* optimistic_transaction::writer() {
  if (!write_) write_ = c_.env->begin();
  return write_;
}

void optimistic_transaction::lock_object(const std::string& object, bool exclusive, bool wait) {
  auto it = locks_.find(object);
  if (it != locks_.end() && (it->second || !exclusive)) return;
  int rc = c_.env->lock_object(writer(), object, exclusive ? DB_LOCK_WRITE : DB_LOCK_READ, wait ? 0 : DB_LOCK_NOWAIT);
  std::string what = object.starts_with("qs:p") ? "page " + std::to_string(detail::from_be64(object.substr(4)))
                                                : "metadata record " + object.substr(4);
  if (rc == DB_LOCK_NOTGRANTED && !wait)
    throw conflict("commit refused: " + what + " is being written by another transaction");
  c_.env->check(rc, std::string(exclusive ? "exclusive" : "shared") + " lock on " + what);
  locks_[object] = exclusive;
}

void optimistic_transaction::lock_page(std::uint64_t page, bool exclusive, bool wait) {
  lock_object("qs:p" + detail::be64(page), exclusive, wait);
}

void optimistic_transaction::lock_meta(std::string_view key, bool exclusive) {
  if (key.starts_with("s:")) return;
  lock_object("qs:m" + std::string(key.starts_with("t:") ? std::string_view("t:") : key), exclusive, true);
}

void optimistic_transaction::expect_version(std::uint64_t page, std::uint64_t version, const char* how) {
  if (version == wire::unchecked_version) return;
  detail::record_header h{};
  std::uint32_t n = c_.env->read_record(write_, page, &h, sizeof h, DB_READ_COMMITTED, true);
  std::uint64_t now = n == 0 ? wire::no_record : h.version;
  if (n != 0 && n != sizeof h)
    throw corrupt_page(page, "page " + std::to_string(page) + " has a record shorter than its header");
  if (now == version) return;
  auto says = [](std::uint64_t v) {
    return v == wire::no_record ? std::string("no record") : "version " + std::to_string(v);
  };
  throw conflict("commit refused: page " + std::to_string(page) + " " + how + " changed since (" + says(version) +
                 " in the snapshot, " + says(now) + " now)");
}

void optimistic_transaction::check_shapes(const std::vector<wire::page_op>& pages) {
  std::uint32_t ps = page_size();
  std::uint64_t record = ps ? sizeof(detail::record_header) + ps : wire::max_record;
  for (const wire::page_op& op : pages) {
    if (op.kind == wire::page_op_kind::put && op.record.size() != record &&
        !(ps == 0 && op.record.size() > sizeof(detail::record_header)))
      throw wire::protocol_error("a record of " + std::to_string(op.record.size()) + " bytes for page " +
                                 std::to_string(op.page) + ", whose records have " + std::to_string(record));
    if (op.kind == wire::page_op_kind::patch)
      for (const wire::part& p : op.parts)
        if (p.offset + p.data.size() > record)
          throw wire::protocol_error("a patch of page " + std::to_string(op.page) + " past the end of its record");
  }
}

void optimistic_transaction::apply(const std::vector<wire::page_op>& pages, const std::vector<wire::meta_op>& metas,
                                   bool commit) {
  DbTxn* t = writer();
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const wire::page_op& op = pages[i];
    if (commit && i == pages.size() / 2) pause_point("server.commit.half_applied");
    switch (op.kind) {
      case wire::page_op_kind::put:
        c_.env->put_record(t, op.page, op.record.data(), static_cast<std::uint32_t>(op.record.size()));
        break;
      case wire::page_op_kind::patch:
        for (const wire::part& p : op.parts)
          c_.env->put_record_part(t, op.page, p.offset, p.data.data(), static_cast<std::uint32_t>(p.data.size()));
        break;
      case wire::page_op_kind::remove:
        c_.env->delete_record(t, op.page);  // and its mapping object
        break;
    }
    if (op.mapping_op == wire::mapping_change::set) c_.env->put_mapping(t, op.page, op.mapping);
    else if (op.mapping_op == wire::mapping_change::remove) c_.env->put_mapping(t, op.page, {});
  }
  // Whether the database existed before this write (its creation writes
  // the records the server owns afterwards).
  bool exists = !metas.empty() && c_.env->get(t, "page_size").has_value();
  for (const wire::meta_op& op : metas) {
    check_meta(op, exists);
    if (op.kind == wire::meta_op_kind::put) c_.env->put(t, op.key, op.value);
    else c_.env->del(t, op.key);
  }
}

namespace {

// Records the server hands out itself, outside any transaction: never a
// conflict.
bool server_counter(std::string_view key) { return key == "next_page" || key == "next_frame"; }

std::string encode_entries(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string s;
  for (const auto& [k, v] : entries) {
    if (k.starts_with("s:")) continue;  // advice, not checked
    s += detail::be64(k.size()) + k + detail::be64(v.size()) + v;
  }
  return s;
}

}  // namespace

void optimistic_transaction::note_read(std::string_view key, const std::optional<std::string>& value) {
  if (key.starts_with("s:") || server_counter(key)) return;
  if (meta_reads_.find(key) == meta_reads_.end()) meta_reads_.emplace(std::string(key), value);
}

void optimistic_transaction::note_scan(std::string_view prefix,
                                       const std::vector<std::pair<std::string, std::string>>& entries) {
  if (prefix.starts_with("s:")) return;
  if (scan_reads_.find(prefix) == scan_reads_.end()) scan_reads_.emplace(std::string(prefix), encode_entries(entries));
}

void optimistic_transaction::scan_view(std::uint32_t index, std::string_view lo, std::string_view hi,
                                       const std::function<bool(std::string_view, std::string_view)>& f) {
  using entry = std::pair<std::string, std::string>;
  std::set<entry> inserted, erased;
  for (const index_change& c : index_changes_) {
    if (c.index != index) continue;
    entry e{c.key, c.value};
    if (c.insert) {
      inserted.insert(e);
      erased.erase(e);
    } else if (inserted.erase(e) == 0) {
      erased.insert(e);
    }
  }
  auto next = inserted.lower_bound(entry{std::string(lo), std::string()});
  bool go = true;
  // The inserted entries before `bound` (all, when null), up to hi.
  auto inserted_before = [&](const entry* bound) {
    while (go && next != inserted.end() && (!bound || *next < *bound) && std::string_view(next->first) <= hi) {
      go = f(next->first, next->second);
      ++next;
    }
    return go;
  };
  c_.env->index_scan(snap_, index, lo, hi, [&](std::string_view k, std::string_view v) {
    entry e{std::string(k), std::string(v)};
    if (!inserted_before(&e)) return false;
    if (next != inserted.end() && *next == e) ++next;  // inserted again: once
    if (erased.contains(e)) return true;
    go = f(k, v);
    return go;
  });
  inserted_before(nullptr);
}

void optimistic_transaction::refuse_index_update_in_bulk() const {
  // Index files are written by other transactions meanwhile (no gate).
  if (writes_in_bulk())
    throw conflict(
        "index update refused: the transaction is writing its commit's pages in bulk, after which it "
        "updates no index");
}

bool optimistic_transaction::index_insert(std::uint32_t index, std::string_view key, std::string_view value) {
  const bool unique = c_.env->index_unique(index);
  bool there = false;
  scan_view(index, key, key, [&](std::string_view, std::string_view v) {
    there = unique || v == value;
    return !there;
  });
  if (there) return !unique;  // a non-unique index already has this exact entry
  refuse_index_update_in_bulk();
  if (!c_.env->index_insert(writer(), index, key, value))
    throw conflict("index entry refused: another transaction inserted its key since this transaction's snapshot");
  index_changes_.push_back({index, std::string(key), std::string(value), true});
  return true;
}

bool optimistic_transaction::index_erase(std::uint32_t index, std::string_view key, std::string_view value_prefix) {
  // As Berkeley DB's erase finds it: in a unique index, the key's value; in
  // another, the first value >= the prefix; erased if it has the prefix.
  const bool unique = c_.env->index_unique(index);
  std::optional<std::string> found;
  scan_view(index, key, key, [&](std::string_view, std::string_view v) {
    if (!unique && v < value_prefix) return true;
    if (v.starts_with(value_prefix)) found = std::string(v);
    return false;
  });
  if (!found) return false;
  refuse_index_update_in_bulk();
  if (!c_.env->index_erase(writer(), index, key, *found))
    throw conflict("index entry erase refused: another transaction erased it since this transaction's snapshot");
  index_changes_.push_back({index, std::string(key), std::move(*found), false});
  return true;
}

void optimistic_transaction::validate(const wire::commit_request& m, bool alone) {
  // Every lock in one order (pages by number, then metadata keys), then
  // every check: commits never wait for each other in a cycle, and what a
  // commit checked stays so until it has committed.
  std::map<std::uint64_t, bool> pages;  // page -> written
  for (const wire::page_op& op : m.pages) pages[op.page] = true;
  for (std::uint64_t p : written_ahead_) pages[p] = true;
  if (m.serializable && !alone)
    for (const wire::page_version& r : m.reads) pages.emplace(r.page, false);
  // Alone, only a transaction that sent pages ahead can hold a page lock,
  // and its commit waits for this one: a lock that is not free is a
  // conflict at once.
  for (const auto& [page, written] : pages) lock_page(page, written, !alone);
  std::map<std::string, bool, std::less<>> metas;  // lock object key -> written
  for (const wire::meta_op& op : m.metas)
    if (!op.key.starts_with("s:")) metas[std::string(op.key.starts_with("t:") ? "t:" : op.key)] = true;
  if (m.serializable) {
    for (const auto& [key, value] : meta_reads_) metas.emplace(key.starts_with("t:") ? "t:" : key, false);
    for (const auto& [prefix, entries] : scan_reads_)
      if (prefix.empty() || prefix.starts_with("t:") || std::string_view("t:").starts_with(prefix))
        metas.emplace("t:", false);
  }
  for (const auto& [key, written] : metas) lock_meta(key, written);

  for (const wire::page_op& op : m.pages)
    if (!written_ahead_.contains(op.page)) expect_version(op.page, op.base_version, "written by this transaction");
  if (m.serializable)
    for (const wire::page_version& r : m.reads) {
      auto w = pages.find(r.page);
      if (w == pages.end() || !w->second) expect_version(r.page, r.version, "read by this transaction");
    }
  auto same = [&](std::string_view key, const std::optional<std::string>& then, const char* how) {
    std::optional<std::string> now = c_.env->get(write_, key, DB_READ_COMMITTED);
    if (now != then)
      throw conflict("commit refused: metadata record '" + std::string(key.substr(0, 64)) + "' " + how +
                     " changed since this transaction's snapshot");
  };
  for (const wire::meta_op& op : m.metas)
    if (!op.key.starts_with("s:") && !server_counter(op.key))
      same(op.key, c_.env->get(snap_, op.key), "written by this transaction");
  if (!m.serializable) return;
  for (const auto& [key, value] : meta_reads_) same(key, value, "read by this transaction");
  for (const auto& [prefix, entries] : scan_reads_) {
    std::vector<std::pair<std::string, std::string>> now;
    c_.env->scan(
        write_, prefix, [&](std::string_view k, std::string_view v) { now.emplace_back(k, v); }, DB_READ_COMMITTED);
    if (encode_entries(now) != entries)
      throw conflict("commit refused: the metadata records under '" + prefix.substr(0, 64) +
                     "' read by this transaction changed since its snapshot");
  }
}

void optimistic_transaction::check_meta(const wire::meta_op& op, bool exists) {
  std::string key(op.key);
  static constexpr std::string_view owned[] = {"format", "page_size", "base", "reservation", "next_page", "next_frame"};
  bool is_owned = false;
  for (std::string_view k : owned) is_owned = is_owned || key == k;
  if (!is_owned) {
    if (key.starts_with("t:") || key.starts_with("r:") || key.starts_with("s:")) return;
    throw wire::protocol_error("a write of metadata record '" + key.substr(0, 64) + "', which no client writes");
  }
  // The database's own records: written once, by the client that creates
  // it; then the server's (it hands out page and frame numbers itself).
  if (exists)
    throw wire::protocol_error("a write of metadata record '" + key +
                               "', which the server owns once the database exists");
  if (op.kind != wire::meta_op_kind::put)
    throw wire::protocol_error("a removal of metadata record '" + key + "' while creating the database");
  std::string v(op.value);
  bool ok = !v.empty() && v.size() <= 20 && v.find_first_not_of("0123456789") == std::string::npos;
  if (key == "format") ok = v == qs::detail::format_hardware || v == qs::detail::format_software;
  else if (key == "next_page") ok = v == "1";
  else if (key == "next_frame") ok = v == "0";
  else if (ok && key == "page_size") {
    unsigned long ps = std::stoul(v);
    ok = ps >= 4096 && ps <= 65536 && (ps & (ps - 1)) == 0;
  }
  if (!ok) throw wire::protocol_error("metadata record '" + key + "' created as '" + v.substr(0, 40) + "'");
}

void optimistic_transaction::end(bool commit, bool durable) {
  forget();
  DbTxn* w = write_;
  DbTxn* r = snap_;
  write_ = snap_ = nullptr;
  // The writes first: the snapshot holds the transaction's identity, which
  // says "pending" to a client asking about it until both have ended.
  try {
    if (w) {
      if (commit) c_.env->commit(w, durable);
      else c_.env->abort(w);
    }
  } catch (...) {
    release_bulk();
    if (r) c_.env->abort(r);
    throw;
  }
  release_bulk();
  if (r) c_.env->abort(r);  // it wrote nothing
}

}  // namespace qs::server
