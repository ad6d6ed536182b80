#include "bdb_store.hpp"

#include <qs/error.hpp>

#include <db_cxx.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace qs::detail {
namespace {

struct page_key {
  unsigned char bytes[8];
  explicit page_key(std::uint64_t page) {
    for (int i = 7; i >= 0; --i, page >>= 8) bytes[i] = static_cast<unsigned char>(page);
  }
};

}  // namespace

void bdb_store::check(int rc, const char* what) const {
  if (rc == 0) return;
  std::string msg = "database " + dir_ + ": " + what + ": " + db_strerror(rc);
  if (rc == DB_LOCK_DEADLOCK) throw deadlock(msg);
  throw store_error(msg);
}

void bdb_store::check_page(int rc, const char* what, std::uint64_t page) const {
  if (rc == 0) return;
  check(rc, (std::string(what) + " page " + std::to_string(page)).c_str());
}

bdb_store::bdb_store(const std::string& dir, const bdb_options& o)
    : dir_(dir), page_size_(o.page_size) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw store_error("database " + dir + ": cannot create the directory: " + ec.message());
  std::string lock_path = dir + "/qs.lock";
  lock_fd_ = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) throw store_error("database " + dir + ": cannot open " + lock_path + ": " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    throw database_in_use("database " + dir +
                          " is open in another process; an embedded database has one client at a "
                          "time (use qs-pageserver to share it)");
  }
  try {
    env_ = std::make_unique<DbEnv>(DB_CXX_NO_EXCEPTIONS);
    env_->set_errpfx("qs");
    check(env_->set_cachesize(static_cast<std::uint32_t>(o.cache_bytes >> 30),
                              static_cast<std::uint32_t>(o.cache_bytes & ((1u << 30) - 1)), 1),
          "set_cachesize");
    check(env_->set_lk_max_locks(200000), "set_lk_max_locks");
    check(env_->set_lk_max_objects(200000), "set_lk_max_objects");
    check(env_->set_lk_max_lockers(20000), "set_lk_max_lockers");
    check(env_->set_lg_bsize(8u << 20), "set_lg_bsize");
    check(env_->set_lg_max(64u << 20), "set_lg_max");
    check(env_->set_lk_detect(DB_LOCK_DEFAULT), "set_lk_detect");
    check(env_->open(dir.c_str(),
                     DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL |
                         DB_RECOVER | DB_THREAD | DB_PRIVATE,
                     0600),
          "open environment");
    check(env_->log_set_config(DB_LOG_AUTO_REMOVE, 1), "log_set_config");
    check(env_->get_lg_max(&log_file_max_), "get_lg_max");

    pages_ = std::make_unique<Db>(env_.get(), DB_CXX_NO_EXCEPTIONS);
    // 64 KiB B-tree pages keep records of up to 16 KiB on-page, where a
    // partial put is logged as the changed bytes only.
    check(pages_->set_pagesize(65536), "set_pagesize");
    check(pages_->open(nullptr, "pages.db", nullptr, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT | DB_THREAD, 0600),
          "open pages.db");
    meta_ = std::make_unique<Db>(env_.get(), DB_CXX_NO_EXCEPTIONS);
    check(meta_->open(nullptr, "meta.db", nullptr, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT | DB_THREAD, 0600),
          "open meta.db");
  } catch (...) {
    if (meta_) meta_->close(0);
    if (pages_) pages_->close(0);
    if (env_) env_->close(0);
    ::close(lock_fd_);
    throw;
  }
  scratch_ = std::make_unique<std::byte[]>(sizeof(record_header) + page_size_);
}

bdb_store::~bdb_store() {
  if (txn_) txn_->abort();
  for (auto& i : indexes_) i.db->close(0);
  meta_->close(0);
  pages_->close(0);
  env_->txn_checkpoint(0, 0, 0);
  env_->close(0);
  ::close(lock_fd_);
}

void bdb_store::set_page_size(std::uint32_t page_size) {
  page_size_ = page_size;
  scratch_ = std::make_unique<std::byte[]>(sizeof(record_header) + page_size_);
}

void bdb_store::begin() {
  if (txn_) throw store_error("database " + dir_ + ": store transaction already open");
  check(env_->txn_begin(nullptr, &txn_, 0), "begin transaction");
}

void bdb_store::commit(bool durable) {
  DbTxn* t = txn_;
  txn_ = nullptr;
  check(t->commit(durable ? DB_TXN_SYNC : DB_TXN_WRITE_NOSYNC), "commit");
  // Bounds recovery time and lets old log files be removed.
  env_->txn_checkpoint(16 * 1024, 0, 0);
}

void bdb_store::abort() {
  if (!txn_) return;
  DbTxn* t = txn_;
  txn_ = nullptr;
  check(t->abort(), "abort");
}

