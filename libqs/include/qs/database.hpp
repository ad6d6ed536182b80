// qs/database.hpp: a persistent heap opened from a store.
//
// A database is a handle on a store (an embedded Berkeley DB environment in a
// directory) plus the machinery that makes its pages appear in memory: a
// reservation of virtual address space cut into frames, a SIGSEGV handler that
// faults pages in on first touch, and a bounded buffer pool. Persistent objects
// are ordinary C++ objects at addresses inside the reservation.
//
// Invariants:
//  * One process at a time opens an embedded database (a lock file enforces
//    it); many clients share one through qs-pageserver.
//  * One transaction at a time per database handle; persistent data is only
//    touched inside it (see qs/transaction.hpp).
//  * The page size is fixed when the database is created.
//  * A database handle must outlive every transaction on it, and every
//    pointer to its objects is invalid once it is closed.
#pragma once

#include <qs/error.hpp>
#include <qs/evolve.hpp>
#include <qs/schema.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace qs {

class transaction;
class database;

namespace detail {
class database_impl;
// The runtime behind a handle: for qs's own sources, not part of the API.
database_impl& impl_of(database& db) noexcept;
}  // namespace detail

// What happens to a page whose pointers were rewritten because the pages
// they point to could not keep their frames in this process.
enum class relocation {
  continual,  // rewritten in memory each time the page comes in
  one_time,   // also written back at commit, so that later runs need nothing
};

// Which pages prefetch reads ahead when a fault reads a page
// (options::prefetch_pages says how many).
enum class prefetch_order {
  // Its neighbours in page order: the block of prefetch_pages pages that
  // holds it, aligned on that size (objects allocated together share
  // neighbouring pages).
  page_order,
  // The pages its pointers lead to, from the object the program touched
  // on, in one store call (one round trip to a page server). Hardware
  // mode: software mode's pages hold references, and read nothing here.
  pointers,
  // Pointers first, then page order with the room left.
  both,
  // both through a page server, where a round trip costs more than a
  // guess; page_order embedded, where a guess along pointers costs a read
  // as a fault does (a short transaction, or a B-tree lookup, pays for
  // guesses its few faults cannot teach it to stop).
  automatic,
};

// What a page server's commit checks, besides atomicity (the embedded store
// has one client at a time: there, every transaction is serializable).
// Either way a transaction reads one consistent snapshot of the database
// (as committed at its first read), never waits for another to read, and a
// conflict is found only by its commit (qs::conflict; db.run retries it). A
// transaction that wrote nothing always commits.
enum class isolation {
  // The pages and records the transaction read or wrote must be as its
  // snapshot had them: its effect is that of running alone at its commit.
  serializable,
  // Only those it wrote: faster to commit and refused less often, but two
  // transactions that each read what the other writes may both commit
  // (write skew: each keeps x + y >= 0 alone, and together they break it).
  snapshot,
};

