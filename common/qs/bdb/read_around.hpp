// qs/bdb/read_around.hpp: Berkeley DB's reads of its files, with the block
// around a read that misses the OS page cache read ahead.
//
// Berkeley DB reads B-tree pages into its cache with pread, and the kernel
// reads only what a pread asks for unless the reads run in sequence. A
// mapped file's fault reads the block around it instead (read-around), and
// the pages a program reads together are often neighbours in the file (a
// B-tree's leaves are written in key order, and qs's page numbers follow
// allocation). qs-pageserver's environment reads through pread: without
// read-around a cold traversal through it made 1,370 disk requests where
// the embedded store's mapped files made 125 for the same 100 MB.
//
// read_around::pread first asks the kernel whether the page cache holds
// the bytes (cachestat(2), Linux 6.5 on, which starts no read); when it
// does not, it starts the read of the aligned block of `window` bytes
// around them (readahead(2), which does not wait for the disk), then reads
// them. A read from the cache thus costs one system call more than a pread.
// A read that runs past the end of the file counts as a miss (cachestat
// finds no page there); Berkeley DB reads whole pages inside its files.
//
// preadv2 with RWF_NOWAIT is no such test: on a miss the kernel starts the
// read itself, and where the device answers before the kernel looks again
// (a paravirtualized disk served from its host's cache), the read
// succeeds, and the block around it is never read. It is the fallback on
// a kernel without cachestat only; on a kernel that refuses both, every
// read is a plain pread. It changes when bytes come in, not which: what
// Berkeley DB reads stays the caller's to check.
//
// It stops when what it brings is not used, as the kernel's read-around
// does: of the 16 blocks read around last, one that no later read landed
// in counts against reading around, one that some read did counts for it;
// with 8 more unused than used, a miss reads only what it asks for (every
// 256th still reads around, to see whether the reads came closer). A
// random reader of a file far larger than the page cache thus reads about
// 24 blocks whole before it stops.
//
// install_read_around() makes Berkeley DB read through one read_around,
// for the whole process (db_env_set_func_pread).
//
// Invariants: pread returns what ::pread would (the bytes, a short count
// at the end of a file, or -1 with errno); it never reads ahead more than
// the block or two its range lies in.
//
// Thread-safety: a read_around is used from any number of threads at once.
// install_read_around() may be called from any thread, any number of
// times: the first call's window holds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace qs::detail {

struct read_around_counts {
  std::uint64_t reads = 0;
  std::uint64_t blocks_started = 0;  // reads that missed the page cache and started a block's read
  std::uint64_t blocks_unused = 0;   // blocks that left the recent ones with no later read in them
};

class read_around {
 public:
  // `window` is rounded down to a power of two from 4 KiB to 64 MiB.
  explicit read_around(std::size_t window);
  read_around(const read_around&) = delete;
  read_around& operator=(const read_around&) = delete;

  std::size_t window() const { return window_; }
  // ::pread(fd, buf, len, offset), reading the block around a miss (above).
  long pread(int fd, void* buf, std::size_t len, std::int64_t offset);
  read_around_counts counts() const;

 private:
  static constexpr unsigned recent_blocks = 16;
  static constexpr int waste_limit = 8;
  static constexpr std::uint64_t probe_every = 256;

  struct recent_block {
    std::atomic<std::uint64_t> key{0};  // 0: none
    std::atomic<bool> used{false};
  };

  static std::uint64_t block_key(int fd, std::uint64_t block);
  // Whether a recent block has this key; marks it used.
  bool touch_recent(std::uint64_t key);
  // Whether a miss in the block `key` reads around; if so, the block is
  // added to the recent ones.
  bool read_around_miss(std::uint64_t key);

  const std::size_t window_;
  recent_block recent_[recent_blocks];
  std::mutex miss_mutex_;     // read_around_miss
  unsigned next_recent_ = 0;  // under miss_mutex_
  int waste_ = 0;             // net unused blocks, under miss_mutex_
  std::uint64_t misses_ = 0;  // under miss_mutex_
  // How a miss is told: cachestat, else preadv2's RWF_NOWAIT, else not
  // at all; each falls to the next once the kernel refuses it.
  enum class probe { cachestat, nowait, none };
  // Whether the page cache holds [offset, offset + len) of fd; nullopt
  // once the kernel refuses cachestat.
  std::optional<bool> cached(int fd, std::uint64_t offset, std::size_t len);
  std::atomic<probe> probe_{probe::cachestat};
  std::atomic<std::uint64_t> reads_{0};
  std::atomic<std::uint64_t> started_{0};
  std::atomic<std::uint64_t> unused_{0};
};

// Makes Berkeley DB read through a read_around of `window` bytes. False if
// `window` is 0 or Berkeley DB refused the replacement (it then reads with
// ::pread, as without it).
bool install_read_around(std::size_t window);
// The installed one, or nullptr.
const read_around* installed_read_around();

// What the kernel reads around a mapped file's fault for files at `path`
// (the read_ahead_kb of the block device under it, or of the nearest
// existing directory above it), as a power of two from 4 KiB to 64 MiB;
// 128 KiB, the kernel's default, when it cannot be told (no block device,
// no sysfs).
std::size_t device_read_ahead(const std::string& path);

}  // namespace qs::detail