bool bdb_store::read_page(std::uint64_t page, record_header& h, std::byte* image) {
  page_key pk(page);
  Dbt key(pk.bytes, sizeof pk.bytes);
  Dbt data;
  data.set_data(scratch_.get());
  data.set_ulen(sizeof(record_header) + page_size_);
  data.set_flags(DB_DBT_USERMEM);
  int rc = pages_->get(txn_, &key, &data, 0);
  if (rc == DB_NOTFOUND) return false;
  check_page(rc, "read", page);
  if (data.get_size() != sizeof(record_header) + page_size_)
    throw corrupt_page(page, "database " + dir_ + ": page " + std::to_string(page) + " record has " +
                                 std::to_string(data.get_size()) + " bytes, expected " +
                                 std::to_string(sizeof(record_header) + page_size_));
  std::memcpy(&h, scratch_.get(), sizeof h);
  std::memcpy(image, scratch_.get() + sizeof h, page_size_);
  return true;
}

void bdb_store::put_page(std::uint64_t page, const record_header& h, const std::byte* image) {
  std::memcpy(scratch_.get(), &h, sizeof h);
  std::memcpy(scratch_.get() + sizeof h, image, page_size_);
  page_key pk(page);
  Dbt key(pk.bytes, sizeof pk.bytes);
  Dbt data(scratch_.get(), sizeof(record_header) + page_size_);
  check_page(pages_->put(txn_, &key, &data, 0), "write", page);
}

void bdb_store::patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                           std::span<const byte_range> ranges) {
  page_key pk(page);
  Dbt key(pk.bytes, sizeof pk.bytes);
  auto put_part = [&](std::uint32_t off, const void* p, std::uint32_t len) {
    Dbt data(const_cast<void*>(p), len);
    data.set_flags(DB_DBT_PARTIAL);
    data.set_doff(off);
    data.set_dlen(len);
    check_page(pages_->put(txn_, &key, &data, 0), "write", page);
  };
  // The header changes at every write (its checksum does). When the first
  // range starts near the image's start, one put covers both.
  std::size_t first = 0;
  if (!ranges.empty() && ranges[0].offset < 64) {
    std::uint32_t len = static_cast<std::uint32_t>(sizeof h) + ranges[0].offset + ranges[0].length;
    std::memcpy(scratch_.get(), &h, sizeof h);
    std::memcpy(scratch_.get() + sizeof h, image, ranges[0].offset + ranges[0].length);
    put_part(0, scratch_.get(), len);
    first = 1;
  } else {
    put_part(0, &h, sizeof h);
  }
  for (std::size_t i = first; i < ranges.size(); ++i)
    put_part(static_cast<std::uint32_t>(sizeof h) + ranges[i].offset, image + ranges[i].offset, ranges[i].length);
}

void bdb_store::delete_page(std::uint64_t page) {
  page_key pk(page);
  Dbt key(pk.bytes, sizeof pk.bytes);
  int rc = pages_->del(txn_, &key, 0);
  if (rc == DB_NOTFOUND) return;
  check_page(rc, "delete", page);
}

std::optional<std::string> bdb_store::get(std::string_view k) {
  Dbt key(const_cast<char*>(k.data()), static_cast<std::uint32_t>(k.size()));
  Dbt data;
  data.set_flags(DB_DBT_MALLOC);
  int rc = meta_->get(txn_, &key, &data, 0);
  if (rc == DB_NOTFOUND) return std::nullopt;
  check(rc, "read metadata");
  std::string v(static_cast<const char*>(data.get_data()), data.get_size());
  std::free(data.get_data());
  return v;
}

void bdb_store::put(std::string_view k, std::string_view v) {
  Dbt key(const_cast<char*>(k.data()), static_cast<std::uint32_t>(k.size()));
  Dbt data(const_cast<char*>(v.data()), static_cast<std::uint32_t>(v.size()));
  check(meta_->put(txn_, &key, &data, txn_ ? 0 : DB_AUTO_COMMIT), "write metadata");
}

void bdb_store::del(std::string_view k) {
  Dbt key(const_cast<char*>(k.data()), static_cast<std::uint32_t>(k.size()));
  int rc = meta_->del(txn_, &key, txn_ ? 0 : DB_AUTO_COMMIT);
  if (rc == DB_NOTFOUND) return;
  check(rc, "delete metadata");
}

void bdb_store::scan(std::string_view prefix,
                     const std::function<void(std::string_view, std::string_view)>& f) {
  Dbc* cursor = nullptr;
  check(meta_->cursor(txn_, &cursor, 0), "open cursor");
  std::string start(prefix);
  Dbt key, data;
  key.set_flags(DB_DBT_REALLOC);
  data.set_flags(DB_DBT_REALLOC);
  key.set_data(std::malloc(start.size() ? start.size() : 1));
  std::memcpy(key.get_data(), start.data(), start.size());
  key.set_size(static_cast<std::uint32_t>(start.size()));
  int rc = cursor->get(&key, &data, DB_SET_RANGE);
  std::vector<std::pair<std::string, std::string>> found;
  while (rc == 0) {
    std::string_view k(static_cast<const char*>(key.get_data()), key.get_size());
    if (k.substr(0, prefix.size()) != prefix) break;
    found.emplace_back(std::string(k), std::string(static_cast<const char*>(data.get_data()), data.get_size()));
    rc = cursor->get(&key, &data, DB_NEXT);
  }
  std::free(key.get_data());
  std::free(data.get_data());
  cursor->close();
  if (rc != 0 && rc != DB_NOTFOUND) check(rc, "scan metadata");
  for (auto& [k, v] : found) f(k, v);
}

