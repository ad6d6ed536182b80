// store/bdb_store.hpp: the embedded store, a Berkeley DB transactional environment
// (qs/bdb/bdb_env.hpp) used by one client in its own process.
//
// The environment lives in a directory of its own (created when absent) and
// is recovered when opened. A lock file keeps a second process from opening
// the same directory: the runtime's buffer pool caches pages across
// transactions, which is only safe for a single client (many clients go
// through qs-pageserver, which uses the same bdb_env).
//
// The store transaction is one Berkeley DB transaction; page and frame
// numbers come from the metadata counters next_page/next_frame, read at the
// transaction's first allocation, counted here, and written once, in that
// transaction, when it commits (so an aborted transaction gives its numbers
// back, and a new page costs no write of its own). A durable commit that
// adds bulk_min_pages pages or more to a page file writes in a bulk
// transaction (bdb_env::txn_kind::bulk): the records it adds go into fresh
// slots in place, unlogged, and the commit syncs the file before its commit
// record (fresh_slots.hpp); into pages.db, every record is logged. The
// transaction the runtime's reads began is then ended (it has written
// nothing) and the bulk one begun at the commit's first write. A
// transaction larger than the pool writes before its commit (its dirty
// pages evicted): there the first write chooses, by the pages the
// transaction has added so far. So that a
// transaction's first writes are its commit's, the metadata records it
// puts or deletes before it writes anything else (a type's record at its
// first allocation, a new root) wait for that write (or the commit); get
// sees them meanwhile, and a scan of their prefix writes them first.
//
// Prefetch (read_range, read_pages) spreads its reads over the calling
// thread and helper threads (reader_threads.hpp: one fewer than the
// machine's cores, at most 3), several reads in flight, when it reads 16
// pages or more, the store transaction has written nothing (before that,
// its reads are plain reads of what is committed), and recent reads waited
// on the disk (spread()); otherwise, and after a write, in the write
// transaction, they are made one after the other, on the calling thread.
//
// Thread-safety: one thread at a time (store.hpp).
#pragma once

#include <qs/bdb/bdb_env.hpp>
#include "store/reader_threads.hpp"
#include "store/store.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qs::detail {

class bdb_store final : public store {
 public:
  // `durable_commits`: the runtime's commits are durable (options::durable);
  // only a durable commit is written in a bulk transaction.
  bdb_store(const std::string& dir, const bdb_options& o, bool durable_commits = true);
  ~bdb_store() override;

  void set_page_size(std::uint32_t page_size) override;
  void begin() override;
  // On a cleanly opened database, a helper opens the transactional
  // environment (bdb_env::prepare_to_write) while the program goes on.
  void writes_coming() override;
  void committing(const std::vector<std::uint64_t>& stored, std::size_t pages) override;
  void commit(bool durable) override;
  void abort() override;
  bool in_transaction() const override { return in_txn_; }

