// The embedded store: one client's transactions on a bdb_env.
#include "store/bdb_store.hpp"

#include "util/stopwatch.hpp"

#include <qs/error.hpp>
#include <qs/format/keys.hpp>

#include <db_cxx.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace qs::detail {
namespace {

// The lock files this process holds (device, inode): a second open of the
// same database in this process is told so, not that another process has it.
std::mutex held_mutex;
std::set<std::pair<dev_t, ino_t>> held_locks;

std::pair<dev_t, ino_t> identity(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}

}  // namespace

namespace {

// A commit that writes fewer stored pages goes without warming their
// leaves (a helper's start costs more than a few reads from the OS's cache).
constexpr std::size_t warm_min_pages = 64;

// Helper threads for prefetch: one fewer than the cores, at most 3.
unsigned reader_helpers() {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 1 ? std::min(cores - 1, 3u) : 0;
}

}  // namespace

bdb_store::bdb_store(const std::string& dir, const bdb_options& o, bool durable_commits)
    : dir_(dir), page_size_(o.page_size), durable_commits_(durable_commits), readers_(reader_helpers()) {
  std::error_code ec;
  // A database is created only in an empty or absent directory: any other
  // would get the store's files beside the user's.
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec))
      throw invalid_argument("database " + dir + ": not a directory (a database is a directory of its own)");
    bool empty = std::filesystem::is_empty(dir, ec);
    if (!empty && !std::filesystem::exists(std::filesystem::path(dir) / database_lock_file, ec))
      throw invalid_argument("database " + dir +
                             ": the directory is not empty and holds no qs database; qs creates a database only "
                             "in an empty or absent directory");
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) throw store_error("database " + dir + ": cannot create the directory: " + ec.message());
  std::string lock_path = dir + "/" + database_lock_file;
  lock_fd_ = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 && (errno == EROFS || errno == EACCES)) {
    // Read-only media (or a directory this user may only read): a database
    // closed cleanly is read without writing anything; the first write
    // says why it cannot be made.
    lock_fd_ = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (lock_fd_ < 0) throw store_error("database " + dir + ": cannot open " + lock_path + ": " + std::strerror(errno));
  std::lock_guard<std::mutex> g(held_mutex);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const bool here = held_locks.count(identity(lock_fd_)) != 0;
    ::close(lock_fd_);
    if (here)
      throw database_in_use("database " + dir +
                            " is already open in this process: a process has one handle on an embedded database "
                            "(use that handle from every thread that needs it, or close it first)");
    throw database_in_use("database " + dir +
                          " is open in another process; an embedded database has one client at a "
                          "time (use qs-pageserver to share it)");
  }
  try {
    env_ = std::make_unique<bdb_env>(dir, o.cache_bytes, false, o.max_locks, o.map_files, nullptr,
                                     o.page_file ? static_cast<std::uint32_t>(sizeof(record_header)) + o.page_size : 0);
  } catch (...) {
    ::close(lock_fd_);
    throw;
  }
  held_locks.insert(identity(lock_fd_));
  scratch_ = std::make_unique<std::byte[]>(sizeof(record_header) + page_size_);
}

bdb_store::~bdb_store() {
  readers_.stop_task();
  if (txn_) txn_->abort();
  env_.reset();
  std::lock_guard<std::mutex> g(held_mutex);
  held_locks.erase(identity(lock_fd_));
  ::close(lock_fd_);
}

void bdb_store::set_page_size(std::uint32_t page_size) {
  page_size_ = page_size;
  scratch_ = std::make_unique<std::byte[]>(sizeof(record_header) + page_size_);
}

void bdb_store::begin() {
  if (in_txn_) throw store_error("database " + dir_ + ": store transaction already open");
  // A cleanly closed database is read without a Berkeley DB transaction
  // until the first write (bdb_env::about_to_write).
  if (env_->transactional()) txn_ = env_->begin();
  in_txn_ = true;
  reopened_ = false;
  wrote_ = false;
  bulk_ = false;
  committing_ = false;
  committed_end_.reset();
  deferred_.clear();
}

void bdb_store::writes_coming() {
  if (prepare_asked_ || env_->transactional()) return;
  prepare_asked_ = true;
  bdb_env* env = env_.get();
  readers_.start_task([env](const std::atomic<bool>&) { env->prepare_to_write(); });
}

DbTxn* bdb_store::write_txn() {
  if (!env_->transactional()) {
    readers_.stop_task();  // a prepare_to_write() under way finishes first
    env_->about_to_write();
    log_offset_ = env_->log_position();  // log_position() went on from 0
    reopened_ = true;
  }
  if (in_txn_ && !txn_) txn_ = env_->begin();
  return txn_;
}

