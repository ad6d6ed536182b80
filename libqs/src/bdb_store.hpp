// bdb_store.hpp: the embedded store, a Berkeley DB transactional environment.
//
// The environment lives in a directory of its own (created when absent) and
// is recovered when opened. Page records are in the B-tree `pages.db`, keyed
// by big-endian page number; metadata in the B-tree `meta.db`. A lock file
// keeps a second process from opening the same directory: the runtime's
// buffer pool caches pages across transactions, which is only safe for a
// single client (many clients go through qs-pageserver).
//
// Partial page updates are Berkeley DB partial puts; Berkeley DB logs only
// the bytes between the first and last changed byte of each put, so the log
// grows by the bytes a transaction changed, not by the page size, as long as
// a record fits on a B-tree page (page records up to 8 KiB + header do; see
// README for larger pages).
//
// Each index is a B-tree of its own, `index.<name>.db`, with sorted
// duplicates unless it is unique.
#pragma once

#include "store.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

class DbEnv;
class Db;
class DbTxn;

namespace qs::detail {

struct bdb_options {
  std::uint32_t page_size;
  std::uint64_t cache_bytes;
};

class bdb_store final : public store {
 public:
  bdb_store(const std::string& dir, const bdb_options& o);
  ~bdb_store() override;

  void set_page_size(std::uint32_t page_size) override;
  void begin() override;
  void commit(bool durable) override;
  void abort() override;
  bool in_transaction() const override { return txn_ != nullptr; }

  bool read_page(std::uint64_t page, record_header& h, std::byte* image) override;
  void put_page(std::uint64_t page, const record_header& h, const std::byte* image) override;
  void patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                  std::span<const byte_range> ranges) override;
  void delete_page(std::uint64_t page) override;
  void lock_for_write(std::uint64_t) override {}

  std::optional<std::string> get(std::string_view key) override;
  void put(std::string_view key, std::string_view value) override;
  void del(std::string_view key) override;
  void scan(std::string_view prefix,
            const std::function<void(std::string_view, std::string_view)>& f) override;

  std::uint32_t open_index(const std::string& name, bool unique) override;
  bool index_insert(std::uint32_t index, std::string_view key, std::string_view value) override;
  bool index_erase(std::uint32_t index, std::string_view key, std::string_view value) override;
  void index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                  const std::function<bool(std::string_view, std::string_view)>& f) override;

  std::uint64_t log_position() override;
  const std::string& name() const override { return dir_; }

  // Test and benchmark access: reads a page record without the runtime.
  DbEnv* env() { return env_.get(); }

 private:
  void check(int rc, const char* what) const;
  void check_page(int rc, const char* what, std::uint64_t page) const;

  std::string dir_;
  std::uint32_t page_size_;
  int lock_fd_ = -1;
  std::unique_ptr<DbEnv> env_;
  std::unique_ptr<Db> pages_;
  std::unique_ptr<Db> meta_;
  struct index_db {
    std::string name;
    bool unique;
    std::unique_ptr<Db> db;
  };
  std::vector<index_db> indexes_;
  DbTxn* txn_ = nullptr;
  std::unique_ptr<std::byte[]> scratch_;
  std::uint32_t log_file_max_ = 0;
};

}  // namespace qs::detail
