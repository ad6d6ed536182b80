#include "os/frames.hpp"

#include "os/machine.hpp"

#include <qs/error.hpp>

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// Linux 6.4's uapi; older headers lack it (the probe finds whether the
// kernel has it).
#ifndef UFFDIO_CONTINUE_MODE_WP
#define UFFDIO_CONTINUE_MODE_WP (static_cast<__u64>(1) << 1)
#endif

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
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

void zeroed_memory::offer(std::size_t bytes) { ::madvise(base_, std::min(bytes, bytes_), MADV_FREE); }

bool zeroed_memory::populate(std::size_t offset, std::size_t bytes) const {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  if (offset >= bytes_) return false;
  return ::madvise(base_ + offset, std::min(bytes, bytes_ - offset), MADV_POPULATE_WRITE) == 0;
}

namespace {

// The userfaultfd features the userfault control needs.
constexpr std::uint64_t userfault_features =
    UFFD_FEATURE_SIGBUS | UFFD_FEATURE_MINOR_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
constexpr std::uint64_t userfault_modes =
    UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR | UFFDIO_REGISTER_MODE_WP;

// A userfaultfd for faults from user mode (the only kind an unprivileged
// process may ask for), with the features above; -1 when refused.
int open_userfaultfd() {
  int fd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  if (fd < 0) return -1;
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = userfault_features;
  if (::ioctl(fd, UFFDIO_API, &api) != 0 || (api.features & userfault_features) != userfault_features) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One page through the whole userfault cycle: registered, installed
// write-protected (UFFDIO_CONTINUE_MODE_WP, Linux 6.4), made writable.
bool userfault_works() {
  int uffd = open_userfaultfd();
  if (uffd < 0) return false;
  const std::size_t bytes = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  bool ok = false;
  int fd = ::memfd_create("qs-probe", MFD_CLOEXEC);
  void* a = MAP_FAILED;
  if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(bytes)) == 0)
    a = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (a != MAP_FAILED) {
    const char one = 1;
    uffdio_register r{};
    r.range = {reinterpret_cast<std::uint64_t>(a), bytes};
    r.mode = userfault_modes;
    uffdio_continue c{};
    c.range = r.range;
    c.mode = UFFDIO_CONTINUE_MODE_WP;
    uffdio_writeprotect w{};
    w.range = r.range;
    ok = ::ioctl(uffd, UFFDIO_REGISTER, &r) == 0 && ::pwrite(fd, &one, 1, 0) == 1 &&
         ::ioctl(uffd, UFFDIO_CONTINUE, &c) == 0 && *static_cast<volatile char*>(a) == 1 &&
         ::ioctl(uffd, UFFDIO_WRITEPROTECT, &w) == 0;
    ::munmap(a, bytes);
  }
  if (fd >= 0) ::close(fd);
  ::close(uffd);
  return ok;
}

}  // namespace

bool userfault_available() {
  static const bool available = userfault_works();
  return available;
}

frame_control default_frame_control() {
  const char* v = std::getenv("QS_FRAMES");
  if (v && *v) {
    std::string s = v;
    if (s == "protection") return frame_control::protection;
    if (s != "userfault") throw invalid_argument("QS_FRAMES must be userfault or protection, not '" + s + "'");
  }
  return userfault_available() ? frame_control::userfault : frame_control::protection;
}

const char* frame_control_name(frame_control c) { return c == frame_control::userfault ? "userfault" : "protection"; }