struct options {
  // Page size for a new database: a power of two from 4 KiB to 64 KiB. An
  // existing database keeps the page size it was created with.
  std::uint32_t page_size = 8192;
  // Client buffer pool, in pages, or in bytes (pool_bytes; give one of the
  // two). 0 and 0: a quarter of the machine's physical memory, at most half
  // of reservation_bytes. database::pool_pages() says what was chosen.
  // Memory is used only as pages come in and is given back as they leave:
  // a pool of 8 GiB holding 100 pages uses about 100 pages of memory.
  // (Where the kernel does not offer userfaultfd, or QS_FRAMES=protection,
  // frames are protected with mprotect and each
  // resident page may cost two kernel memory mappings: the pool is then
  // also bounded by vm.max_map_count, 30,717 pages under Linux's default.)
  std::uint32_t pool_pages = 0;
  std::uint64_t pool_bytes = 0;
  // Prefetch: when a fault reads a page, up to this many pages that are
  // not resident are read ahead (prefetch_order says which) and mapped
  // readable, using free pool slots only: a guess never evicts a page. 0
  // turns it off. Through a page server, the pages come in one round trip.
  // The environment variables QS_PREFETCH (a number of pages) and
  // QS_PREFETCH_ORDER (page_order, pointers, both or automatic), when set,
  // override them (the tests run with each).
  std::uint32_t prefetch_pages = 32;
  prefetch_order prefetch_along = prefetch_order::automatic;
  // Durable commits (the log is flushed to disk before commit returns). A
  // non-durable commit is atomic but may be lost in an operating-system crash.
  bool durable = true;
  // Size of the address reservation for this process's frames of the
  // database. It may be smaller than the database: when its frames run out,
  // the next transaction starts with a fresh assignment (persistent
  // addresses held in transient variables are then valid only inside the
  // transaction that read them).
  std::uint64_t reservation_bytes = std::uint64_t{64} << 30;
  relocation relocation_policy = relocation::continual;
  // Test harness: this percentage of pages is moved to other frames when it
  // comes in, even when its own frames are free (0 to 100).
  unsigned force_relocation_percent = 0;
  // Berkeley DB cache size of the embedded store, in bytes. 0: 1/64 of the
  // machine's physical memory, from 16 to 64 MiB (Berkeley DB sets its whole
  // cache up at open, about 45 us per MiB; the buffer pool holds the pages
  // in use). A database opened after a clean close reads through a cache of
  // at most 16 MiB until its first write.
  std::uint64_t store_cache_bytes = 0;
  // Embedded store: until its first write, read the database's files
  // mapped (one copy from the OS page cache, no Berkeley DB cache between)
  // rather than through Berkeley DB's cache. A cold read of a mapped file
  // takes the kernel's read-ahead around it (the device's read_ahead_kb):
  // where that is megabytes, small scattered cold reads cost more mapped;
  // false reads through the cache. A file of 4 GiB or more is read through
  // the cache either way (Berkeley DB maps only smaller files correctly).
  bool map_store_files = true;
  // Embedded store, for a database created by this open: keep page records
  // in a file of fixed slots (pages.qs) that a commit writes in place, its
  // changes logged in Berkeley DB's log as application records (true, the
  // default), or in Berkeley DB's B-tree, pages.db (false). A database keeps
  // the layout it was created with. The page file is faster at every phase
  // (no B-tree lookup or split, pages mapped from the file into their
  // frames), but a database laid out with one is served by neither
  // qs-pageserver nor a replication group (opening it there throws
  // qs::invalid_argument, saying how to move it: qs-inspect's dump, then
  // its load with QS_PAGE_FILE=0). A commit with `durable` false leaves its
  // page writes out of the file (reads lay them over it) until the log is
  // flushed: by a checkpoint, the close, or once 32 MiB of them wait (the
  // file must never hold what the log lost). The environment variable
  // QS_PAGE_FILE=1 (or 0) sets it for every open.
  bool page_file = true;
  // Hardware mode, a database laid out with a page file: a page that comes
  // in with neighbours and needs no pointer or vptr rewritten is shown by
  // mapping its image in pages.qs into its frame, one mapping a run, with
  // no copy (statistics::pages_mapped), whether the transaction goes on to
  // write it or not (the kernel copies a mapped page's 4 KiB halves as
  // they are first written). false copies every page into its frame. The environment variable
  // QS_MAP_PAGE_FILE=0 (or 1) sets it for every open.
  bool map_page_file = true;
  // Hardware mode: a page a read fault brings in comes writable (and so
  // does a watched prefetched page at its first touch: every prefetched
  // page of a serializable transaction through qs-pageserver), its
  // before-image the image just read, where the pages read in by that
  // instruction have mostly been written since (an update traversal), so
  // that the write that follows takes no second fault
  // (statistics::writable_on_arrival). A page made writable and left
  // unchanged costs its commit a comparison and writes nothing. false: a
  // page comes read-only and a write to it faults. The environment variable
  // QS_WRITABLE_ON_ARRIVAL=0 (or 1) sets it for every open.
  bool writable_on_arrival = true;
  // The shared secret of a qs-pageserver reached over TCP (qs://host:port).
  // When empty, the environment variable QS_SECRET gives it.
  std::string server_secret;
  // qs-pageserver: when the connection drops during a commit, how long the
  // commit goes on trying to reach the server again to learn whether the
  // transaction committed, in milliseconds; after that it throws
  // qs::commit_unknown.
  std::uint32_t reconnect_budget_ms = 30000;
  // qs-pageserver: how long, in microseconds, a wait for the server's
  // answer polls for it before the thread sleeps, yielding the processor
  // between polls; 0 never polls. Waking a sleeping thread costs tens of
  // microseconds on a virtual machine, more than the server takes to send
  // a page. Adaptive: while answers keep taking longer, waits sleep at
  // once. At most 100000. The environment variable QS_SERVER_WAIT_SPIN_US
  // sets it for every open.
  std::uint32_t server_wait_spin_us = 500;
  // qs-pageserver replication group (qs://A,B,C): read from whichever site
  // answers, a replica as well as the master. Every transaction of the
  // handle only reads: one that writes throws qs::invalid_argument at its
  // commit. A replica's data may be behind the master's
  // (statistics::replica_lag_ms says how far at most); cached pages are
  // revalidated at each transaction's first touch. On a replica each
  // transaction reads one committed state: the replica's apply of the
  // master's log waits until it ends (at most the server's
  // --replica-read-max, 2 s; a transaction that reads longer fails with
  // qs::store_error naming the option). Its faults raise no conflict.
  bool read_replica = false;
  // qs-pageserver: what a commit checks (see qs::isolation). Under
  // snapshot, a prefetched page is shown as it comes, as embedded; under
  // serializable, it stays hidden until its first touch (a fault), which
  // makes it part of what the transaction read. The environment variable
  // QS_ISOLATION=serializable (or snapshot) sets it for every open.
  isolation isolation_level = isolation::serializable;
  // Schema evolution (qs/evolve.hpp): when the database stores a type whose
  // layout differs from the program's, convert its objects when the
  // database opens instead of refusing it with qs::schema_mismatch. The
  // conversion is one transaction over the whole database (its log holds
  // every page once; its pages pass through the buffer pool) and reports
  // on standard error what it did.
  bool evolve = false;
  // Conversions written by the program, by type name as the member list
  // spells it ("Part", "geo::Shape"): for changes qs cannot make by name.
  std::map<std::string, converter> converters;
};

