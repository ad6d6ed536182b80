// The coordinator: its lock, its entry points, and the fault path.
#include "api/database_impl.hpp"

#include "api/catalog.hpp"
#include "core/open_databases.hpp"
#include "os/machine.hpp"
#include "util/stopwatch.hpp"

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
  const frame_control control = page_access::control();
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

namespace {

// The runtime of the database in `s`: its catalog opened or created (which
// says the page size), the pool sized for it.
runtime make_runtime(store& s, const options& opts) {
  try {
    std::uint32_t page_size = opts.page_size;
    home_region home;
    std::unique_ptr<frame_space> frames = open_catalog(s, opts, page_size, home);
    const std::uint32_t pool_pages = pool_pages_for(opts, page_size, s.name());
    return runtime(s, std::move(frames), page_size, pool_pages, opts, home);
  } catch (error& e) {
    e.name_database(s.name());  // the open's boundary
    throw;
  }
}

}  // namespace

database_impl::database_impl(std::unique_ptr<store> s, const options& opts)
    : store_(std::move(s)),
      fork_generation_(fork_generation()),
      rt_(make_runtime(*store_, opts)),
      tx_(rt_, opts.durable) {
  register_fault_range(rt_.access.frames().base(), rt_.access.frames().end(), this);
  add_open_database(this, &rt_.access, &store_->name());
  rt_.access.make_current(this);
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
  rt_.access.forget_current(this);
  unregister_fault_range(this);
  if (tx_.open()) {
    try {
      tx_.abort();
    } catch (...) {
    }
  }
}

void database_impl::join() {
  named([&] {
    lock_scope g(*this);
    tx_.join(this);
  });
}

void database_impl::leave() {
  named([&] {
    lock_scope g(*this);
    tx_.leave();
  });
}

bool database_impl::fail_transaction(std::exception_ptr e) noexcept {
  try {
    lock_scope g(*this);
    return tx_.fail(std::move(e));
  } catch (...) {
    return false;
  }
}

statistics database_impl::stats() const {
  lock_scope g(*this);
  statistics s = rt_.stats;
  s.resident_pages = rt_.pool.size() - rt_.pool.free_slots();
  s.kernel_mappings = process_mappings();
  s.frame_memory_bytes = rt_.access.frames().memory_bytes();
  s.frame_control = frame_control_name(rt_.access.frames().control());
  s.known_pages = rt_.table.size();
  store::coherence_counters c = rt_.storage.coherence();
  s.invalidations_received = c.invalidations;
  s.revalidations_avoided = c.avoided;
  s.replica_lag_ms = c.replica_lag_ms;
  return s;
}

bool database_impl::in_transaction() const {
  return named([&] {
    lock_scope g(*this);
    return tx_.open();
  });
}

void database_impl::on_fault(void* address, bool write, const void* code) {
  if (lock_scope::held())
    invalid_persistent_pointer(address, "the qs runtime touched a protected frame while holding its lock");
  auto t0 = std::chrono::steady_clock::now();
  named([&] {
    lock_scope g(*this);
    try {
      serve_fault(address, write, code);
    } catch (...) {
      // Whatever catches the error, the transaction can only abort now
      // (qs/error.hpp: errors raised in faults).
      // (A thread outside the transaction is refused without failing it.)
      tx_.fail_from_fault(std::current_exception());
      throw;
    }
    rt_.stats.fault_ns += ns_since(t0);
  });
}

