// Opening and closing a database: the store, the reservation, the pool, the
// fault range; the list of open databases.
#include "bdb_store.hpp"
#include "database_impl.hpp"
#include "keys.hpp"
#include "remote_store.hpp"

#include <qs/database.hpp>

#include <mutex>

namespace qs::detail {
namespace {

std::mutex open_mutex;
std::vector<database_impl*> open_databases;
thread_local int lock_depth = 0;

// Where reservations go: 16 TiB up, well clear of the heap, of PIE
// executables (0x55...) and of shared libraries (0x7f...).
constexpr std::uintptr_t first_base = std::uintptr_t{0x1000} << 32;

// Format 3: 48-byte record headers with a page version and the size of the
// page's mapping object. Software mode's object headers carry a tag, so its
// databases have a format of their own.
constexpr const char* format = software_swizzling ? "qs 3 software" : "qs 3";
constexpr const char* mode_name = software_swizzling ? "software" : "hardware";

std::uint64_t number(store& s, const char* key) {
  auto v = s.get(key);
  if (!v) throw corrupt_page(0, "database " + s.name() + ": metadata record '" + key + "' is missing");
  return std::stoull(*v);
}

}  // namespace

lock_scope::lock_scope(const database_impl& db) : lock_(db.mutex_) { ++lock_depth; }
lock_scope::~lock_scope() { --lock_depth; }
bool lock_scope::held() noexcept { return lock_depth > 0; }

database_impl* database_of(const void* p) noexcept {
  std::lock_guard<std::mutex> g(open_mutex);
  for (database_impl* d : open_databases)
    if (d->contains(p)) return d;
  return nullptr;
}

database_impl::database_impl(std::unique_ptr<store> s, const options& opts)
    : store_(std::move(s)),
      page_size_(opts.page_size),
      durable_(opts.durable),
      policy_(opts.relocation_policy),
      force_relocation_percent_(opts.force_relocation_percent),
      schema_(*store_, store_->name()) {
  load_or_create(opts);
  free_frames_ = std::make_unique<frame_map>(frames_->frames());
  pool_ = std::make_unique<buffer_pool>(opts.pool_pages, page_size_);
  zero_page_ = std::make_unique<std::byte[]>(page_size_);
  schema_.load();
  load_free_space();
  register_fault_range(frames_->base(), frames_->end(), this);
  std::lock_guard<std::mutex> g(open_mutex);
  open_databases.push_back(this);
  make_current_database();
}

database_impl::~database_impl() {
  {
    std::lock_guard<std::mutex> g(open_mutex);
    std::erase(open_databases, this);
  }
  forget_current_database();
  unregister_fault_range(this);
  if (txn_open_) {
    try {
      abort_locked();
    } catch (...) {
    }
  }
}

void database_impl::load_or_create(const options& opts) {
  auto ps = store_->get("page_size");
  if (!ps) {
    // A new database: find a free place for its reservation.
    std::uint64_t step = (opts.reservation_bytes + (std::uint64_t{1} << 40) - 1) & ~((std::uint64_t{1} << 40) - 1);
    for (int k = 0; k < 64 && !frames_; ++k) {
      try {
        frames_ = std::make_unique<frame_space>(first_base + k * step, opts.reservation_bytes, page_size_, true);
      } catch (const error&) {
      }
    }
    if (!frames_) throw error("database " + name() + ": no free address range for its reservation");
    // Two clients of a page server may create the database at once: the
    // check is repeated in the transaction, and the loser of the race (a
    // deadlock victim, or one that finds the records) loads the winner's.
    bool created = false;
    store_->begin();
    try {
      if (!store_->get("page_size")) {
        store_->put("format", format);
        store_->put("page_size", std::to_string(page_size_));
        store_->put("base", std::to_string(reinterpret_cast<std::uintptr_t>(frames_->base())));
        store_->put("reservation", std::to_string(opts.reservation_bytes));
        store_->put("next_page", "1");
        store_->put("next_frame", "0");
        store_->commit(true);
        created = true;
      } else {
        store_->abort();
      }
    } catch (const deadlock&) {
      store_->abort();
    } catch (...) {
      store_->abort();
      throw;
    }
    if (created) return;
    frames_.reset();
    ps = store_->get("page_size");
    if (!ps) throw store_error("database " + name() + ": creating the database failed");
  }
  if (auto f = store_->get("format"); f && *f != format) {
    if (*f == "qs 3" || *f == "qs 3 software")
      throw error("database " + name() + " was created by a program built in " +
                  (*f == "qs 3" ? "hardware" : "software") + " mode; this program is built in " + mode_name +
                  " mode (QS_SWIZZLE), and the two lay objects out differently");
    throw error("database " + name() + " has format '" + *f + "'; this qs reads format '" + format + "' only");
  }
  page_size_ = static_cast<std::uint32_t>(std::stoul(*ps));
  store_->set_page_size(page_size_);
  // The preferred base, where the database's pointers need no rewriting;
  // when something else is there, anywhere else: pages are then relocated as
  // they come in.
  std::uintptr_t base = number(*store_, "base");
  try {
    frames_ = std::make_unique<frame_space>(base, opts.reservation_bytes, page_size_, true);
  } catch (const error&) {
    frames_ = std::make_unique<frame_space>(base, opts.reservation_bytes, page_size_, false);
  }
}

}  // namespace qs::detail

namespace qs {

database database::open(const std::string& path, const options& opts) {
  if (opts.page_size < 4096 || opts.page_size > 65536 || (opts.page_size & (opts.page_size - 1)))
    throw invalid_argument("database " + path + ": page size " + std::to_string(opts.page_size) +
                           " is not a power of two from 4096 to 65536");
  if (opts.pool_pages < 16)
    throw invalid_argument("database " + path + ": a buffer pool needs at least 16 pages, not " +
                           std::to_string(opts.pool_pages));
  if (opts.reservation_bytes < std::uint64_t{opts.page_size} * 16 || opts.reservation_bytes % opts.page_size)
    throw invalid_argument("database " + path + ": the reservation must be a multiple of the page size, at least 16 pages");
  if (opts.force_relocation_percent > 100)
    throw invalid_argument("database " + path + ": force_relocation_percent is a percentage, not " +
                           std::to_string(opts.force_relocation_percent));
  detail::check_map_budget(opts.pool_pages);
  std::unique_ptr<detail::store> s;
  if (detail::is_remote_url(path))
    s = detail::connect_remote_store(path, detail::remote_options{opts.server_secret});  // a qs-pageserver
  else
    s = std::make_unique<detail::bdb_store>(path, detail::bdb_options{opts.page_size, opts.store_cache_bytes});
  return database(std::make_unique<detail::database_impl>(std::move(s), opts));
}

database::database(std::unique_ptr<detail::database_impl> impl) : impl_(std::move(impl)) {}
database::database(database&&) noexcept = default;
database& database::operator=(database&&) noexcept = default;
database::~database() = default;

void* database::root_cell(std::string_view name, const type_descriptor* d, std::size_t size,
                          const std::type_info& t) {
  return impl_->root_cell(name, d, size, t);
}
bool database::has_root(std::string_view name) { return impl_->has_root(name); }
void database::release_cache() { impl_->release_cache(); }
bool database::in_transaction() const { return impl_->in_transaction(); }
std::uint32_t database::page_size() const { return impl_->page_size(); }
const std::string& database::path() const { return impl_->name(); }
statistics database::stats() const { return impl_->stats(); }
bool database::contains(const void* p) const { return impl_->contains(p); }

}  // namespace qs