// Counters, cumulative since the database was opened.
struct statistics {
  // Hardware mode: faults on non-resident pages. Software mode: residency
  // misses (dereferences that fetched a page).
  std::uint64_t read_faults = 0;
  // Hardware mode: first writes to a page in a transaction. Software mode:
  // first qs::write of an object in a transaction.
  std::uint64_t write_faults = 0;
  // Pages made writable whose before-image is their image in the store's
  // file, with no copy (options::page_file, hardware mode: pages stored
  // before the transaction whose pointers and vptrs needed no rewriting).
  std::uint64_t before_images_in_file = 0;
  // Of those, pages made writable with a neighbour that took a write
  // fault (hardware mode, the same pages), so that writes to them take none.
  std::uint64_t writable_ahead = 0;
  // Pages a read fault brought in, or a first touch of a watched
  // prefetched page showed, writable at once, because the program had been
  // writing most pages it read in (hardware mode), so that its write takes
  // no second fault. Not counted in write_faults.
  std::uint64_t writable_on_arrival = 0;
  std::uint64_t pages_fetched = 0;  // page records read from the store
  // Of those, read ahead of use (options::prefetch_pages), never faulted on.
  std::uint64_t pages_prefetched = 0;
  // Of those, watched: hidden until the program's first touch, which
  // counts them used (prefetched_used; the others left the pool unused, or
  // are still waiting). In a page server's serializable transactions every
  // prefetched page is watched (it becomes part of what the transaction
  // read at that touch); elsewhere one in 8 is (a first touch costs a
  // fault's signal),
  // and prefetched_used / prefetch_watched is the share of guesses used.
  std::uint64_t prefetch_watched = 0;
  std::uint64_t prefetched_used = 0;
  // Of pages_fetched, shown by mapping the store's file into their frames,
  // with no copy (options::page_file, hardware mode: pages whose pointers
  // and vptrs needed no rewriting, brought in with neighbours).
  std::uint64_t pages_mapped = 0;
  std::uint64_t pages_written = 0;  // page records written (diffs or whole)
  std::uint64_t evictions = 0;
  std::uint64_t dirty_evictions = 0;
  // Pages fetched again by the transaction that had evicted them: the pool
  // is smaller than that transaction's working set (see options::pool_pages).
  std::uint64_t refetches = 0;
  std::uint64_t log_bytes = 0;   // store log bytes written by commits
  std::uint64_t diff_bytes = 0;  // bytes in the changed ranges logged
  std::uint64_t commits = 0;
  std::uint64_t aborts = 0;
  std::uint64_t commit_ns = 0;           // time spent in commit
  std::uint64_t mapping_fetches = 0;     // mapping objects read with pages
  std::uint64_t pages_relocated = 0;     // pages whose pointers were rewritten
  std::uint64_t pointers_relocated = 0;  // pointer words rewritten
  std::uint64_t frame_resets = 0;        // fresh frame assignments (reservation full)
  // Where fetching pages in went (QuickStore's Table 6), summed over every
  // page brought in: the handler's whole time (hardware mode: from entry to
  // return; the kernel's signal delivery is not in it), and its parts: the
  // store read (the record and its mapping object) and checksum, decoding
  // the mapping object and giving its runs frames, rewriting pointers and
  // vptrs, and mapping the frame.
  std::uint64_t fault_ns = 0;
  std::uint64_t fetch_ns = 0;
  std::uint64_t mapping_ns = 0;
  std::uint64_t swizzle_ns = 0;
  std::uint64_t protect_ns = 0;
  // Reading, checking and mapping prefetched pages (in fault_ns too).
  std::uint64_t prefetch_ns = 0;
  // At the time of the call: pages in the buffer pool, the kernel memory
  // mappings the whole process holds (Linux caps them with
  // vm.max_map_count), and how frames are protected: "userfault" (one
  // mapping for any number of resident pages) or "protection" (mprotect,
  // up to two mappings a resident page). The mappings are counted in
  // /proc/self/maps, which the kernel writes out whole at each call: a
  // stats() call costs time that grows with the process's mappings (frames
  // that map the page file add theirs), so a loop should not poll it.
  std::uint64_t resident_pages = 0;
  // The memory resident pages hold (the kernel counts each page in the
  // process's RSS once per mapping of it: qs maps it twice, so RSS shows
  // up to twice this).
  std::uint64_t frame_memory_bytes = 0;
  std::uint64_t kernel_mappings = 0;
  const char* frame_control = "";
  // Pages the runtime keeps an entry for (about 150 bytes each): those
  // resident or reached since the frames were last reset. A page pointed to
  // gets one when it is reached, not when a page pointing to it comes in
  // (unless it is away from its home frame).
  std::uint64_t known_pages = 0;
  // Through a page server: pages named by the invalidations other clients'
  // commits sent this one, cached pages revalidated with no round trip
  // (the server would have invalidated them), and transactions refused
  // because a page they could have read from the cache was invalidated
  // while they ran.
  std::uint64_t invalidations_received = 0;
  std::uint64_t revalidations_avoided = 0;
  std::uint64_t invalidation_conflicts = 0;
  // Reading from a replica (options::read_replica): how stale the last
  // transaction's snapshot may be, in milliseconds: the age, by the
  // replica's clock, of the newest commit it held when the transaction
  // began (an upper bound: with no commits since, the data is current
  // however large this grows; with none recorded within the server's
  // --outcome-window, the window). 0 from the master.
  std::uint64_t replica_lag_ms = 0;
};

