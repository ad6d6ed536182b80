// The public API of qs/database.hpp, qs/persistent.hpp and qs/index.hpp:
// opening a database, and the calls that forward to its coordinator.
#include "api/database_impl.hpp"
#include "core/open_databases.hpp"
#include "evolution/evolution_access.hpp"
#include "evolution/schema_evolution.hpp"
#include "os/machine.hpp"
#include "store/bdb_store.hpp"
#include "store/remote_store.hpp"

#include <qs/database.hpp>
#include <qs/index.hpp>
#include <qs/persistent.hpp>
#include <qs/prefault.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace qs {

namespace {

// Schema evolution converts a database in one transaction: its lock table
// may grow to this many locks (about 25 GiB of pages written), which costs
// memory only as they are taken.
constexpr std::uint32_t evolution_max_locks = 8000000;

// The whole number that environment variable `name` gives, when it gives
// one; throws qs::invalid_argument, naming it, the range and `unit`, when
// it is not a number from 0 to max.
std::optional<std::uint32_t> number_from_env(const char* name, const char* unit, std::uint32_t max) {
  const char* p = std::getenv(name);
  if (!p || !*p) return std::nullopt;
  char* end = nullptr;
  unsigned long v = std::strtoul(p, &end, 10);
  if (*end || v > max)
    throw invalid_argument(std::string(name) + " must be a number of " + unit + " from 0 to " + std::to_string(max) +
                           ", not '" + p + "'");
  return static_cast<std::uint32_t>(v);
}

// The runtime of the database at `path`, its options checked and completed.
std::unique_ptr<detail::database_impl> open_impl(const std::string& path, const options& given) {
  options opts = given;
  if (opts.store_cache_bytes == 0) opts.store_cache_bytes = detail::default_store_cache_bytes();
  // The program's option is checked as given, whatever QS_PREFETCH says.
  if (opts.prefetch_pages > 4096)
    throw invalid_argument("database " + path + ": prefetch_pages is at most 4096, not " +
                           std::to_string(opts.prefetch_pages));
  if (auto v = number_from_env("QS_PREFETCH", "pages", 4096)) opts.prefetch_pages = *v;
  if (const char* p = std::getenv("QS_PREFETCH_ORDER"); p && *p) {
    const std::string v = p;
    if (v == "page_order") opts.prefetch_along = prefetch_order::page_order;
    else if (v == "pointers") opts.prefetch_along = prefetch_order::pointers;
    else if (v == "both") opts.prefetch_along = prefetch_order::both;
    else if (v == "automatic") opts.prefetch_along = prefetch_order::automatic;
    else throw invalid_argument("QS_PREFETCH_ORDER must be page_order, pointers, both or automatic, not '" + v + "'");
  }
  if (const char* p = std::getenv("QS_PAGE_FILE"); p && *p) {
    const std::string v = p;
    if (v != "0" && v != "1") throw invalid_argument("QS_PAGE_FILE must be 0 or 1, not '" + v + "'");
    opts.page_file = v == "1";
  }
  if (const char* p = std::getenv("QS_MAP_PAGE_FILE"); p && *p) {
    const std::string v = p;
    if (v != "0" && v != "1") throw invalid_argument("QS_MAP_PAGE_FILE must be 0 or 1, not '" + v + "'");
    opts.map_page_file = v == "1";
  }
  if (const char* p = std::getenv("QS_WRITABLE_ON_ARRIVAL"); p && *p) {
    const std::string v = p;
    if (v != "0" && v != "1") throw invalid_argument("QS_WRITABLE_ON_ARRIVAL must be 0 or 1, not '" + v + "'");
    opts.writable_on_arrival = v == "1";
  }
  if (auto v = number_from_env("QS_SERVER_WAIT_SPIN_US", "microseconds", 100000)) opts.server_wait_spin_us = *v;
  if (const char* p = std::getenv("QS_ISOLATION"); p && *p) {
    const std::string v = p;
    if (v == "serializable") opts.isolation_level = isolation::serializable;
    else if (v == "snapshot") opts.isolation_level = isolation::snapshot;
    else throw invalid_argument("QS_ISOLATION must be serializable or snapshot, not '" + v + "'");
  }
  if (opts.server_wait_spin_us > 100000)
    throw invalid_argument("database " + path + ": server_wait_spin_us is at most 100000 (100 ms), not " +
                           std::to_string(opts.server_wait_spin_us));
  if (static_cast<unsigned>(opts.prefetch_along) > static_cast<unsigned>(prefetch_order::automatic))
    throw invalid_argument("database " + path + ": prefetch_along is not a qs::prefetch_order");
  if (opts.page_size < 4096 || opts.page_size > 65536 || (opts.page_size & (opts.page_size - 1)))
    throw invalid_argument("database " + path + ": page size " + std::to_string(opts.page_size) +
                           " is not a power of two from 4096 to 65536");
  // The pool's size is checked here with the page size asked for, and set
  // by database_impl with the database's own (pool_pages_for).
  if (opts.pool_pages && opts.pool_bytes)
    throw invalid_argument("database " + path +
                           ": give the buffer pool in pages (pool_pages) or in bytes (pool_bytes), not both");
  if (opts.pool_pages || opts.pool_bytes) detail::pool_pages_for(opts, opts.page_size, path);
  if (opts.reservation_bytes < std::uint64_t{opts.page_size} * 16 || opts.reservation_bytes % opts.page_size)
    throw invalid_argument("database " + path +
                           ": the reservation must be a multiple of the page size, at least 16 pages");
  if (opts.force_relocation_percent > 100)
    throw invalid_argument("database " + path + ": force_relocation_percent is a percentage, not " +
                           std::to_string(opts.force_relocation_percent));
  std::unique_ptr<detail::store> s;
  if (detail::is_remote_url(path))
    s = detail::connect_remote_store(
        path, detail::remote_options{opts.server_secret, opts.reconnect_budget_ms,
                                     opts.isolation_level == isolation::serializable, opts.read_replica,
                                     opts.server_wait_spin_us, opts.durable});  // a qs-pageserver
  else
    s = std::make_unique<detail::bdb_store>(
        path,
        detail::bdb_options{opts.page_size, opts.store_cache_bytes,
                            opts.evolve ? evolution_max_locks : detail::default_max_locks, opts.map_store_files,
                            opts.page_file},
        opts.durable);
  return std::make_unique<detail::database_impl>(std::move(s), opts);
}

}  // namespace