void database_impl::serve_fault(void* address, bool write, const void* code) {
  rt_.access.check_fault(address);
  rt_.pages.forget_evicted();
  const std::uint64_t frame = rt_.access.frames().frame_of(address);
  page_desc* d = rt_.table.by_frame(frame);
  // A home frame no page holds yet is its page's (relocator.hpp).
  const bool by_address = !d;
  if (!d) d = rt_.relocate.page_at(frame);
  if (d && d->prefetched_by == prefetch_source::none &&
      (d->state() == page_state::writable || (d->state() == page_state::readable && !write)))
    return;
  if (!d) invalid_persistent_pointer(address, ("no page of database " + name() + " is at this address").c_str());
  if (!tx_.open() || !tx_.in_this_transaction()) {
    char at[32];
    std::snprintf(at, sizeof at, "%#" PRIxPTR, reinterpret_cast<std::uintptr_t>(address));
    const std::string object = "persistent object at " + std::string(at) + " (page " + std::to_string(d->page);
    if (!tx_.open()) throw no_transaction(object + ") touched outside a transaction");
    tx_.outside(object + ") " + (write ? "written" : "read"));
  }
  // A failed transaction's faults are still served (from its snapshot):
  // the failure is raised where an exception is safe, by the next explicit
  // call and by commit, never from a fault.
  if (pager::needs_current(d)) {
    if (d->prefetched_by == prefetch_source::none) ++rt_.stats.read_faults;
    try {
      rt_.pages.make_current(
          d, static_cast<std::uint32_t>(static_cast<std::byte*>(address) - rt_.access.frames().frame_address(d->frame)),
          !write && rt_.pages.expects_write(d, code));
    } catch (const corrupt_page&) {
      // A home frame past every page the database has: no pointer the
      // database holds leads there, so the program made this address.
      if (by_address && beyond_last_page(d->page))
        invalid_persistent_pointer(address, ("no page of database " + name() + " is at this address").c_str());
      throw;
    }
  }
  if (write && d->state() != page_state::writable) {
    ++rt_.stats.write_faults;
    rt_.pages.write_fault(d);
  }
  d->referenced = true;
}

bool database_impl::beyond_last_page(std::uint64_t page) {
  const std::uint64_t count = rt_.relocate.page_count();
  return count > 0 && page >= count;
}

void database_impl::begin() {
  ensure_alternate_stack();
  named([&] {
    lock_scope g(*this);
    tx_.begin(this);
  });
}

void database_impl::commit() {
  named([&] {
    lock_scope g(*this);
    tx_.commit();
  });
}

void database_impl::abort() {
  named([&] {
    lock_scope g(*this);
    if (tx_.open()) tx_.abort();
  });
}

void database_impl::release_cache() {
  named([&] {
    lock_scope g(*this);
    if (tx_.open()) throw error("release_cache inside a transaction");
    rt_.pages.evict_all_clean();
  });
}

void database_impl::backup(const std::string& target) {
  named([&] {
    std::function<void()> job;
    {
      lock_scope g(*this);
      job = store_->backup(target);
    }
    job();  // without the lock: the program's transactions go on meanwhile
  });
}

void* database_impl::allocate(const type_descriptor* d, std::size_t bytes, const void* near_object) {
  return named([&] {
    lock_scope g(*this);
    tx_.require("allocating a persistent object");
    return rt_.allocator.allocate(d, bytes, near_object);
  });
}

void database_impl::deallocate(void* p) {
  named([&] {
    lock_scope g(*this);
    tx_.require("freeing a persistent object");
    rt_.allocator.deallocate(p);
  });
}

std::uint32_t database_impl::open_index(const std::string& name, bool unique) {
  return named([&] {
    lock_scope g(*this);
    return rt_.index.open(name, unique);
  });
}

void database_impl::index_insert(std::uint32_t ix, const std::string& name, std::string_view key,
                                 std::string_view value) {
  named([&] {
    lock_scope g(*this);
    tx_.require("updating index " + name);
    rt_.index.insert(ix, name, key, value);
  });
}

bool database_impl::index_erase(std::uint32_t ix, std::string_view key, std::string_view value) {
  return named([&] {
    lock_scope g(*this);
    tx_.require("updating an index");
    return rt_.index.erase(ix, key, value);
  });
}

std::vector<index_entry> database_impl::index_scan(std::uint32_t ix, std::string_view lo, std::string_view hi,
                                                   std::size_t limit) {
  return named([&] {
    lock_scope g(*this);
    tx_.require_not_other("reading an index");
    return rt_.index.scan(ix, lo, hi, limit);
  });
}

void* database_impl::root_cell(std::string_view name, const type_descriptor* d, std::size_t size,
                               const std::type_info& t) {
  return named([&] {
    lock_scope g(*this);
    tx_.require_not_other("the root", name);
    return rt_.named.cell(name, d, size, t);
  });
}

void database_impl::adopt_root(std::string_view name, void* cell, const std::string& mangled_type) {
  named([&] {
    lock_scope g(*this);
    tx_.require("making a root");
    rt_.named.adopt(name, cell, mangled_type);
  });
}

bool database_impl::has_root(std::string_view name) {
  return named([&] {
    lock_scope g(*this);
    tx_.throw_if_failed();
    return rt_.named.exists(name);
  });
}

}  // namespace qs::detail