// What detecting one page fault costs on this machine, in nanoseconds: the
// kernel's delivery of SIGSEGV, qs's handler finding the faulting range, and
// the return to the faulting instruction (QuickStore's Table 6, "detect").
// Measured by faulting `faults` times on a page of its own, minus the cost
// of the same loop's mprotect calls without faults.
double measure_fault_detection_ns(int faults = 2000);

class database {
 public:
  // Opens (creating when absent) the embedded database in directory `path`,
  // running Berkeley DB recovery when it was not closed cleanly (an open
  // that only reads writes nothing); or, when path is "qs://host:port" or
  // "qs+unix:///path/to/socket", the database served by that qs-pageserver.
  static database open(const std::string& path, const options& opts = {});

  // Runs `body` in a transaction of its own and commits it. When the
  // transaction conflicts with another (qs::conflict, from the commit, from
  // an explicit call in body or from a `delete` in it), it is aborted and
  // body runs again, after a short random wait that grows with each loss,
  // up to `attempts` runs in all; then a qs::conflict is thrown whose text
  // adds how many attempts were made. Other exceptions abort and propagate
  // at once. Everything body did to persistent
  // data is undone by an abort; body must not depend on transient effects of
  // an earlier run.
  void run(const std::function<void()>& body, int attempts = 50);