DbTxn* bdb_store::writing() {
  DbTxn* t = write_txn();
  if (wrote_ || !t) return t;
  wrote_ = true;
  // A write before the commit (mostly a dirty page evicted from a
  // transaction larger than the pool) begins a bulk transaction when the
  // transaction has added bulk_min_pages pages so far.
  if (!committing_) bulk_ = takes_bulk(added_pages());
  if (bulk_) {
    // It has only read: ending it gives up nothing but its read locks, and
    // every page it read is in the pool.
    txn_ = nullptr;
    env_->abort(t);
    txn_ = t = env_->begin(bdb_env::txn_kind::bulk);
  }
  for (const auto& [k, v] : deferred_) {
    if (v) env_->put(t, k, *v);
    else env_->del(t, k);
  }
  deferred_.clear();
  return t;
}

bool bdb_store::takes_bulk(std::uint64_t added) const {
  // pages.db's records are logged whatever the commit's size (bdb_env::txn_kind).
  return durable_commits_ && added >= bulk_min_pages && env_->has_page_file();
}

void bdb_store::committing(const std::vector<std::uint64_t>& stored, std::size_t pages) {
  bulk_ = !wrote_ && takes_bulk(pages_added(stored, pages));
  committing_ = true;
  // A commit of many pages to pages.db reads most of their B-tree leaves
  // into a cache the first write opened empty: a helper reads them ahead.
  // It starts at the first write: a commit that finds nothing changed
  // writes nothing, and does not reopen the environment for writing.
  // Once the environment is open for writing, its cache keeps the leaves
  // from one commit to the next, and a helper reading them would only take
  // the core and the cache's latches from the writes (qs_fault_bench's
  // commit per dirtied page: 6.2 µs without it, 8.5 with it).
  to_warm_.clear();
  written_.store(0, std::memory_order_relaxed);
  if (stored.size() < warm_min_pages || env_->has_page_file() || readers_.helpers() == 0) return;
  if (env_->transactional() && !reopened_) return;
  to_warm_ = stored;
}

void bdb_store::commit(bool durable) {
  readers_.stop_task();
  to_warm_.clear();
  if (!deferred_.empty()) writing();
  if (next_) {
    env_->put(writing(), "next_page", std::to_string(next_->page));
    env_->put(writing(), "next_frame", std::to_string(next_->frame));
    next_.reset();
  }
  DbTxn* t = txn_;
  txn_ = nullptr;
  in_txn_ = false;
  if (t) env_->commit(t, durable);
}

void bdb_store::abort() {
  readers_.stop_task();
  to_warm_.clear();
  deferred_.clear();
  in_txn_ = false;
  next_.reset();
  if (!txn_) return;
  DbTxn* t = txn_;
  txn_ = nullptr;
  env_->abort(t);
}

bool bdb_store::read_page(std::uint64_t page, record_header& h, std::byte* image, std::string& mapping) {
  // One bulk call brings the record's pieces and the mapping object.
  bool found = false;
  scan_records(
      page, page, [&](std::uint64_t) { return image; },
      [&](std::uint64_t, const record_header& stored, std::string m) {
        h = stored;
        mapping = std::move(m);
        found = true;
      },
      16 * 1024);
  if (found) {
    if (h.mapping_entries == 0) mapping.clear();
    return true;
  }
  // Absent, or damaged: the piece by piece read says which.
  const std::uint32_t want = sizeof(record_header) + page_size_;
  std::uint32_t n = env_->read_record(txn_, page, scratch_.get(), want);
  if (n == 0) return false;
  if (n != want)
    throw corrupt_page(page, "database " + dir_ + ": page " + std::to_string(page) + " record has " +
                                 std::to_string(n) + " bytes, expected " + std::to_string(want));
  split_record(scratch_.get(), h, image);
  mapping.clear();
  if (h.mapping_entries != 0)
    if (auto m = env_->read_mapping(txn_, page)) mapping = std::move(*m);
  return true;
}

bool bdb_store::image_in_file(std::uint64_t page, file_image& where) {
  bdb_env::file_image w{};
  if (!env_->image_in_file(txn_, page, w)) return false;
  where = {w.fd, w.offset, w.bytes};
  return true;
}

void bdb_store::split_record(const void* record, record_header& h, std::byte* image) const {
  std::memcpy(&h, record, sizeof h);
  std::memcpy(image, static_cast<const std::byte*>(record) + sizeof h, page_size_);
}

