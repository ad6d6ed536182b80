// Berkeley DB's pread, with the block around a cache miss read ahead
// (read_around.hpp).
#include <qs/bdb/read_around.hpp>

#include <db.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <filesystem>
#include <fstream>

namespace qs::detail {

namespace {

std::size_t power_of_two_window(std::size_t bytes) {
  return std::bit_floor(std::clamp<std::size_t>(bytes, 4096, std::size_t{64} << 20));
}

std::atomic<read_around*> installed{nullptr};

ssize_t replacement(int fd, void* buf, size_t len, off_t offset) {
  return static_cast<ssize_t>(installed.load(std::memory_order_acquire)->pread(fd, buf, len, offset));
}

}  // namespace

read_around::read_around(std::size_t window) : window_(power_of_two_window(window)) {}

std::uint64_t read_around::block_key(int fd, std::uint64_t block) {
  return ((static_cast<std::uint64_t>(static_cast<unsigned>(fd)) << 44) ^ block) + 1;
}

bool read_around::touch_recent(std::uint64_t key) {
  for (recent_block& b : recent_)
    if (b.key.load(std::memory_order_relaxed) == key) {
      b.used.store(true, std::memory_order_relaxed);
      return true;
    }
  return false;
}

bool read_around::read_around_miss(std::uint64_t key) {
  std::lock_guard<std::mutex> g(miss_mutex_);
  ++misses_;
  if (waste_ >= waste_limit && misses_ % probe_every != 0) return false;
  recent_block& b = recent_[next_recent_++ % recent_blocks];
  if (b.key.load(std::memory_order_relaxed) != 0) {
    if (b.used.load(std::memory_order_relaxed)) {
      waste_ = std::max(waste_ - 1, 0);
    } else {
      waste_ = std::min(waste_ + 1, 2 * waste_limit);
      unused_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  b.used.store(false, std::memory_order_relaxed);
  b.key.store(key, std::memory_order_relaxed);
  return true;
}

std::optional<bool> read_around::cached(int fd, std::uint64_t offset, std::size_t len) {
  // cachestat(2)'s arguments and answer (linux/mman.h from Linux 6.5; the
  // call's number is 451 on every architecture).
  struct range {
    std::uint64_t off, len;
  };
  struct answer {
    std::uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  };
  constexpr long cachestat_call = 451;
  static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  range r{offset, len};
  answer a{};
  if (::syscall(cachestat_call, fd, &r, &a, 0) != 0) {
    if (errno == ENOSYS || errno == EPERM || errno == EOPNOTSUPP) {
      probe_.store(probe::nowait, std::memory_order_relaxed);
      return std::nullopt;
    }
    return true;  // a bad descriptor, say: the pread says what is wrong
  }
  const std::uint64_t pages = (offset + len - 1) / page - offset / page + 1;
  return a.nr_cache >= pages;
}

long read_around::pread(int fd, void* buf, std::size_t len, std::int64_t offset) {
  reads_.fetch_add(1, std::memory_order_relaxed);
  const probe how = probe_.load(std::memory_order_relaxed);
  if (len == 0 || offset < 0 || how == probe::none) return ::pread(fd, buf, len, offset);
  const auto mask = ~(static_cast<std::uint64_t>(window_) - 1);
  const auto from = static_cast<std::uint64_t>(offset);
  const bool recent = touch_recent(block_key(fd, from & mask));
  std::optional<bool> in;
  if (how == probe::cachestat) in = cached(fd, from, len);
  if (in == true) return ::pread(fd, buf, len, offset);
  std::size_t got = 0;
  if (!in) {
    iovec v{buf, len};
    const ssize_t r = ::preadv2(fd, &v, 1, offset, RWF_NOWAIT);
    if (r == static_cast<ssize_t>(len) || r == 0) return r;  // all of it, or the end of the file
    if (r < 0 && errno == EOPNOTSUPP) {
      // A kernel that cannot tell whether the page cache holds the bytes:
      // every read would look like a miss. Reads are preads from now on.
      probe_.store(probe::none, std::memory_order_relaxed);
      return ::pread(fd, buf, len, offset);
    }
    if (r < 0 && errno != EAGAIN) return r;
    if (r > 0) got = static_cast<std::size_t>(r);
  }
  // Part or none of it is in the page cache. Unless its block was read
  // around a moment ago (that read may still be under way), the block
  // around the rest comes in as the kernel would bring it to a mapped
  // file's fault.
  const std::uint64_t first = (from + got) & mask;
  const std::uint64_t last = (from + len + window_ - 1) & mask;
  if (!(recent && first == (from & mask)) && read_around_miss(block_key(fd, first))) {
    started_.fetch_add(1, std::memory_order_relaxed);
    (void)::readahead(fd, static_cast<off64_t>(first), static_cast<size_t>(last - first));
  }
  std::size_t done = got;
  while (done < len) {
    const ssize_t r = ::pread(fd, static_cast<char*>(buf) + done, len - done, offset + static_cast<off_t>(done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return done > 0 ? static_cast<long>(done) : -1;
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  return static_cast<long>(done);
}

read_around_counts read_around::counts() const {
  return {reads_.load(std::memory_order_relaxed), started_.load(std::memory_order_relaxed),
          unused_.load(std::memory_order_relaxed)};
}

bool install_read_around(std::size_t window) {
  if (window == 0) return false;
  static std::once_flag once;
  static bool done = false;
  std::call_once(once, [&] {
    // Never freed: Berkeley DB may read through it until the process ends.
    installed.store(new read_around(window), std::memory_order_release);
    done = db_env_set_func_pread(&replacement) == 0;
  });
  return done;
}

const read_around* installed_read_around() { return installed.load(std::memory_order_acquire); }

std::size_t device_read_ahead(const std::string& path) {
  constexpr std::size_t fallback = std::size_t{128} << 10;
  std::error_code ec;
  std::filesystem::path at = std::filesystem::absolute(path, ec);
  struct stat st {};
  while (::stat(at.c_str(), &st) != 0) {
    if (!at.has_parent_path() || at.parent_path() == at) return fallback;
    at = at.parent_path();
  }
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  // A whole disk has queue/; a partition's is its disk's, one level up.
  for (const char* under : {"/queue/read_ahead_kb", "/../queue/read_ahead_kb"}) {
    std::ifstream in("/sys/dev/block/" + dev + under);
    unsigned long kb = 0;
    if (in >> kb && kb > 0) return power_of_two_window(std::size_t{kb} << 10);
  }
  return fallback;
}

}  // namespace qs::detail