  database(database&&) noexcept;
  database& operator=(database&&) noexcept;
  ~database();

  // A named root: a persistent cell holding a T, created zeroed when absent.
  // T is a pointer (qs::ref), an arithmetic type, or a type with a schema.
  // Needs an open transaction when the root is created. The reference
  // returned may be written through in both modes (in software mode, commit
  // compares the cell with its bytes when the transaction first asked for
  // it, and logs it if they differ).
  template <class T>
  T& root(std::string_view name) {
    static_assert(!std::is_reference_v<T>);
    return *static_cast<T*>(root_cell(name, detail::descriptor_of<T>(), sizeof(T), typeid(T)));
  }
  // Whether a root of that name exists.
  bool has_root(std::string_view name);

  // Hot backup: copies the database as committed into `target`, a new (or
  // empty) directory, with Berkeley DB's own backup, while this program's
  // other threads go on committing; it returns when the copy is made. The
  // copy opens as a database (qs::database::open(target)) holding exactly
  // the state of one commit: every commit that returned before backup was
  // called, and none that had not begun when it returned. Through a page
  // server, the server makes the copy, under its --backup-dir (`target` is
  // then a name there). Callable inside a transaction or not; the
  // transaction's own uncommitted changes are not in the copy. Throws
  // qs::invalid_argument for a target that is not empty, qs::store_error
  // when the copy failed.
  void backup(const std::string& target);

  // Drops every page from the buffer pool, so that the next touch of each
  // faults it in again (for cold measurements). Not inside a transaction.
  void release_cache();

  std::uint32_t page_size() const;
  // The buffer pool's size in pages (options::pool_pages, or what 0 chose).
  std::uint32_t pool_pages() const;
  // Whether a transaction is open on this handle.
  bool in_transaction() const;
  const std::string& path() const;
  statistics stats() const;
  // Whether `p` points into this database's persistent region.
  bool contains(const void* p) const;

 private:
  friend detail::database_impl& detail::impl_of(database& db) noexcept;

  explicit database(std::unique_ptr<detail::database_impl> impl);
  void* root_cell(std::string_view name, const type_descriptor* d, std::size_t size, const std::type_info& t);

  std::unique_ptr<detail::database_impl> impl_;
};

// What opening the database at `path` with options::evolve would convert
// for this program (qs/evolve.hpp): one line per changed type, "Part: +
// weight (double), - mass (int); size 32 -> 40 bytes"; none when nothing
// changed. Nothing is written. Throws qs::schema_mismatch naming the type
// and member of a change that cannot be made (opts.converters counted), as
// open with options::evolve would before writing anything.
std::vector<std::string> evolution_plan(const std::string& path, const options& opts = {});

inline detail::database_impl& detail::impl_of(database& db) noexcept { return *db.impl_.get(); }

}  // namespace qs