frame_space::frame_space(std::uintptr_t preferred, std::uint64_t bytes, std::uint32_t page_size, bool exact,
                         frame_control control)
    : bytes_(bytes), page_size_(page_size), control_(control) {
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
  // From here on the destructor's work is done by hand on failure.
  auto undo = [&](const std::string& what) {
    int e = errno;
    if (view_) remove_region(view_, bytes_);
    remove_region(base_, bytes_);
    if (uffd_ >= 0) ::close(uffd_);
    if (fd_ >= 0) ::close(fd_);
    errno = e;
    fail(what);
  };
  fd_ = ::memfd_create("qs-frames", MFD_CLOEXEC);
  if (fd_ < 0) undo("qs: memfd_create for the frames");
  if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0)
    undo("qs: sizing the frames' memory to " + std::to_string(bytes_ >> 20) + " MiB");
  const int access = control == frame_control::userfault ? PROT_READ | PROT_WRITE : PROT_NONE;
  if (::mmap(base_, bytes_, access, MAP_SHARED | MAP_FIXED, fd_, 0) == MAP_FAILED) undo("qs: mapping the frames");
  // Right after the reservation when that is free (valgrind finds no room
  // for a second view this large among its own mappings, but takes the
  // hint), else anywhere.
  p = ::mmap(end(), bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) undo("qs: mapping the runtime's view of the frames");
  view_ = static_cast<std::byte*>(p);
  add_region(view_, bytes_);
  if (control == frame_control::userfault) {
    uffd_ = open_userfaultfd();
    if (uffd_ < 0) undo("qs: userfaultfd for the frames (set QS_FRAMES=protection to use mprotect instead)");
    uffdio_register r{};
    r.range = {reinterpret_cast<std::uint64_t>(base_), bytes_};
    r.mode = userfault_modes;
    if (::ioctl(uffd_, UFFDIO_REGISTER, &r) != 0) undo("qs: registering the frames with userfaultfd");
    // Each run of frames mapping a file costs up to two kernel mappings;
    // they take at most half of what the rest of the process leaves.
    const long spare = max_map_count() - other_mappings;
    run_budget_ = spare > 0 ? static_cast<std::uint64_t>(spare) / 4 : 0;
  }
}

frame_space::~frame_space() {
  if (view_) remove_region(view_, bytes_);
  remove_region(base_, bytes_);
  if (uffd_ >= 0) ::close(uffd_);
  if (fd_ >= 0) ::close(fd_);
}

void frame_space::show(std::uint64_t f, bool writable) {
  if (control_ == frame_control::protection) return protect(f, writable);
  if (file_mapped(f)) return protect_mapped(f, 1, writable);
  uffdio_continue c{};
  c.range = {reinterpret_cast<std::uint64_t>(frame_address(f)), page_size_};
  c.mode = writable ? 0 : UFFDIO_CONTINUE_MODE_WP;
  while (::ioctl(uffd_, UFFDIO_CONTINUE, &c) != 0) {
    if (errno == EEXIST) return protect(f, writable);  // already installed
    if (errno != EAGAIN) fail("qs: showing frame " + std::to_string(f));
    c.mapped = 0;
  }
}

void frame_space::fill(std::uint64_t f, const std::byte* src) {
  if (file_mapped(f)) unmap_file(f, false);
  write_memory(f, src);
}

void frame_space::write_memory(std::uint64_t f, const std::byte* src) {
  // A write into a hole of shared memory allocates the page without
  // clearing it (the write covers it), where a store through a view would
  // fault, and the kernel would zero the page before the copy.
  std::size_t done = 0;
  while (done < page_size_) {
    ssize_t n = ::pwrite(fd_, src + done, page_size_ - done, static_cast<off_t>(f * page_size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("qs: filling the memory of frame " + std::to_string(f));
    done += static_cast<std::size_t>(n);
  }
}

void frame_space::fill_and_show(std::uint64_t f, const std::byte* src, bool writable) {
  if (file_mapped(f)) unmap_file(f, false);
  if (control_ == frame_control::userfault) {
    uffdio_copy c{};
    c.dst = reinterpret_cast<std::uint64_t>(frame_address(f));
    c.src = reinterpret_cast<std::uint64_t>(src);
    c.len = page_size_;
    c.mode = writable ? 0 : UFFDIO_COPY_MODE_WP;
    if (::ioctl(uffd_, UFFDIO_COPY, &c) == 0) return;
    // The page was there already (EEXIST), the copy was cut short (EAGAIN),
    // or the buffer is not one the kernel copies from: the same result, in
    // three steps.
    hide(f);
  }
  fill(f, src);
  show(f, writable);
}

bool frame_space::populate(std::uint64_t f, std::uint64_t n) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  if (f >= frames()) return false;
  if (n > frames() - f) n = frames() - f;
  // The memfd's view itself, whatever the frames show (the helper thread
  // that populates frames reads nothing of which map a file).
  return ::madvise(view_ + f * page_size_, n * page_size_, MADV_POPULATE_WRITE) == 0;
}

void frame_space::protect(std::uint64_t f, bool writable, std::uint64_t n) {
  if (control_ == frame_control::protection) {
    if (::mprotect(frame_address(f), n * page_size_, writable ? PROT_READ | PROT_WRITE : PROT_READ) != 0)
      fail("qs: protecting frame " + std::to_string(f));
    return;
  }
  // Frames mapping a file with mprotect, neighbours whose access changes
  // together in one call (made read-only, or writable within the budget);
  // the others' page table entries with userfaultfd, a run at a time.
  for (std::uint64_t end = f + n; f < end;) {
    if (file_mapped(f)) {
      std::uint64_t run = 1;
      while (f + run < end && file_mapped(f + run)) ++run;
      protect_mapped(f, run, writable);
      f += run;
      continue;
    }
    std::uint64_t run = 1;
    while (f + run < end && !file_mapped(f + run)) ++run;
    uffdio_writeprotect w{};
    w.range = {reinterpret_cast<std::uint64_t>(frame_address(f)), run * page_size_};
    w.mode = writable ? 0 : UFFDIO_WRITEPROTECT_MODE_WP;
    while (::ioctl(uffd_, UFFDIO_WRITEPROTECT, &w) != 0)
      if (errno != EAGAIN) fail("qs: protecting frame " + std::to_string(f));
    f += run;
  }
}

void frame_space::hide(std::uint64_t f) {
  // Back to the memfd, its bytes with it: hidden there.
  if (file_mapped(f)) return unmap_file(f, true);
  int r = control_ == frame_control::protection ? ::mprotect(frame_address(f), page_size_, PROT_NONE)
                                                : ::madvise(frame_address(f), page_size_, MADV_DONTNEED);
  if (r != 0) fail("qs: hiding frame " + std::to_string(f));
}

void frame_space::release(std::uint64_t f, std::uint64_t n) {
  if (mapped_count_ != 0)
    for (std::uint64_t i = f; i < f + n; ++i)
      if (file_mapped(i)) unmap_file(i, false);
  // Punching the hole drops the page from both views; under protection the
  // frame's access must go first (it would otherwise read a new zero page).
  if (control_ == frame_control::protection && ::mprotect(frame_address(f), n * page_size_, PROT_NONE) != 0)
    fail("qs: hiding frame " + std::to_string(f));
  if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(f * page_size_),
                  static_cast<off_t>(n * page_size_)) != 0)
    fail("qs: releasing the memory of frame " + std::to_string(f));
}