void bdb_store::scan_records(
    std::uint64_t first, std::uint64_t last, const std::function<std::byte*(std::uint64_t page)>& want,
    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got,
    std::uint32_t bulk_bytes) {
  const std::uint32_t whole = sizeof(record_header) + page_size_;
  // The page whose record was taken, waiting for its mapping object.
  bool pending = false;
  std::uint64_t pending_page = 0;
  record_header h{};
  std::string mapping;
  auto deliver = [&] {
    if (pending) got(pending_page, h, std::move(mapping));
    pending = false;
    mapping.clear();
  };
  // Each record's pieces go straight to its header and its image.
  env_->read_range_into(
      txn_, first, last,
      [&](std::uint64_t page) -> bdb_env::record_place {
        deliver();  // the record before (h is about to be this one's)
        std::byte* image = want(page);
        if (!image) return {};
        return {&h, static_cast<std::uint32_t>(sizeof h), image, page_size_};
      },
      [&](std::uint64_t page, bool is_mapping, const void* data, std::uint32_t size) {
        if (is_mapping) {
          if (pending && page == pending_page) mapping.assign(static_cast<const char*>(data), size);
          return true;
        }
        deliver();
        if (size != whole) return true;
        pending = true;
        pending_page = page;
        return true;
      },
      bulk_bytes);
  deliver();
}

std::uint64_t bdb_store::page_end() {
  if (next_) return next_->page;
  if (committed_end_ && in_txn_) return *committed_end_;
  auto v = env_->get(txn_, "next_page");
  committed_end_ = v ? decimal_counter(*v) : 0;
  return *committed_end_;
}

bool bdb_store::read_range(
    std::uint64_t first, std::uint64_t last, const std::function<std::byte*(std::uint64_t page)>& want,
    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
  if (const std::uint64_t end = page_end(); end != 0 && last >= end) {
    if (first >= end) return true;
    last = end - 1;
  }
  if (!spread() || last - first + 1 < spread_pages || last - first >= spread_max_pages) {
    const auto t0 = std::chrono::steady_clock::now();
    scan_records(first, last, want, got, bulk_for(last - first + 1));
    note_read_time(ns_since(t0), last - first + 1);
    return true;
  }
  std::vector<wanted_page> wanted;
  for (std::uint64_t page = first;; ++page) {
    if (std::byte* image = want(page)) wanted.push_back({page, image, {}, {}, false});
    if (page == last) break;
  }
  read_spread(wanted, true, got);
  return true;
}

void bdb_store::read_spread(
    std::vector<wanted_page>& wanted, bool ranges,
    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
  const std::size_t n = wanted.size();
  // A batch of a few pages is read on the calling thread: waking a helper
  // costs more than it saves (OO7's cold operations measured so), and a
  // run of neighbouring pages is then one bulk pass. So is every batch of
  // a transaction that has written (its reads stay in its transaction).
  const bool alone = n < spread_pages || !spread();
  const std::size_t groups = ranges ? (alone ? 1 : std::min<std::size_t>(n, readers_.helpers() + 1)) : n;
  // Each job reads its own pages into their own slots; nothing else is
  // shared but the environment (thread-safe) and this store's fields,
  // which no one changes meanwhile.
  std::vector<std::uint64_t> job_ns(groups, 0);
  auto job = [&](std::size_t g) {
    const std::size_t a = n * g / groups, b = n * (g + 1) / groups;
    if (a == b) return;
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t at = a;
    scan_records(
        wanted[a].page, wanted[b - 1].page,
        [&](std::uint64_t page) -> std::byte* {
          while (at < b && wanted[at].page < page) ++at;
          return at < b && wanted[at].page == page ? wanted[at].image : nullptr;
        },
        [&](std::uint64_t page, const record_header& h, std::string mapping) {
          if (at == b || wanted[at].page != page) return;
          wanted[at].h = h;
          wanted[at].mapping = std::move(mapping);
          wanted[at].found = true;
        },
        bulk_for(wanted[b - 1].page - wanted[a].page + 1));
    job_ns[g] = ns_since(t0);
  };
  if (alone) {
    for (std::size_t g = 0; g < groups; ++g) job(g);
  } else {
    readers_.run(groups, job);
  }
  std::uint64_t ns = 0;
  for (std::uint64_t j : job_ns) ns += j;
  note_read_time(ns, n);
  for (wanted_page& w : wanted)
    if (w.found) got(w.page, w.h, std::move(w.mapping));
}

bool bdb_store::read_pages(
    std::span<const std::uint64_t> pages, const std::function<std::byte*(std::uint64_t page)>& want,
    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
  std::vector<wanted_page> wanted;
  for (std::uint64_t page : pages)
    if (std::byte* image = want(page)) wanted.push_back({page, image, {}, {}, false});
  read_spread(wanted, false, got);
  return true;
}

void bdb_store::put_page(std::uint64_t page, const record_header& h, const std::byte* image,
                         const std::string* mapping) {
  std::memcpy(scratch_.get(), &h, sizeof h);
  std::memcpy(scratch_.get() + sizeof h, image, page_size_);
  env_->put_record(writing(), page, scratch_.get(), sizeof(record_header) + page_size_);
  if (mapping) env_->put_mapping(writing(), page, *mapping);
}

