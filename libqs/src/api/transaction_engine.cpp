// Begin, commit and abort, and the transaction's thread rule
// (transaction_engine.hpp).
#include "api/transaction_engine.hpp"

#include "util/stopwatch.hpp"

#include <qs/error.hpp>
#include <qs/pause_point.hpp>

#include <chrono>

namespace qs::detail {

void transaction_engine::begin(database_impl* db) {
  if (open()) throw error("a transaction is already open on this handle");
  // A reservation smaller than the database: when a quarter of its frames
  // is left, the transaction starts from a fresh assignment (the counter
  // wrap of QuickStore), so that it can take any page the database has.
  rt_.pages.forget_evicted();
  if (rt_.relocate.running_short()) rt_.reset_frames();
  rt_.storage.begin();
  // A server reached again may hold another history than the one the
  // cache came from: the cached pages are revalidated (apply_invalidations
  // below), and the allocator reads its free space again.
  if (rt_.storage.take_new_connection()) rt_.allocator.abort();
  rt_.log.opened();
  thread_ = std::this_thread::get_id();
  joined_.clear();
  rt_.access.make_current(db);
  log_start_ = rt_.storage.log_position();
  rt_.access.begin_transaction();
  // Other clients may have changed the cached pages since the last
  // transaction. A coherent store says which: those are revalidated when
  // first touched, the others used as they are; unless this transaction
  // follows its reads page by page (after a conflict, so that its retry is
  // refused only for pages it did read). Otherwise each is revalidated.
  if (rt_.storage.coherent()) {
    const bool precise = tracked_left_ > 0;
    if (precise) --tracked_left_;
    rt_.storage.track_reads(precise);
    rt_.pages.apply_invalidations();
    if (precise) rt_.pages.mark_all_stale();
  } else if (rt_.storage.shared()) {
    rt_.pages.mark_all_stale();
  }
}

void transaction_engine::commit() {
  // (Not require: a failed transaction's commit aborts it, below.)
  if (!open()) throw no_transaction("commit needs a transaction");
  auto t0 = std::chrono::steady_clock::now();
  try {
    throw_if_failed();
    rt_.refs.announce_root_cells();
    for (page_desc* d : rt_.log.suspects()) {
      // Evicted holding a non-persistent pointer: look again.
      rt_.pages.make_current(d);
      rt_.pointers.check(d, rt_.pages.image(d), true);
    }
    // One-time relocation: pages rewritten when they came in go back to the
    // store with their new pointers, so that later runs find them in place;
    // and the roots this process used name their cells where they are now.
    for (page_desc* d : rt_.log.relocated()) {
      if (!rt_.log.relocate_pending(d) || d->state() != page_state::readable) continue;
      rt_.pages.write_back(d);
    }
    if (!rt_.log.relocated().empty()) rt_.named.update_records();
    const std::vector<page_desc*>& written = rt_.log.written();
    {
      // The stored pages among them: the store has their records.
      std::vector<std::uint64_t> stored;
      stored.reserve(written.size());
      for (page_desc* d : written)
        if (!d->is_new()) stored.push_back(d->page);
      rt_.storage.committing(stored, written.size());
    }
    {
      relocator::home_form_memo memo(rt_.relocate);
      for (std::size_t i = 0; i < written.size(); ++i) {
        if (i == written.size() / 2) pause_point("commit.half_written");
        rt_.pages.write_back(written[i], pager::pointer_checking::refuse);
      }
    }
    for (page_desc* d : rt_.log.created()) rt_.pages.store_unbuilt(d);
    rt_.allocator.commit();
    if (rt_.storage.coherent()) {
      std::string why = rt_.pages.invalidated_in_transaction();
      if (!why.empty()) {
        ++rt_.stats.invalidation_conflicts;
        rt_.storage.refuse("commit refused: " + why);
      }
    }
    pause_point("commit.before_store_commit");
    rt_.storage.commit(durable_);
    pause_point("commit.after_store_commit");
  } catch (const conflict&) {
    // Its retries follow their reads page by page.
    tracked_left_ = tracked_after_conflict;
    abort();
    throw;
  } catch (...) {
    abort();
    throw;
  }
  rt_.pages.committed();
  rt_.log.reset();
  rt_.schema.commit();
  ++rt_.stats.commits;
  rt_.stats.log_bytes += rt_.storage.log_position() - log_start_;
  rt_.stats.commit_ns += ns_since(t0);
}

void transaction_engine::abort() {
  failed_ = nullptr;
  rt_.refs.restore_root_cells();  // first: a cell may be on a page this transaction created
  // Pages created by this transaction disappear.
  for (page_desc* d : std::vector<page_desc*>(rt_.log.created())) rt_.pages.drop(d);
  rt_.pages.aborted();
  rt_.log.reset();
  rt_.named.forget();
  rt_.schema.abort();
  ++rt_.stats.aborts;
  rt_.storage.abort();
  rt_.allocator.abort();
}

void transaction_engine::join(database_impl* db) {
  if (!open()) throw no_transaction("joining a transaction: none is open");
  if (!in_this_transaction()) joined_.push_back(std::this_thread::get_id());
  rt_.access.make_current(db);
}

void transaction_engine::leave() {
  const std::thread::id me = std::this_thread::get_id();
  for (auto it = joined_.begin(); it != joined_.end(); ++it)
    if (*it == me) {
      joined_.erase(it);
      return;
    }
}

bool transaction_engine::in_this_transaction() const {
  const std::thread::id me = std::this_thread::get_id();
  if (me == thread_) return true;
  for (const std::thread::id& t : joined_)
    if (t == me) return true;
  return false;
}

bool transaction_engine::fail(std::exception_ptr e) {
  if (!open()) return false;
  if (!failed_) failed_ = named(std::move(e));
  return true;
}

void transaction_engine::fail_from_fault(std::exception_ptr e) {
  if (open() && !failed_ && in_this_transaction()) failed_ = named(std::move(e));
}

std::exception_ptr transaction_engine::named(std::exception_ptr e) const {
  // The failure is thrown again from later calls: it names the database
  // now, as the coordinator's entry points name what they throw.
  try {
    std::rethrow_exception(e);
  } catch (error& x) {
    x.name_database(rt_.storage.name());
  } catch (...) {
  }
  return e;
}

void transaction_engine::require(std::string_view what) const {
  if (!open()) throw no_transaction(std::string(what) + " needs a transaction");
  if (!in_this_transaction()) outside(what);
  throw_if_failed();
}

void transaction_engine::outside(std::string_view what, std::string_view name) const {
  std::string subject(what);
  if (!name.empty()) subject += " '" + std::string(name) + "'";
  throw no_transaction(subject +
                       ": this thread is not in the open transaction, which another thread began (a transaction "
                       "belongs to its thread; qs::join_transaction lets another thread work in it)");
}

void transaction_engine::throw_if_failed() const {
  if (failed_) std::rethrow_exception(failed_);
}

}  // namespace qs::detail