void frame_space::hide_all() {
  if (mapped_count_ != 0) {
    std::vector<std::uint64_t> mapped;
    mapped.reserve(mapped_offsets_.size());
    for (const auto& [f, offset] : mapped_offsets_) mapped.push_back(f);
    for (std::uint64_t f : mapped) unmap_file(f, true);
  }
  int r = control_ == frame_control::protection ? ::mprotect(base_, bytes_, PROT_NONE)
                                                : ::madvise(base_, bytes_, MADV_DONTNEED);
  if (r != 0) fail("qs: revoking access to the frames");
}

bool frame_space::joins(std::uint64_t f, std::uint64_t offset, bool left) const {
  const std::uint64_t g = left ? f - 1 : f + 1;
  if ((left && f == 0) || g >= frames() || !file_mapped(g)) return false;
  const std::uint64_t at = mapped_offsets_.at(g) & ~std::uint64_t{1};
  return left ? at + page_size_ == offset : offset + page_size_ == at;
}

void frame_space::set_mapped(std::uint64_t f, bool on, std::uint64_t offset) {
  // A frame joining both neighbours' runs makes one of two; one between
  // two frames that join it leaves two of one.
  const std::uint64_t joined = std::uint64_t{joins(f, offset, true)} + joins(f, offset, false);
  if (on) {
    mapped_bits_[f / 64] |= std::uint64_t{1} << (f % 64);
    mapped_offsets_[f] = offset;
    ++mapped_count_;
    mapped_runs_ = mapped_runs_ + 1 - joined;
  } else {
    mapped_runs_ = mapped_runs_ + joined - 1;
    mapped_bits_[f / 64] &= ~(std::uint64_t{1} << (f % 64));
    mapped_offsets_.erase(f);
    --mapped_count_;
  }
}

bool frame_space::map_file(std::uint64_t f, std::uint64_t n, int fd, std::uint64_t offset) {
  if (control_ != frame_control::userfault || n == 0 || mapped_runs_ + mapped_writable_ + n > run_budget_) return false;
  if (!mapped_bits_) {
    mapped_memory_ = std::make_unique<zeroed_memory>((frames() + 63) / 64 * 8);
    mapped_bits_ = reinterpret_cast<std::uint64_t*>(mapped_memory_->data());
  }
  std::byte* at = frame_address(f);
  const std::size_t bytes = n * page_size_;
  // Whatever memory the memfd held for these frames goes first.
  if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(f * page_size_),
                  static_cast<off_t>(bytes)) != 0)
    fail("qs: releasing the memory of frame " + std::to_string(f));
  if (::mmap(at, bytes, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, static_cast<off_t>(offset)) ==
      MAP_FAILED) {
    // The kernel may have taken the frames' memfd mapping away already:
    // put it back, hidden.
    const int e = errno;
    restore_memfd(f, n);
    errno = e;
    return false;
  }
  for (std::uint64_t i = 0; i < n; ++i) set_mapped(f + i, true, offset + i * page_size_);
  return true;
}

