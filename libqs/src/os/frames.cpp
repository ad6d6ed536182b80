#include "os/frames.hpp"

#include "os/machine.hpp"

#include <qs/error.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace qs::detail {
namespace {

[[noreturn]] void fail(const std::string& what) { throw error(what + ": " + std::strerror(errno)); }

// The regions a forked child unmaps.
struct region {
  void* base;
  std::size_t bytes;
};
std::mutex regions_mutex;
std::vector<region>& regions() {
  static std::vector<region> r;
  return r;
}
std::atomic<std::uint64_t> generation{0};

void before_fork() { regions_mutex.lock(); }
void after_fork_parent() { regions_mutex.unlock(); }
void after_fork_child() {
  // The only thread of the child: nothing else touches the list.
  for (const region& r : regions()) ::munmap(r.base, r.bytes);
  regions().clear();
  generation.fetch_add(1);
  regions_mutex.unlock();
}

void add_region(void* base, std::size_t bytes) {
  static std::once_flag once;
  std::call_once(once, [] { ::pthread_atfork(before_fork, after_fork_parent, after_fork_child); });
  std::lock_guard<std::mutex> g(regions_mutex);
  regions().push_back({base, bytes});
}

// Unmaps a region unless a fork already did (then it is not ours to unmap:
// something else of the child's may be there now).
void remove_region(void* base, std::size_t bytes) {
  std::lock_guard<std::mutex> g(regions_mutex);
  auto& r = regions();
  for (auto it = r.begin(); it != r.end(); ++it) {
    if (it->base == base) {
      r.erase(it);
      ::munmap(base, bytes);
      return;
    }
  }
}

}  // namespace

std::uint64_t fork_generation() noexcept { return generation.load(); }

zeroed_memory::zeroed_memory(std::size_t bytes) : bytes_(bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) fail("qs: reserving a table of " + std::to_string(bytes >> 20) + " MiB");
  base_ = static_cast<std::byte*>(p);
  add_region(base_, bytes_);
}

zeroed_memory::~zeroed_memory() { remove_region(base_, bytes_); }

pool_memory::pool_memory(std::uint32_t slots, std::uint32_t page_size)
    : bytes_(std::size_t{slots} * page_size), page_size_(page_size) {
  fd_ = ::memfd_create("qs-buffer-pool", MFD_CLOEXEC);
  if (fd_ < 0) fail("qs: memfd_create for the buffer pool");
  if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) {
    ::close(fd_);
    fail("qs: sizing the buffer pool to " + std::to_string(bytes_) + " bytes");
  }
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    ::close(fd_);
    fail("qs: mapping the buffer pool");
  }
  base_ = static_cast<std::byte*>(p);
  p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    ::munmap(base_, bytes_);
    ::close(fd_);
    fail("qs: mapping the buffer pool's before-images");
  }
  shadow_ = static_cast<std::byte*>(p);
  add_region(base_, bytes_);
  add_region(shadow_, bytes_);
}

pool_memory::~pool_memory() {
  remove_region(shadow_, bytes_);
  remove_region(base_, bytes_);
  ::close(fd_);
}

void pool_memory::discard(std::uint32_t i) {
  ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(std::size_t{i} * page_size_),
              page_size_);
}

frame_space::frame_space(std::uintptr_t preferred, std::uint64_t bytes, std::uint32_t page_size, bool exact)
    : bytes_(bytes), page_size_(page_size) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  // Anywhere: the kernel aligns to 4 KiB only, and frames (and the
  // addresses in mapping objects) are aligned to the page size, so reserve
  // a page more and trim.
  std::uint64_t slack = exact ? 0 : page_size;
  auto refuse = [&] {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%#lx", static_cast<unsigned long>(preferred));
    fail(std::string("qs: reserving ") + std::to_string(bytes >> 20) + " MiB of address space at " + buf);
  };
  // Exactly at `preferred`: asked for as a hint, and checked. The kernel takes
  // a hint when the range is free and never replaces a mapping for one;
  // MAP_FIXED_NOREPLACE would say the same, but an older kernel reads it as
  // a hint without saying so, and ThreadSanitizer's mmap replaces an address
  // outside its application ranges by 0 and keeps the flag (a mapping at
  // address 0, which it then reports as fatal).
  void* p = ::mmap(reinterpret_cast<void*>(preferred), bytes + slack, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) refuse();
  if (exact && reinterpret_cast<std::uintptr_t>(p) != preferred) {
    ::munmap(p, bytes + slack);
    errno = EEXIST;
    refuse();
  }
  auto start = reinterpret_cast<std::uintptr_t>(p);
  auto aligned = (start + slack) & ~(std::uintptr_t{page_size} - 1);
  if (!exact) {
    if (aligned > start) ::munmap(p, aligned - start);
    std::uintptr_t end = start + bytes + slack;
    if (end > aligned + bytes) ::munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
  }
  base_ = reinterpret_cast<std::byte*>(aligned);
  add_region(base_, bytes_);
}

frame_space::~frame_space() { remove_region(base_, bytes_); }

void frame_space::map(std::uint64_t f, const pool_memory& pool, std::uint32_t slot, bool writable) {
  void* want = frame_address(f);
  void* p =
      ::mmap(want, page_size_, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
             pool.fd(), static_cast<off_t>(std::size_t{slot} * page_size_));
  if (p == MAP_FAILED) fail("qs: mapping frame " + std::to_string(f));
}

void frame_space::protect(std::uint64_t f, bool writable) {
  if (::mprotect(frame_address(f), page_size_, writable ? PROT_READ | PROT_WRITE : PROT_READ) != 0)
    fail("qs: protecting frame " + std::to_string(f));
}

void frame_space::revoke_all() {
  if (::mprotect(base_, bytes_, PROT_NONE) != 0) fail("qs: revoking access to the frames");
}

void frame_space::unmap(std::uint64_t f) {
  void* p =
      ::mmap(frame_address(f), page_size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) fail("qs: releasing frame " + std::to_string(f));
}

void check_map_budget(std::uint32_t slots) {
  if (slots <= max_pool_pages_for_mappings()) return;
  long limit = max_map_count();
  long need = 2L * slots + other_mappings;
  throw invalid_argument("qs: a buffer pool of " + std::to_string(slots) + " pages may need up to " +
                         std::to_string(need) + " memory mappings, but vm.max_map_count is " + std::to_string(limit) +
                         "; raise it (sysctl -w vm.max_map_count=" + std::to_string(need * 2) +
                         ") or use a smaller pool");
}

}  // namespace qs::detail