void bdb_store::patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                           std::span<const byte_range> ranges, const std::string* mapping) {
  written_.fetch_add(1, std::memory_order_relaxed);
  // The header changes at every write (its checksum does). Each piece of
  // the record that the header or a range touches is written once, whole:
  // Berkeley DB logs only the bytes between its first and last change.
  const std::uint32_t len = static_cast<std::uint32_t>(sizeof h) + page_size_;
  std::memcpy(scratch_.get(), &h, sizeof h);
  std::memcpy(scratch_.get() + sizeof h, image, page_size_);
  spans_.clear();
  spans_.push_back({0, static_cast<std::uint32_t>(sizeof h)});
  for (const byte_range& r : ranges) spans_.push_back({static_cast<std::uint32_t>(sizeof h) + r.offset, r.length});
  DbTxn* t = writing();
  if (!to_warm_.empty()) {
    readers_.start_task([this, pages = std::move(to_warm_)](const std::atomic<bool>& stop) {
      env_->warm_records(pages, written_, stop);
    });
    to_warm_.clear();
  }
  env_->put_record_pieces(t, page, scratch_.get(), len, spans_);
  if (mapping) env_->put_mapping(writing(), page, *mapping);
}

void bdb_store::delete_page(std::uint64_t page) { env_->delete_record(writing(), page); }

std::uint64_t bdb_store::counter(const char* key) {
  auto v = env_->get(txn_, key);
  if (!v) throw corrupt_page(0, "database " + dir_ + ": metadata record '" + key + "' is missing");
  return std::stoull(*v);
}

store::page_range bdb_store::allocate_pages(std::uint64_t n) {
  if (!in_txn_) throw store_error("database " + dir_ + ": pages are allocated inside a transaction");
  if (!next_) {
    write_txn();  // the commit writes the counters: the transaction writes
    next_ = page_range{counter("next_page"), counter("next_frame")};
    first_page_ = next_->page;
    // Where the committed pages end: a page file's slots from here on are
    // fresh, and may hold what an uncommitted bulk transaction wrote.
    env_->committed_pages_end(first_page_);
  }
  const page_range r = *next_;
  next_->page += n;
  next_->frame += n;
  return r;
}

std::optional<std::string> bdb_store::get(std::string_view k) {
  if (next_ && k == "next_page") return std::to_string(next_->page);
  if (next_ && k == "next_frame") return std::to_string(next_->frame);
  if (auto d = deferred_.find(k); d != deferred_.end()) return d->second;
  return env_->get(txn_, k);
}
void bdb_store::put(std::string_view k, std::string_view v) {
  if (in_txn_ && !wrote_) {
    deferred_.insert_or_assign(std::string(k), std::string(v));
    return;
  }
  env_->put(writing(), k, v);
}
void bdb_store::del(std::string_view k) {
  if (in_txn_ && !wrote_) {
    deferred_.insert_or_assign(std::string(k), std::nullopt);
    return;
  }
  env_->del(writing(), k);
}
void bdb_store::scan(std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f) {
  auto d = deferred_.lower_bound(prefix);
  if (d != deferred_.end() && d->first.starts_with(prefix)) writing();  // the scan sees them in the store
  env_->scan(txn_, prefix, f);
}

std::uint32_t bdb_store::open_index(const std::string& name, bool unique) {
  // In a transaction of its own: a handle opened in the caller's would be
  // unusable for the rest of the process if that transaction aborted.
  return env_->open_index(nullptr, name, unique);
}
std::function<void()> bdb_store::backup(const std::string& target, backup_progress progress) {
  // The environment becomes transactional here, where the runtime's lock
  // keeps the store's own calls out; the copy then shares it with them.
  readers_.stop_task();
  env_->about_to_write();
  bdb_env* env = env_.get();
  return [env, target, progress] { env->backup(target, progress); };
}

std::vector<std::string> bdb_store::index_names() {
  // Each index is the file "index.NAME.db" (bdb_env::open_index).
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    std::string f = e.path().filename().string();
    if (f.size() > 9 && f.starts_with("index.") && f.ends_with(".db")) names.push_back(f.substr(6, f.size() - 9));
  }
  if (ec) throw store_error("database " + dir_ + ": cannot list its indexes: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

bool bdb_store::index_insert(std::uint32_t index, std::string_view k, std::string_view v) {
  return env_->index_insert(writing(), index, k, v);
}
bool bdb_store::index_erase(std::uint32_t index, std::string_view k, std::string_view v) {
  return env_->index_erase(writing(), index, k, v);
}
void bdb_store::index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                           const std::function<bool(std::string_view, std::string_view)>& f) {
  env_->index_scan(txn_, index, lo, hi, f);
}

std::uint64_t bdb_store::log_position() { return env_->transactional() ? env_->log_position() - log_offset_ : 0; }

}  // namespace qs::detail
