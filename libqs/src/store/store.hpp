// store/store.hpp: where pages and metadata live.
//
// The runtime talks to its store only through this interface. It has two
// implementations: bdb_store (an embedded Berkeley DB environment) and the
// client of qs-pageserver. The transaction, fault and allocator code do not
// know which one they talk to.
//
// A store holds page records and small metadata records (keyed by strings).
// A page record, keyed by page number, is a record_header, the page image,
// and the page's mapping object (mapping.hpp: where the page's pointers
// pointed when it was written), which the store keeps with the record and
// reads only when the header says there is one (mapping_entries != 0); the
// runtime checks that the two agree. Every read and write made between
// begin() and commit()/abort() belongs to one store transaction: it commits
// atomically or not at all. Calls made with no transaction open are reads, or
// writes that commit on their own.
//
// A store is `shared` when other clients may change it between this client's
// transactions (qs-pageserver): the runtime then revalidates the pages it
// keeps cached (read_page_if_changed) before using them in a new transaction.
// A shared store's transaction reads one consistent snapshot and takes no
// lock: conflicts with other clients are found by commit() (qs::conflict),
// never by a read or a write.
// A shared store may also be `coherent`: it tells the runtime which cached
// pages other clients changed (take_invalidations: the server pushes
// invalidations), and answers read_page_if_changed for every other cached
// page with no round trip. Those it reports by the end of begin() are all
// the changes the transaction's snapshot holds: the runtime then keeps the
// other cached pages usable across transactions without revalidating them,
// unless it asks for its reads to be tracked page by page (track_reads).
// Page and frame numbers come from allocate_pages, which never hands the same
// number out twice, whichever client asks.
//
// Thread-safety: a store is used by one thread at a time (the runtime calls
// it under its database lock).
#pragma once

#include <qs/error.hpp>
#include <qs/format/page_record.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qs::detail {

struct byte_range {
  std::uint32_t offset;
  std::uint32_t length;
};

class store {
 public:
  virtual ~store() = default;

  // The page size of the records; fixed once the database exists.
  virtual void set_page_size(std::uint32_t page_size) = 0;

  virtual void begin() = 0;
  // The open transaction has begun writing the program's pages: a store
  // whose first write needs preparing may start on it now, beside the
  // program, rather than at the commit. A hint: nothing depends on it, and
  // it writes nothing.
  virtual void writes_coming() {}
  // The runtime is about to write back the open transaction's pages for
  // its commit (put_page, patch_page, delete_page, then commit(durable)):
  // `pages` of them, `stored` (pages with a record already) among them in
  // that order. A remote store may ship them as they come, while the rest
  // are made; an embedded one may read ahead what their writes will need,
  // and choose how a commit of that size is best written.
  virtual void committing(const std::vector<std::uint64_t>& stored, std::size_t pages) {
    (void)stored;
    (void)pages;
  }
  // Of committing()'s pages, those the commit adds (no record yet).
  static std::size_t pages_added(const std::vector<std::uint64_t>& stored, std::size_t pages) {
    return pages - std::min(pages, stored.size());
  }
  virtual void commit(bool durable) = 0;
  virtual void abort() = 0;
  virtual bool in_transaction() const = 0;

