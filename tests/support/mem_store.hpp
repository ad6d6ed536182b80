// mem_store.hpp: a store (libqs/src/store/store.hpp) kept in memory, for fast unit
// tests of runtime components.
//
// It implements the whole store interface with the embedded store's
// (bdb_store's) semantics: page records with their mapping objects, metadata
// records and prefix scans, unique and non-unique indexes, transactions whose
// abort restores everything they changed, page and frame numbers from the
// metadata counters next_page/next_frame, and a log position that counts the
// bytes written. Nothing outlives the object. tests/unit checks it against
// bdb_store operation by operation.
//
// Beyond the interface, a test can look at what the store holds (page_count,
// has_page, stored_mapping) and make the store claim to be
// shared, so that the runtime revalidates its cached pages.
//
// Invariants:
//  * a stored image has the page size the store had when it was written; a
//    read at another page size throws qs::corrupt_page, as in bdb_store.
//  * a mapping object is stored only non-empty; a page without a record has
//    none.
//  * outside a transaction every write commits at once; inside one, abort()
//    puts back the pages, metadata and index entries as they were at begin()
//    (an index opened in an aborted transaction keeps its number, empty).
//  * log_position() only grows.
//
// Errors are qs errors naming the store and the page, index or key.
//
// Thread-safety: none; one thread at a time, like every store.
#pragma once

#include "store/store.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qs_test {

struct mem_store_options {
  std::string name = "mem";
  std::uint32_t page_size = 8192;
  // What shared() answers: true makes the runtime revalidate cached pages
  // (read_page_if_changed) at their first use in each transaction.
  bool shared = false;
};

class mem_store : public qs::detail::store {
 public:
  explicit mem_store(mem_store_options o = {});

  void set_page_size(std::uint32_t page_size) override { page_size_ = page_size; }
  void begin() override;
  void commit(bool durable) override;
  void abort() override;
  bool in_transaction() const override { return before_.has_value(); }

  bool read_page(std::uint64_t page, qs::detail::record_header& h, std::byte* image, std::string& mapping) override;
  page_read read_page_if_changed(std::uint64_t page, std::uint64_t version, qs::detail::record_header& h,
                                 std::byte* image, std::string& mapping) override;
  void put_page(std::uint64_t page, const qs::detail::record_header& h, const std::byte* image,
                const std::string* mapping) override;
  void patch_page(std::uint64_t page, const qs::detail::record_header& h, const std::byte* image,
                  std::span<const qs::detail::byte_range> ranges, const std::string* mapping) override;
  void delete_page(std::uint64_t page) override;
  page_range allocate_pages(std::uint64_t n) override;
  bool shared() const override { return shared_; }

  std::optional<std::string> get(std::string_view key) override;
  void put(std::string_view key, std::string_view value) override;
  void del(std::string_view key) override;
  void scan(std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f) override;

  std::uint32_t open_index(const std::string& name, bool unique) override;
  bool index_insert(std::uint32_t index, std::string_view key, std::string_view value) override;
  bool index_erase(std::uint32_t index, std::string_view key, std::string_view value_prefix) override;
  void index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                  const std::function<bool(std::string_view, std::string_view)>& f) override;

  // Bytes written so far: record headers, image bytes (whole or patched),
  // mapping objects, metadata and index keys and values.
  std::uint64_t log_position() override { return logged_; }
  const std::string& name() const override { return name_; }

  // What the store holds (committed or in the open transaction).
  std::size_t page_count() const { return now_.pages.size(); }
  bool has_page(std::uint64_t page) const { return now_.pages.count(page) != 0; }
  std::optional<std::string> stored_mapping(std::uint64_t page) const;

 private:
  struct record {
    qs::detail::record_header header;
    std::vector<std::byte> image;
    std::string mapping;  // empty: none
  };
  // (key, value) pairs in key order, then value order; looked up by views.
  using entry_view = std::pair<std::string_view, std::string_view>;
  struct entry_order {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return entry_view(a.first, a.second) < entry_view(b.first, b.second);
    }
  };
  using index_entries = std::set<std::pair<std::string, std::string>, entry_order>;
  // Everything a transaction can change.
  struct contents {
    std::map<std::uint64_t, record> pages;
    std::map<std::string, std::string, std::less<>> meta;
    std::map<std::uint32_t, index_entries> indexes;
  };
  struct index_def {
    std::string name;
    bool unique;
  };

  void set_mapping(record& r, const std::string* mapping);
  const index_def& index_at(std::uint32_t index) const;
  std::string where(std::uint64_t page) const;

  std::string name_;
  std::uint32_t page_size_;
  bool shared_;
  contents now_;
  std::optional<contents> before_;  // set while a transaction is open: what abort restores
  std::vector<index_def> index_defs_;
  std::uint64_t logged_ = 0;
};

}  // namespace qs_test
