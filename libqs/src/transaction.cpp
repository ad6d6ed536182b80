// Transactions: begin, commit (pointer check, diff, log) and abort (restore
// before-images), and the qs::transaction object.
#include "database_impl.hpp"
#include "keys.hpp"

#include <qs/pause_point.hpp>
#include <qs/transaction.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace qs::detail {

void database_impl::require_transaction(const char* what) const {
  if (!txn_open_) throw no_transaction(std::string(what) + " in database " + name() + " needs a transaction");
}

void database_impl::begin() {
  lock_scope g(*this);
  if (txn_open_) throw error("database " + name() + ": a transaction is already open on this handle");
  // A reservation smaller than the database: when a quarter of its frames
  // is left, the transaction starts from a fresh assignment (the counter
  // wrap of QuickStore), so that it can take any page the database has.
  if (free_frames_->free_frames() < free_frames_->frames() / 4) reset_frames();
  store_->begin();
  txn_open_ = true;
  make_current_database();
  txn_log_start_ = store_->log_position();
  // Software mode: each page's first use in the transaction takes the slow
  // path, which pins it until the transaction ends.
  if constexpr (software_swizzling) hide_all();
  if (store_->shared()) {
    // Other clients may have changed the cached pages since the last
    // transaction: each is revalidated when first touched (make_current).
    // One mprotect over the reservation revokes access to all of them (in
    // software mode, clearing the residency table).
    bool any = false;
    pool_->for_each_page([&](page_desc* d) {
      d->stale = true;
      any = true;
    });
    if (any) hide_all();
  }
}

bool database_impl::check_pointers(page_desc* d, bool throw_on_violation) {
  const std::byte* img = image(d);
  bool ok = true;
  for_each_word(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t which) {
    if (is_vptr || !ok) return;
    std::uintptr_t v;
    std::memcpy(&v, img + off, sizeof v);
    // Software mode: persistent references are qs::ref, never addresses.
    if (v == 0 || (!software_swizzling && frames_->contains(reinterpret_cast<const void*>(v)))) return;
    ok = false;
    if (!throw_on_violation) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, " at %p (page %" PRIu64 ") points to %p", static_cast<void*>(address(d) + off),
                  d->page, reinterpret_cast<void*>(v));
    std::string what = "database " + name() + ": commit refused: " + member_name(l, l.pointers[which]) + buf;
    if (software_swizzling && contains(reinterpret_cast<const void*>(v)))
      throw transient_pointer(what + ", a raw address (in software mode, persistent objects refer to each other "
                                     "through qs::ref); the transaction is aborted");
    if (database_impl* other = database_of(reinterpret_cast<const void*>(v)))
      throw cross_database_pointer(what + ", into database " + other->name() +
                                   " (pointers between databases are not supported); the transaction is aborted");
    throw transient_pointer(what + ", outside the persistent region; the transaction is aborted");
  });
  return ok;
}

void database_impl::commit() {
  lock_scope g(*this);
  require_transaction("commit");
  auto t0 = std::chrono::steady_clock::now();
  try {
    announce_changed_roots();
    for (page_desc* d : written_) check_pointers(d, true);
    for (page_desc* d : std::vector<page_desc*>(suspect_.begin(), suspect_.end())) {
      // Evicted holding a non-persistent pointer: look again.
      make_current(d);
      check_pointers(d, true);
    }
    // One-time relocation: pages rewritten when they came in go back to the
    // store with their new pointers, so that later runs find them in place.
    for (page_desc* d : relocated_) {
      if (!d->relocate_pending || d->state != page_state::readable) continue;
      store_->lock_for_write(d->page);
      write_back(d);
    }
    // And the roots this process used name their cells where they are now.
    if (!relocated_.empty()) update_roots();
    for (std::size_t i = 0; i < written_.size(); ++i) {
      if (i == written_.size() / 2) pause_point("commit.half_written");
      write_back(written_[i]);
    }
    // Pages of large objects nobody touched still need their records.
    for (page_desc* d : created_) {
      if (d->is_new && !d->materialized) {
        d->hdr.magic = record_magic;
        d->hdr.checksum = record_checksum(d->hdr, zero_page_.get(), page_size_);
        store_->put_page(d->page, d->hdr, zero_page_.get(), nullptr);
        d->is_new = false;
        ++stats_.pages_written;
      }
    }
    pause_point("commit.before_store_commit");
    store_->commit(durable_);
    pause_point("commit.after_store_commit");
  } catch (...) {
    abort_locked();
    throw;
  }
  for (page_desc* d : written_) {
    d->state = page_state::readable;
    set_access(d, false);
    d->has_before = false;
    d->forget_saved();
  }
  saved_bytes_.clear();
  for (page_desc* d : created_) d->created_in_txn = false;
  for (page_desc* d : relocated_) d->relocate_pending = false;
  relocated_.clear();
  written_.clear();
  created_.clear();
  logged_.clear();
  suspect_.clear();
  free_space_dirty_.clear();
  unpin_transaction_pages();
  schema_.commit();
  txn_open_ = false;
  ++stats_.commits;
  stats_.log_bytes += store_->log_position() - txn_log_start_;
  stats_.commit_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

void database_impl::abort() {
  lock_scope g(*this);
  if (txn_open_) abort_locked();
}

void database_impl::abort_locked() {
  restore_roots();  // first: a cell may be on a page this transaction created
  for (page_desc* d : relocated_) d->relocate_pending = false;
  relocated_.clear();
  // Pages created by this transaction disappear.
  for (page_desc* d : std::vector<page_desc*>(created_)) drop(d);
  created_.clear();
  for (page_desc* d : std::vector<page_desc*>(written_)) {
    if (logged_.count(d)) {
      // Its resident image came back from the store transaction: forget it.
      evict_clean(d);
      continue;
    }
    if (d->has_before) std::memcpy(image(d), before_image(d), page_size_);
    put_back_saved(d, image(d));
    d->state = page_state::readable;
    set_access(d, false);
    d->has_before = false;
  }
  written_.clear();
  saved_bytes_.clear();
  unpin_transaction_pages();
  for (page_desc* d : logged_)
    if (d->state != page_state::absent) evict_clean(d);
  logged_.clear();
  suspect_.clear();
  free_space_dirty_.clear();
  txn_open_ = false;
  current_page_ = 0;
  roots_.clear();
  schema_.abort();
  ++stats_.aborts;
  store_->abort();
  load_free_space();
}

namespace {
std::atomic<transaction*> current_txn{nullptr};
}

database& current_database() {
  transaction* t = current_txn.load();
  if (!t) throw no_transaction("qs::allocator needs a transaction: none is open");
  return t->db();
}

}  // namespace qs::detail

namespace qs {

transaction::transaction(database& db) : db_(&db) {
  detail::impl_of(db).begin();
  previous_ = detail::current_txn.exchange(this);
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
  transaction* self = this;
  detail::current_txn.compare_exchange_strong(self, previous_);
  detail::impl_of(*db_).commit();
}

void transaction::abort() {
  if (!active_) return;
  active_ = false;
  transaction* self = this;
  detail::current_txn.compare_exchange_strong(self, previous_);
  detail::impl_of(*db_).abort();
}

transaction* transaction::current() noexcept { return detail::current_txn.load(); }

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
    } catch (const deadlock&) {
      // The transaction has been aborted (by the commit, or by tx's
      // destructor). Wait a little, longer after each loss, and retry.
      if (attempt >= attempts) throw;
      int cap_us = 200 << std::min(attempt, 7);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % cap_us));
    }
  }
}

}  // namespace qs