  bool read_page(std::uint64_t page, record_header& h, std::byte* image, std::string& mapping) override;
  bool read_range(
      std::uint64_t first, std::uint64_t last, const std::function<std::byte*(std::uint64_t page)>& want,
      const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) override;
  bool read_pages(
      std::span<const std::uint64_t> pages, const std::function<std::byte*(std::uint64_t page)>& want,
      const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) override;
  bool image_in_file(std::uint64_t page, file_image& where) override;
  void put_page(std::uint64_t page, const record_header& h, const std::byte* image,
                const std::string* mapping) override;
  void patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                  std::span<const byte_range> ranges, const std::string* mapping) override;
  std::uint32_t range_merge_gap() const override { return env_->range_merge_gap(); }
  void delete_page(std::uint64_t page) override;
  page_range allocate_pages(std::uint64_t n) override;

  std::optional<std::string> get(std::string_view key) override;
  void put(std::string_view key, std::string_view value) override;
  void del(std::string_view key) override;
  void scan(std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f) override;

  std::uint32_t open_index(const std::string& name, bool unique) override;
  bool index_insert(std::uint32_t index, std::string_view key, std::string_view value) override;
  bool index_erase(std::uint32_t index, std::string_view key, std::string_view value) override;
  void index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                  const std::function<bool(std::string_view, std::string_view)>& f) override;

  std::vector<std::string> index_names() override;
  std::function<void()> backup(const std::string& target, backup_progress progress) override;
  std::uint64_t log_position() override;
  const std::string& name() const override { return dir_; }

  // Test and benchmark access to the environment.
  DbEnv* env() { return env_->env(); }

 private:
  std::uint64_t counter(const char* key);

  std::string dir_;
  std::uint32_t page_size_;
  const bool durable_commits_;  // see the constructor
  int lock_fd_ = -1;
  std::unique_ptr<bdb_env> env_;
  // The Berkeley DB transaction of the store transaction, once it has one
  // (writes make it, on a database opened clean).
  DbTxn* write_txn();
  // A record's header into h and its image into `image`.
  void split_record(const void* record, record_header& h, std::byte* image) const;
  // read_range, with Berkeley DB's bulk calls of `bulk_bytes`.
  void scan_records(std::uint64_t first, std::uint64_t last, const std::function<std::byte*(std::uint64_t page)>& want,
                    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got,
                    std::uint32_t bulk_bytes);
  // A prefetch's reads, spread over the reader threads when spread() and
  // there are spread_pages or more: `wanted` (pages, ascending when
  // `ranges`) are read as runs of neighbouring pages (ranges: one bulk pass
  // each) or one page at a time, then handed to `got` in their order.
  struct wanted_page {
    std::uint64_t page;
    std::byte* image;
    record_header h{};
    std::string mapping;
    bool found = false;
  };
  void read_spread(std::vector<wanted_page>& wanted, bool ranges,
                   const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got);
  // Whether a prefetch may spread its reads (reader_threads.hpp), and the
  // fewest pages it spreads. Spreading pays while reads wait on the disk;
  // from the OS cache a page's read is a few microseconds of copying, less
  // than a helper's wake-up and the cores it takes from the program, so
  // reads spread only while recent batches took disk_read_ns a page or
  // more (read_ns_: a running average over batches, starting there: a
  // database is opened cold).
  bool spread() const { return readers_.helpers() > 0 && txn_ == nullptr && read_ns_ >= disk_read_ns; }
  static constexpr std::size_t spread_pages = 16;
  // A range of more pages than a prefetch window (schema evolution's list
  // of every stored page, up to a page counter read from the file) is one
  // pass over the records it holds, never a walk over its numbers.
  static constexpr std::uint64_t spread_max_pages = 4096;
  // A bulk buffer for the records of `pages` neighbouring pages (each with
  // its mapping object), at most 256 KiB: Berkeley DB fills the whole
  // buffer, whatever the range, so a larger one only copies records that
  // are not wanted.
  std::uint32_t bulk_for(std::uint64_t pages) const {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(pages * (page_size_ + 1024) + 16 * 1024, 256 * 1024));
  }
  static constexpr std::uint64_t disk_read_ns = 20000;
  std::uint64_t read_ns_ = disk_read_ns;
  // A batch of `pages` read in `ns` of one thread's time.
  void note_read_time(std::uint64_t ns, std::size_t pages) {
    if (pages == 0) return;
    read_ns_ = (7 * read_ns_ + ns / pages) / 8;
  }

  // The counters as the open transaction's allocations left them (commit
  // writes them); empty until it allocates.
  std::optional<page_range> next_;
  std::uint64_t first_page_ = 0;  // next_->page when the transaction first allocated
  // Pages the open transaction has added so far.
  std::uint64_t added_pages() const { return next_ ? next_->page - first_page_ : 0; }
  // One past the last page the transaction may read (next_page, with its
  // own allocations), 0 when the counter cannot be read; read_range takes
  // no record past it (a page file's slots there may hold what an
  // uncommitted transaction wrote in place, or anything a damaged file
  // holds). The committed counter is read once a transaction.
  std::uint64_t page_end();
  std::optional<std::uint64_t> committed_end_;

  DbTxn* txn_ = nullptr;
  std::vector<bdb_env::byte_span> spans_;  // patch_page's
  bool in_txn_ = false;
  std::uint64_t log_offset_ = 0;  // log_position() counts from here
  std::unique_ptr<std::byte[]> scratch_;
  reader_threads readers_;
  // Pages handed to patch_page since committing(): how far the commit's
  // writes are (its warming task skips what they passed).
  std::atomic<std::size_t> written_{0};
  // The stored pages of the commit under way, to warm from its first write.
  std::vector<std::uint64_t> to_warm_;
  // The open transaction's writes reopened the environment for writing:
  // its cache holds none of the B-tree pages they will change.
  bool reopened_ = false;
  bool prepare_asked_ = false;  // writes_coming() handed the helper its task
  // The open transaction has written (writing()); until then txn_, if
  // any, holds only its reads' locks.
  bool wrote_ = false;
  // The commit under way begins its writes in a bulk transaction.
  bool bulk_ = false;
  // Whether a transaction that has added `added` pages writes in a bulk one.
  bool takes_bulk(std::uint64_t added) const;
  // committing() was called: the open transaction's writes are its commit's.
  bool committing_ = false;
  // Metadata puts (a value) and deletions (none) waiting for the open
  // transaction's first write (see above).
  std::map<std::string, std::optional<std::string>, std::less<>> deferred_;
  // The transaction for a write; the first write of a bulk commit ends the
  // transaction that only read and begins a bulk one. The deferred
  // metadata writes go into it first.
  DbTxn* writing();
};

}  // namespace qs::detail