  // Reads page `page`: its header into h, its image (page-size bytes) into
  // `image`, its mapping object (encoded, mapping.hpp; empty when the page has
  // none) into `mapping`. False if the page has no record.
  virtual bool read_page(std::uint64_t page, record_header& h, std::byte* image, std::string& mapping) = 0;
  // Writes a whole record; `mapping` null keeps the stored mapping object, an empty string removes it.
  virtual void put_page(std::uint64_t page, const record_header& h, const std::byte* image,
                        const std::string* mapping) = 0;
  // Writes the header and the given ranges of the image of an existing record; `mapping` as for put_page.
  // Outside the ranges `image` equals the stored image (a store may write those bytes too).
  virtual void patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                          std::span<const byte_range> ranges, const std::string* mapping) = 0;
  // The run of unchanged bytes between two changed ranges below which a
  // patch costs less with the ranges merged (the run written again) than
  // apart: what one more range costs the store beyond its bytes. A
  // Berkeley DB partial put logs about a hundred bytes of its own, and the
  // old bytes beside the new; a page file's log record, 8 bytes a range.
  virtual std::uint32_t range_merge_gap() const { return 64; }
  // Removes the record and its mapping object.
  virtual void delete_page(std::uint64_t page) = 0;
  // What read_page_if_changed found.
  enum class page_read { absent, unchanged, read };
  // Like read_page, unless the stored record's version is `version`: then
  // nothing is read, h, image and mapping are left as they are (a remote
  // store does not resend the page).
  virtual page_read read_page_if_changed(std::uint64_t page, std::uint64_t version, record_header& h, std::byte* image,
                                         std::string& mapping) {
    (void)version;
    return read_page(page, h, image, mapping) ? page_read::read : page_read::absent;
  }
  // Prefetch: reads, in one pass in page order where the store has one, the
  // records of pages first..last that `want` asks for. want(page) gives
  // where that page's image goes (page-size bytes) or nullptr to skip it;
  // got(page, header, mapping) follows once the record and its mapping object
  // are read. Records that are not whole pages are skipped (a fault on the
  // page reads it again and says what is wrong). Returns false when the store
  // has no such pass (then nothing is read).
  virtual bool read_range(
      std::uint64_t first, std::uint64_t last, const std::function<std::byte*(std::uint64_t page)>& want,
      const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
    (void)first, (void)last, (void)want, (void)got;
    return false;
  }
  // Prefetch of scattered pages: reads the records of `pages` (distinct, in
  // the order given, the most wanted first), as read_range does, with the
  // same want and got. A store may read only the first of them (a remote
  // one, what its server's answer holds); the runtime reads the others when
  // they are touched. Returns false when the store has no such read.
  virtual bool read_pages(
      std::span<const std::uint64_t> pages, const std::function<std::byte*(std::uint64_t page)>& want,
      const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
    (void)pages, (void)want, (void)got;
    return false;
  }
  // Where page's image, as the open transaction reads it, lies in a file
  // the store keeps (its descriptor, the offset, its bytes there, mapped
  // for reading), for the runtime to map into a frame with no copy once it
  // has checked a copy read before, or to diff against as the page's
  // before-image. The bytes stay mapped while the store is open, and
  // change only when a transaction that wrote the page commits. False (the
  // default) when the store has no such file, or the bytes there are not
  // what the transaction reads.
  struct file_image {
    int fd;
    std::uint64_t offset;
    const std::byte* bytes;
  };
  virtual bool image_in_file(std::uint64_t page, file_image& where) {
    (void)page, (void)where;
    return false;
  }
  // The runtime used a page that prefetch read in the open transaction
  // (read_range, read_pages), whose record had `version`: a shared store
  // counts it read by the transaction from now on (it does not before: a
  // page read ahead and never used is not part of what the transaction
  // read).
  virtual void note_read(std::uint64_t page, std::uint64_t version) { (void)page, (void)version; }
  // Whether a commit checks what its transaction read (a page server's
  // serializable transactions): the runtime then watches every page
  // prefetch brings until its first touch, so that note_read names exactly
  // the pages used. Elsewhere only what the transaction wrote counts.
  virtual bool checks_reads() const { return false; }
  // Hands out n new pages on n contiguous frames: returns the first page and
  // the first frame. Inside a transaction; an embedded store takes them back
  // on abort, a shared one may leave a hole.
  struct page_range {
    std::uint64_t page;
    std::uint64_t frame;
  };
  virtual page_range allocate_pages(std::uint64_t n) = 0;
  // How many page numbers allocate_pages hands out next without asking
  // anyone, and so no other client can have: the frames of those pages are
  // this process's to prepare (fresh_frames.hpp). Unbounded for a store no
  // other client shares.
  virtual std::uint64_t pages_in_hand() const { return std::numeric_limits<std::uint64_t>::max(); }
  // Whether other clients share the store (see above).
  virtual bool shared() const { return false; }
  // Cache coherence (see above).
  virtual bool coherent() const { return false; }
  // Whether a transaction that lost its connection (qs::connection_lost,
  // the transaction aborted) may run again: the store follows the master
  // of a replication group to its successor (database::run retries).
  virtual bool follows_master() const { return false; }
  // The version an invalidation gives a removed page: every copy is stale.
  static constexpr std::uint64_t removed_version = ~std::uint64_t{0} - 1;
  struct invalidation {
    std::uint64_t page;
    std::uint64_t version;  // the new version: a cached copy of an older one is stale
    // Received inside a serializable transaction (so of a commit after
    // its snapshot): it refuses the transaction if the transaction writes
    // and could have read the page from the cache.
    bool refuses = true;
  };
  // Appends the invalidations received since the last call. True when
  // every cached page is to be revalidated (the store reconnected, or its
  // server stopped tracking what this client caches). Calls made inside a
  // transaction decide whether it read a page another client changed: the
  // commit that follows reports to the server that it saw those, and no
  // others.
  virtual bool take_invalidations(std::vector<invalidation>& out) {
    (void)out;
    return false;
  }
  // True once after the store connected to a server again (since the last
  // call): that server's history may not be the one the client's cache
  // came from (a group's new master that lacks a commit the failed one had
  // and the client read, a server restored from a copy). The runtime then
  // reads its free space again; its cached pages are revalidated (as
  // take_invalidations says), and a page number the store hands out that
  // the cache still knows is forgotten there (object_allocator.hpp).
  virtual bool take_new_connection() { return false; }
  // Whether this transaction revalidates each cached page at its first
  // touch (read_page_if_changed, whose pages go with the commit's reads), or
  // uses cached pages untracked (the commit is then refused when an
  // invalidation the runtime did not take was on its way).
  virtual void track_reads(bool precise) { (void)precise; }
  // Whether the open transaction has written anything (pages, metadata,
  // index entries) so far.
  virtual bool wrote() const { return true; }
  // Ends the open transaction, refused for a conflict found by the
  // runtime (`why`), as a commit refused by the store would be; throws
  // qs::conflict.
  [[noreturn]] virtual void refuse(const std::string& why) {
    abort();
    throw conflict(why);
  }
  // Whether the open transaction could have read, from the cache, `page`
  // at a version older than `version` (the runtime's answer): asked by a
  // coherent store when invalidations crossed its commit, to send the
  // commit again rather than refuse it.
  using cache_check = std::function<bool(std::uint64_t page, std::uint64_t version)>;
  virtual void on_crossed(cache_check could_have_read) { (void)could_have_read; }
  struct coherence_counters {
    std::uint64_t invalidations = 0;  // pages named by invalidations received
    std::uint64_t avoided = 0;        // revalidations answered with no round trip
    // Reading from a replica: how old the newest commit the last
    // transaction's replica held was when it began (an upper bound of its
    // staleness), in milliseconds.
    std::uint64_t replica_lag_ms = 0;
  };
  virtual coherence_counters coherence() const { return {}; }

  virtual std::optional<std::string> get(std::string_view key) = 0;
  virtual void put(std::string_view key, std::string_view value) = 0;
  virtual void del(std::string_view key) = 0;
  // Calls f for every metadata record whose key starts with `prefix`, in key order.
  virtual void scan(std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f) = 0;

  // Indexes: B-trees from byte-string keys to byte-string values (an
  // encoded persistent reference), updated in the store transaction. A unique
  // index refuses a second value for a key; a non-unique one keeps duplicate
  // keys, ordered by value.
  virtual std::uint32_t open_index(const std::string& name, bool unique) = 0;
  // False when a unique index already has the key.
  virtual bool index_insert(std::uint32_t index, std::string_view key, std::string_view value) = 0;
  // Removes one entry of `key` whose value begins with `value_prefix`;
  // false when there is none.
  virtual bool index_erase(std::uint32_t index, std::string_view key, std::string_view value_prefix) = 0;
  // Calls f(key, value) for the entries with lo <= key <= hi in key order
  // until f returns false.
  virtual void index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                          const std::function<bool(std::string_view, std::string_view)>& f) = 0;

  // The names of the store's indexes (schema evolution rewrites their
  // entries); a store that cannot list them returns none.
  virtual std::vector<std::string> index_names() { return {}; }
  // Hot backup: a job that copies the database as committed into the new
  // directory `target` (bdb_env::backup), which then opens as an embedded
  // database holding the state of one commit. The job may run on any
  // thread, without the runtime's lock, while transactions go on: it uses
  // nothing of the store's own transaction. Throws qs::invalid_argument
  // when the store cannot be backed up. `progress` (when set) is told the
  // bytes copied, as bdb_env::backup tells them (a page server's copy
  // tells none).
  using backup_progress = std::function<void(std::uint64_t done, std::uint64_t total)>;
  virtual std::function<void()> backup(const std::string& target, backup_progress progress = {}) {
    (void)target, (void)progress;
    throw invalid_argument("database " + name() + ": this store cannot be backed up");
  }
  // Position of the end of the store's log, in bytes: the difference between
  // two calls is what was logged in between.
  virtual std::uint64_t log_position() = 0;
  virtual const std::string& name() const = 0;
};

}  // namespace qs::detail