database database::open(const std::string& path, const options& opts) {
  auto impl = open_impl(path, opts);
  if (opts.evolve) {
    try {
      detail::evolve_database(*impl, opts);
    } catch (const reservation_full& e) {
      const std::uint64_t need = detail::evolution_access(*impl).page_limit() * impl->page_size();
      throw reservation_full(std::string(e.what()) +
                             "; schema evolution converts in one transaction that touches every page: set "
                             "qs::options::reservation_bytes to more than the database's " +
                             std::to_string(need >> 20) + " MiB (" + std::to_string(need) +
                             " bytes), twice that to be safe; nothing was converted");
    }
  }
  return database(std::move(impl));
}

std::vector<std::string> evolution_plan(const std::string& path, const options& given) {
  options opts = given;
  opts.evolve = true;  // the registry lists what changed instead of refusing it
  auto impl = open_impl(path, opts);
  std::vector<std::string> lines;
  for (const detail::type_change& c : detail::plan_evolution(*impl, opts)) lines.push_back(c.name + ": " + c.summary);
  return lines;
}

database::database(std::unique_ptr<detail::database_impl> impl) : impl_(std::move(impl)) {}
database::database(database&&) noexcept = default;
database& database::operator=(database&&) noexcept = default;
database::~database() = default;

void* database::root_cell(std::string_view name, const type_descriptor* d, std::size_t size, const std::type_info& t) {
  return impl_->root_cell(name, d, size, t);
}
bool database::has_root(std::string_view name) { return impl_->has_root(name); }
void database::release_cache() { impl_->release_cache(); }
void database::backup(const std::string& target) { impl_->backup(target); }
bool database::in_transaction() const { return impl_->in_transaction(); }
std::uint32_t database::page_size() const { return impl_->page_size(); }
std::uint32_t database::pool_pages() const { return impl_->pool_pages(); }
const std::string& database::path() const { return impl_->name(); }
statistics database::stats() const { return impl_->stats(); }
bool database::contains(const void* p) const { return impl_->contains(p); }

}  // namespace qs

