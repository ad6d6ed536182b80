// The coordinator: wiring the components, and the sequences that span them.
#include "database_impl.hpp"

#include "catalog.hpp"
#include "open_databases.hpp"
#include "os/machine.hpp"
#include "stopwatch.hpp"

#include <qs/pause_point.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>

namespace qs::detail {
namespace {

thread_local int lock_depth = 0;

}  // namespace

lock_scope::lock_scope(const database_impl& db) : mutex_(db.mutex_) {
  if (db.fork_generation_ != fork_generation())
    throw error("database " + db.name() +
                " was opened by the parent of this process: a child made by fork() cannot use it (open it again "
                "in the child; an embedded database once the parent has closed it)");
  mutex_.lock();
  ++lock_depth;
}
lock_scope::~lock_scope() {
  --lock_depth;
  mutex_.unlock();
}
bool lock_scope::held() noexcept { return lock_depth > 0; }

std::uint32_t pool_pages_for(const options& o, std::uint32_t page_size, const std::string& name) {
  const frame_control control = mode_frame_control();
  std::uint64_t pages = o.pool_pages ? o.pool_pages
                        : o.pool_bytes
                            ? o.pool_bytes / page_size
                            : default_pool_pages(page_size, o.reservation_bytes, control == frame_control::protection);
  const std::string given = o.pool_bytes && !o.pool_pages
                                ? std::to_string(o.pool_bytes) + " bytes (" + std::to_string(pages) + " pages of " +
                                      std::to_string(page_size) + " bytes)"
                                : std::to_string(pages) + " pages";
  if (pages < 16)
    throw invalid_argument("database " + name + ": a buffer pool needs at least 16 pages, not " + given +
                           " (0 sizes it from the machine)");
  if (pages > 0x7fffffff || pages * page_size > o.reservation_bytes)
    throw invalid_argument("database " + name + ": a buffer pool of " + given +
                           " is larger than the frame reservation (options::reservation_bytes, " +
                           std::to_string(o.reservation_bytes >> 20) + " MiB)");
  check_map_budget(pages, control);
  return static_cast<std::uint32_t>(pages);
}

database_impl::database_impl(std::unique_ptr<store> s, const options& opts)
    : store_(std::move(s)),
      fork_generation_(fork_generation()),
      page_size_(opts.page_size),
      durable_(opts.durable),
      schema_(*store_, store_->name()) {
  std::unique_ptr<frame_space> frames = open_catalog(*store_, opts, page_size_);
  const std::string& n = store_->name();
  pool_pages_ = pool_pages_for(opts, page_size_, n);
  pool_ = std::make_unique<buffer_pool>(pool_pages_, page_size_);
  access_ = make_page_access(std::move(frames), *pool_, table_);
  words_ = std::make_unique<page_words>(schema_, store_->shared(), page_size_, n);
  pointers_ = std::make_unique<pointer_check>(*words_, *access_, table_, page_size_, n);
  relocator_ = std::make_unique<relocator>(*access_, table_, *words_, log_, stats_, opts, page_size_, n);
  pager_ = std::make_unique<pager>(*store_, *pool_, table_, log_, *access_, *relocator_, *words_, *pointers_, stats_,
                                   page_size_, n);
  pager_->set_prefetch(opts.prefetch_pages);
  allocator_ =
      std::make_unique<object_allocator>(*store_, *pager_, *relocator_, *access_, table_, log_, schema_, page_size_, n);
  refs_ = make_references(*pager_, *relocator_, *access_, table_, log_, stats_, n);
  roots_ = std::make_unique<roots>(*store_, *refs_, *allocator_, log_, n);
  indexes_ = std::make_unique<indexes>(*store_, *refs_, n);
  schema_.set_evolving(opts.evolve);
  schema_.load();
  // The allocator reads its free-space list at the first allocation: a
  // program that only reads opens in the same time whatever the database's
  // size and fragmentation.
  register_fault_range(access_->frames().base(), access_->frames().end(), this);
  add_open_database(this, access_.get(), &store_->name());
  access_->make_current(this);
}

database_impl::~database_impl() {
  if (fork_generation_ != fork_generation()) {
    // A forked child's copy: the store's handles (Berkeley DB's environment,
    // a page server's socket) are the parent's, and are left alone.
    (void)store_.release();
    remove_open_database(this);
    unregister_fault_range(this);
    return;
  }
  remove_open_database(this);
  access_->forget_current(this);
  unregister_fault_range(this);
  if (log_.open()) {
    try {
      abort_locked();
    } catch (...) {
    }
  }
}

void database_impl::require_transaction(const std::string& what) const {
  if (!log_.open()) throw no_transaction(what + " in database " + name() + " needs a transaction");
  if (!in_this_transaction()) outside_transaction(what);
  throw_if_failed();
}

bool database_impl::in_this_transaction() const {
  const std::thread::id me = std::this_thread::get_id();
  if (me == txn_thread_) return true;
  for (const std::thread::id& t : joined_threads_)
    if (t == me) return true;
  return false;
}

void database_impl::outside_transaction(const std::string& what) const {
  throw no_transaction(what + " in database " + name() +
                       ": this thread is not in the open transaction, which another thread began (a transaction "
                       "belongs to its thread; qs::join_transaction lets another thread work in it)");
}

void database_impl::join() {
  lock_scope g(*this);
  if (!log_.open()) throw no_transaction("joining a transaction in database " + name() + ": none is open");
  if (!in_this_transaction()) joined_threads_.push_back(std::this_thread::get_id());
}

void database_impl::leave() {
  lock_scope g(*this);
  const std::thread::id me = std::this_thread::get_id();
  for (auto it = joined_threads_.begin(); it != joined_threads_.end(); ++it)
    if (*it == me) {
      joined_threads_.erase(it);
      return;
    }
}

void database_impl::throw_if_failed() const {
  if (failed_) std::rethrow_exception(failed_);
}

bool database_impl::fail_transaction(std::exception_ptr e) noexcept {
  try {
    lock_scope g(*this);
    if (!log_.open()) return false;
    if (!failed_) failed_ = std::move(e);
    return true;
  } catch (...) {
    return false;
  }
}

statistics database_impl::stats() const {
  lock_scope g(*this);
  statistics s = stats_;
  s.resident_pages = pool_->size() - pool_->free_slots();
  s.kernel_mappings = process_mappings();
  s.frame_memory_bytes = access_->frames().memory_bytes();
  s.frame_control = frame_control_name(access_->frames().control());
  return s;
}

bool database_impl::in_transaction() const {
  lock_scope g(*this);
  return log_.open();
}

void database_impl::on_fault(void* address, bool write) {
  if (lock_scope::held())
    invalid_persistent_pointer(address, "the qs runtime touched a protected frame while holding its lock");
  auto t0 = std::chrono::steady_clock::now();
  lock_scope g(*this);
  try {
    serve_fault(address, write);
  } catch (...) {
    // Whatever catches the error, the transaction can only abort now
    // (qs/error.hpp: errors raised in faults).
    // (A thread outside the transaction is refused without failing it.)
    if (log_.open() && !failed_ && in_this_transaction()) failed_ = std::current_exception();
    throw;
  }
  stats_.fault_ns += ns_since(t0);
}

void database_impl::serve_fault(void* address, bool write) {
  access_->check_fault(address);
  page_desc* d = table_.by_frame(access_->frames().frame_of(address));
  if (d && (d->state() == page_state::writable || (d->state() == page_state::readable && !write))) return;
  if (!d) invalid_persistent_pointer(address, ("no page of database " + name() + " is at this address").c_str());
  if (!log_.open() || !in_this_transaction()) {
    char at[32];
    std::snprintf(at, sizeof at, "%#" PRIxPTR, reinterpret_cast<std::uintptr_t>(address));
    const std::string object = "persistent object at " + std::string(at) + " (page " + std::to_string(d->page);
    if (!log_.open()) throw no_transaction(object + " of database " + name() + ") touched outside a transaction");
    outside_transaction(object + ") " + (write ? "written" : "read"));
  }
  // A failed transaction's faults are still served (from its snapshot):
  // the failure is raised where an exception is safe, by the next explicit
  // call and by commit, never from a fault.
  if (d->state() == page_state::absent || d->state() == page_state::stale) {
    ++stats_.read_faults;
    pager_->make_current(d);
  }
  if (write && d->state() != page_state::writable) {
    ++stats_.write_faults;
    pager_->make_writable(d);
  }
  d->referenced = true;
}

void database_impl::begin() {
  ensure_alternate_stack();
  lock_scope g(*this);
  if (log_.open()) throw error("database " + name() + ": a transaction is already open on this handle");
  // A reservation smaller than the database: when a quarter of its frames
  // is left, the transaction starts from a fresh assignment (the counter
  // wrap of QuickStore), so that it can take any page the database has.
  if (relocator_->running_short()) reset_frames();
  store_->begin();
  log_.opened();
  txn_thread_ = std::this_thread::get_id();
  joined_threads_.clear();
  access_->make_current(this);
  txn_log_start_ = store_->log_position();
  access_->begin_transaction();
  // Other clients may have changed the cached pages since the last
  // transaction: each is revalidated when first touched.
  if (store_->shared()) pager_->mark_all_stale();
}

void database_impl::commit() {
  lock_scope g(*this);
  // (Not require_transaction: a failed transaction's commit aborts it, below.)
  if (!log_.open()) throw no_transaction("commit in database " + name() + " needs a transaction");
  auto t0 = std::chrono::steady_clock::now();
  try {
    throw_if_failed();
    refs_->announce_root_cells();
    for (page_desc* d : log_.written()) pointers_->check(d, pager_->image(d), true);
    for (page_desc* d : log_.suspects()) {
      // Evicted holding a non-persistent pointer: look again.
      pager_->make_current(d);
      pointers_->check(d, pager_->image(d), true);
    }
    // One-time relocation: pages rewritten when they came in go back to the
    // store with their new pointers, so that later runs find them in place;
    // and the roots this process used name their cells where they are now.
    for (page_desc* d : log_.relocated()) {
      if (!log_.relocate_pending(d) || d->state() != page_state::readable) continue;
      pager_->write_back(d);
    }
    if (!log_.relocated().empty()) roots_->update_records();
    const std::vector<page_desc*>& written = log_.written();
    for (std::size_t i = 0; i < written.size(); ++i) {
      if (i == written.size() / 2) pause_point("commit.half_written");
      pager_->write_back(written[i]);
    }
    for (page_desc* d : log_.created()) pager_->store_unbuilt(d);
    allocator_->commit();
    pause_point("commit.before_store_commit");
    store_->commit(durable_);
    pause_point("commit.after_store_commit");
  } catch (...) {
    abort_locked();
    throw;
  }
  pager_->committed();
  log_.reset();
  schema_.commit();
  ++stats_.commits;
  stats_.log_bytes += store_->log_position() - txn_log_start_;
  stats_.commit_ns += ns_since(t0);
}

void database_impl::abort() {
  lock_scope g(*this);
  if (log_.open()) abort_locked();
}

void database_impl::abort_locked() {
  failed_ = nullptr;
  refs_->restore_root_cells();  // first: a cell may be on a page this transaction created
  // Pages created by this transaction disappear.
  for (page_desc* d : std::vector<page_desc*>(log_.created())) pager_->drop(d);
  pager_->aborted();
  log_.reset();
  roots_->forget();
  schema_.abort();
  ++stats_.aborts;
  store_->abort();
  allocator_->abort();
}

void database_impl::reset_frames() {
  pager_->evict_all_clean();
  table_.clear();
  relocator_->reset();
  roots_->forget();
  allocator_->forget_current_page();
  ++stats_.frame_resets;
}

void database_impl::release_cache() {
  lock_scope g(*this);
  if (log_.open()) throw error("database " + name() + ": release_cache inside a transaction");
  pager_->evict_all_clean();
}

void* database_impl::allocate(const type_descriptor* d, std::size_t bytes, const void* near_object) {
  lock_scope g(*this);
  require_transaction("allocating a persistent object");
  return allocator_->allocate(d, bytes, near_object);
}

void database_impl::deallocate(void* p) {
  lock_scope g(*this);
  require_transaction("freeing a persistent object");
  allocator_->deallocate(p);
}

std::uint32_t database_impl::open_index(const std::string& name, bool unique) {
  lock_scope g(*this);
  return indexes_->open(name, unique);
}

void database_impl::index_insert(std::uint32_t ix, const std::string& name, std::string_view key,
                                 std::string_view value) {
  lock_scope g(*this);
  require_transaction("updating index " + name);
  indexes_->insert(ix, name, key, value);
}

bool database_impl::index_erase(std::uint32_t ix, std::string_view key, std::string_view value) {
  lock_scope g(*this);
  require_transaction("updating an index");
  return indexes_->erase(ix, key, value);
}

std::vector<index_entry> database_impl::index_scan(std::uint32_t ix, std::string_view lo, std::string_view hi,
                                                   std::size_t limit) {
  lock_scope g(*this);
  if (log_.open() && !in_this_transaction()) outside_transaction("reading an index");
  throw_if_failed();
  return indexes_->scan(ix, lo, hi, limit);
}

void* database_impl::root_cell(std::string_view name, const type_descriptor* d, std::size_t size,
                               const std::type_info& t) {
  lock_scope g(*this);
  if (log_.open() && !in_this_transaction()) outside_transaction("the root '" + std::string(name) + "'");
  throw_if_failed();
  return roots_->cell(name, d, size, t);
}

bool database_impl::has_root(std::string_view name) {
  lock_scope g(*this);
  throw_if_failed();
  return roots_->exists(name);
}

void* database_impl::resolve_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write) {
  lock_scope g(*this);
  if (log_.open() && !in_this_transaction()) outside_transaction("a persistent object");
  throw_if_failed();
  return refs_->resolve_identity(page, offset, tag, for_write);
}

void database_impl::identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) {
  lock_scope g(*this);
  refs_->identify(p, page, offset, tag);
}

}  // namespace qs::detail