void frame_space::restore_memfd(std::uint64_t f, std::uint64_t n) {
  // Mapped without access until registered: a thread that touched the
  // frames in between would otherwise reach the memfd with no fault (a
  // write the runtime never sees).
  std::byte* at = frame_address(f);
  const std::size_t bytes = n * page_size_;
  uffdio_register r{};
  r.range = {reinterpret_cast<std::uint64_t>(at), bytes};
  r.mode = userfault_modes;
  if (::mmap(at, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, fd_, static_cast<off_t>(f * page_size_)) == MAP_FAILED ||
      ::ioctl(uffd_, UFFDIO_REGISTER, &r) != 0 || ::mprotect(at, bytes, PROT_READ | PROT_WRITE) != 0)
    fail("qs: restoring frames " + std::to_string(f) + " to " + std::to_string(f + n - 1) + " to their memory");
}

void frame_space::unmap_file(std::uint64_t f, bool keep) {
  std::byte* at = frame_address(f);
  if (keep) {
    // Another thread may be writing to a writable frame: it is made
    // read-only first, so that no write lands after its bytes are copied
    // (such a write faults, and waits for the runtime).
    if ((mapped_offsets_.at(f) & 1) != 0 && ::mprotect(at, page_size_, PROT_READ) != 0)
      fail("qs: protecting frame " + std::to_string(f));
    write_memory(f, at);
  }
  restore_memfd(f, 1);
  const std::uint64_t offset = mapped_offsets_.at(f);
  if (offset & 1) --mapped_writable_;
  set_mapped(f, false, offset & ~std::uint64_t{1});
}

void frame_space::protect_mapped(std::uint64_t f, std::uint64_t n, bool writable) {
  for (const std::uint64_t end = f + n; f < end;) {
    if (((mapped_offsets_.at(f) & 1) != 0) == writable) {
      ++f;
      continue;
    }
    if (writable && mapped_runs_ + mapped_writable_ >= run_budget_) {
      // No room for the mapping a writable frame splits off: the memfd
      // takes its bytes, and shows them writable.
      unmap_file(f, true);
      show(f, true);
      ++f;
      continue;
    }
    // The neighbours whose access changes with it, within the budget: one
    // call. Written, a frame's page becomes the process's own copy (the
    // file is never written through it).
    std::uint64_t run = 1;
    while (f + run < end && ((mapped_offsets_.at(f + run) & 1) != 0) != writable &&
           (!writable || mapped_runs_ + mapped_writable_ + run < run_budget_))
      ++run;
    if (::mprotect(frame_address(f), run * page_size_, writable ? PROT_READ | PROT_WRITE : PROT_READ) != 0)
      fail("qs: protecting frames " + std::to_string(f) + " to " + std::to_string(f + run - 1));
    for (std::uint64_t i = f; i < f + run; ++i) mapped_offsets_.at(i) ^= 1;
    if (writable) mapped_writable_ += run;
    else mapped_writable_ -= run;
    f += run;
  }
}

std::uint64_t frame_space::memory_bytes() const {
  struct stat st {};
  return ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_blocks) * 512 : 0;
}

std::uint64_t process_mappings() {
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::uint64_t lines = 0;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
  ::close(fd);
  return lines;
}

void check_map_budget(std::uint64_t slots, frame_control control) {
  if (control == frame_control::userfault || slots <= max_pool_pages_for_mappings()) return;
  long limit = max_map_count();
  long need = 2L * slots + other_mappings;
  throw invalid_argument("qs: a buffer pool of " + std::to_string(slots) + " pages may need up to " +
                         std::to_string(need) + " memory mappings, but vm.max_map_count is " + std::to_string(limit) +
                         "; raise it (sysctl -w vm.max_map_count=" + std::to_string(need * 2) +
                         ") or use a smaller pool (userfaultfd, which needs no mapping per page, is not "
                         "available or QS_FRAMES=protection is set)");
}

}  // namespace qs::detail