namespace qs::detail {

void* allocate(database& db, const type_descriptor* d, std::size_t bytes, const void* near_object) {
  return impl_of(db).allocate(d, bytes, near_object);
}

void* allocate_near(const void* near_object, const type_descriptor* d, std::size_t bytes) {
  database_impl* db = database_of(near_object);
  if (!db) throw invalid_argument("qs::near: the object given is not persistent");
  return db->allocate(d, bytes, near_object);
}

void release(void* p) noexcept {
  if (!p) return;
  database_impl* db = database_of(p);
  if (!db) {
    ::operator delete(p);
    return;
  }
  try {
    db->deallocate(p);
  } catch (const std::exception& e) {
    // The transaction's commit throws it (database_impl::fail_transaction);
    // with no transaction to carry it, nothing can.
    if (db->fail_transaction(std::current_exception())) return;
    std::fprintf(stderr, "qs: cannot free a persistent object: %s\n", e.what());
    std::abort();
  }
}

void refuse_count(const type_descriptor* d, std::size_t n) {
  throw invalid_argument("qs::allocator<" + std::string(d->name) + ">: " + std::to_string(n) + " objects of " +
                         std::to_string(d->size) + " bytes are more bytes than a size_t holds");
}

void check_class_size(std::size_t requested, std::size_t own, const char* cls) {
  if (requested != own)
    throw schema_error(std::string("allocating ") + std::to_string(requested) + " bytes through " + cls +
                       "'s operator new (" + cls + " has " + std::to_string(own) + " bytes): a class derived from " +
                       cls + " needs its own QS_PERSISTENT line");
}

std::uint32_t index_open(database& db, const std::string& name, bool unique) {
  return impl_of(db).open_index(name, unique);
}
void index_insert(database& db, std::uint32_t ix, const std::string& name, std::string_view key,
                  std::string_view value) {
  impl_of(db).index_insert(ix, name, key, value);
}
bool index_erase(database& db, std::uint32_t ix, std::string_view key, std::string_view value) {
  return impl_of(db).index_erase(ix, key, value);
}
std::vector<index_entry> index_scan(database& db, std::uint32_t ix, std::string_view lo, std::string_view hi,
                                    std::size_t limit) {
  return impl_of(db).index_scan(ix, lo, hi, limit);
}

}  // namespace qs::detail

namespace qs {

void prefault(const void* p, std::size_t n, prefault_access access) {
  detail::database_impl* db = detail::database_of(p);
  // Software mode maps what a transaction uses for its whole length, and
  // logs what qs::write announced: nothing to fault in.
  if (n == 0 || !db || !db->faults_pages_in()) return;
  // The program's own touches, which take the usual faults: one byte of
  // each page of the range (a write of the byte's own value for for_write,
  // which changes nothing the commit's diff would log).
  const std::size_t page = db->page_size();
  auto* at = static_cast<volatile char*>(const_cast<void*>(p));
  auto* end = at + n;
  while (at < end) {
    char c = *at;
    if (access == for_write) *at = c;
    auto next = (reinterpret_cast<std::uintptr_t>(at) / page + 1) * page;
    at = reinterpret_cast<volatile char*>(next);
  }
}

}  // namespace qs