std::uint32_t bdb_store::open_index(const std::string& name, bool unique) {
  for (std::uint32_t i = 0; i < indexes_.size(); ++i)
    if (indexes_[i].name == name) {
      if (indexes_[i].unique != unique)
        throw invalid_argument("database " + dir_ + ": index " + name + " was opened " +
                               (indexes_[i].unique ? "unique" : "non-unique") + " before");
      return i;
    }
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      throw invalid_argument("database " + dir_ + ": index name '" + name + "' may hold letters, digits, _ and - only");
  auto db = std::make_unique<Db>(env_.get(), DB_CXX_NO_EXCEPTIONS);
  if (!unique) check(db->set_flags(DB_DUP | DB_DUPSORT), "set_flags");
  std::string file = "index." + name + ".db";
  // An index created inside a transaction exists only if it commits; opened
  // outside, it is created in a transaction of its own.
  int rc = db->open(txn_, file.c_str(), nullptr, DB_BTREE, DB_CREATE | DB_THREAD | (txn_ ? 0 : DB_AUTO_COMMIT), 0600);
  if (rc == EINVAL) {
    db->close(0);
    throw invalid_argument("database " + dir_ + ": index " + name + " exists " + (unique ? "with" : "without") +
                           " duplicate keys");
  }
  check(rc, ("open index " + name).c_str());
  indexes_.push_back({name, unique, std::move(db)});
  return static_cast<std::uint32_t>(indexes_.size() - 1);
}

bool bdb_store::index_insert(std::uint32_t index, std::string_view k, std::string_view v) {
  auto& ix = indexes_.at(index);
  Dbt key(const_cast<char*>(k.data()), static_cast<std::uint32_t>(k.size()));
  Dbt data(const_cast<char*>(v.data()), static_cast<std::uint32_t>(v.size()));
  int rc = ix.db->put(txn_, &key, &data, ix.unique ? DB_NOOVERWRITE : DB_NODUPDATA);
  if (rc == DB_KEYEXIST) return !ix.unique;  // a non-unique index already had this exact entry
  check(rc, ("insert into index " + ix.name).c_str());
  return true;
}

bool bdb_store::index_erase(std::uint32_t index, std::string_view k, std::string_view v) {
  auto& ix = indexes_.at(index);
  Dbc* cursor = nullptr;
  check(ix.db->cursor(txn_, &cursor, 0), "open cursor");
  Dbt key(const_cast<char*>(k.data()), static_cast<std::uint32_t>(k.size()));
  Dbt data(const_cast<char*>(v.data()), static_cast<std::uint32_t>(v.size()));
  int rc = cursor->get(&key, &data, DB_GET_BOTH);
  if (rc == 0) rc = cursor->del(0);
  cursor->close();
  if (rc == DB_NOTFOUND) return false;
  check(rc, ("erase from index " + ix.name).c_str());
  return true;
}

void bdb_store::index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                           const std::function<bool(std::string_view, std::string_view)>& f) {
  auto& ix = indexes_.at(index);
  Dbc* cursor = nullptr;
  check(ix.db->cursor(txn_, &cursor, 0), "open cursor");
  Dbt key, data;
  key.set_flags(DB_DBT_REALLOC);
  data.set_flags(DB_DBT_REALLOC);
  key.set_data(std::malloc(lo.size() ? lo.size() : 1));
  std::memcpy(key.get_data(), lo.data(), lo.size());
  key.set_size(static_cast<std::uint32_t>(lo.size()));
  std::vector<std::pair<std::string, std::string>> found;
  int rc = cursor->get(&key, &data, DB_SET_RANGE);
  // Entries are collected first, then handed out: f may use the store.
  while (rc == 0) {
    std::string_view k(static_cast<const char*>(key.get_data()), key.get_size());
    if (k > hi) break;
    found.emplace_back(std::string(k), std::string(static_cast<const char*>(data.get_data()), data.get_size()));
    if (found.size() >= 4096) {
      bool more = true;
      for (auto& [a, b] : found)
        if (!(more = f(a, b))) break;
      found.clear();
      if (!more) {
        rc = DB_NOTFOUND;
        break;
      }
    }
    rc = cursor->get(&key, &data, DB_NEXT);
  }
  std::free(key.get_data());
  std::free(data.get_data());
  cursor->close();
  if (rc != 0 && rc != DB_NOTFOUND) check(rc, ("scan index " + ix.name).c_str());
  for (auto& [a, b] : found)
    if (!f(a, b)) break;
}

std::uint64_t bdb_store::log_position() {
  DB_LOG_STAT* st = nullptr;
  check(env_->log_stat(&st, 0), "log_stat");
  std::uint64_t pos = std::uint64_t{st->st_cur_file} * log_file_max_ + st->st_cur_offset;
  std::free(st);
  return pos;
}

}  // namespace qs::detail
