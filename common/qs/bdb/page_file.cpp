// The page file of an environment laid out with one (see page_file.hpp).
#include <qs/bdb/page_file.hpp>

#include <qs/base/error.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace qs::detail {
namespace {

constexpr char file_magic[8] = {'Q', 'S', 'P', 'A', 'G', 'E', 'S', '1'};
constexpr std::uint32_t file_version = 1;

struct file_header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t slot_bytes;
};

// Slots far enough out that their offset would not fit in an off_t hold
// nothing (and cannot be written).
constexpr std::uint64_t max_offset = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) / 2;

// The address space reserved for the file's mapping (the most of it that
// reads through the mapping; slots past it are read with pread).
constexpr std::uint64_t map_span = std::uint64_t{1} << 40;

// How far ahead of the slots asked for blocks are reserved.
constexpr std::uint64_t reserve_ahead = std::uint64_t{4} << 20;

std::string said(const std::string& path, const std::string& what) { return "page file " + path + ": " + what; }

// Reads len bytes at off; what lies past the end of the file reads as zero.
void read_fully(int fd, const std::string& path, std::uint64_t off, void* buf, std::size_t len) {
  auto* p = static_cast<char*>(buf);
  while (len > 0) {
    if (off >= max_offset) {
      std::memset(p, 0, len);
      return;
    }
    ssize_t n = ::pread(fd, p, len, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw store_error(said(path, std::string("read failed: ") + std::strerror(errno)));
    }
    if (n == 0) {
      std::memset(p, 0, len);
      return;
    }
    p += n;
    off += static_cast<std::uint64_t>(n);
    len -= static_cast<std::size_t>(n);
  }
}

}  // namespace

page_file::page_file(std::string path, int fd, std::uint32_t slot_bytes)
    : path_(std::move(path)), fd_(fd), slot_bytes_(slot_bytes) {
  void* p = ::mmap(nullptr, map_span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p != MAP_FAILED) map_ = static_cast<std::byte*>(p);
}

page_file::~page_file() {
  if (map_) ::munmap(map_, map_span);
  ::close(fd_);
}

const std::byte* page_file::mapped(std::uint64_t offset, std::uint64_t len) const {
  if (!map_ || offset + len > map_span) return nullptr;
  if (offset + len <= map_len_.load(std::memory_order_acquire)) return map_ + offset;
  std::lock_guard<std::mutex> g(map_mutex_);
  std::uint64_t have = map_len_.load(std::memory_order_relaxed);
  if (offset + len > have) {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return nullptr;
    const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // The last page may run past the end of the file (it reads as zero
    // there); no page wholly past it is mapped (it would raise SIGBUS).
    const std::uint64_t want =
        std::min<std::uint64_t>((static_cast<std::uint64_t>(st.st_size) + page - 1) / page * page, map_span);
    if (want > have) {
      void* p = ::mmap(map_ + have, want - have, PROT_READ, MAP_SHARED | MAP_FIXED, fd_, static_cast<off_t>(have));
      if (p == MAP_FAILED) return nullptr;
      have = want;
      map_len_.store(have, std::memory_order_release);
    }
  }
  return offset + len <= have ? map_ + offset : nullptr;
}

std::unique_ptr<page_file> page_file::open(const std::string& dir) {
  const std::string path = dir + "/" + file_name;
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && (errno == EROFS || errno == EACCES)) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return nullptr;
    throw store_error(said(path, std::string("cannot open it: ") + std::strerror(errno)));
  }
  file_header h{};
  ssize_t n = ::pread(fd, &h, sizeof h, 0);
  if (n != static_cast<ssize_t>(sizeof h)) {
    ::close(fd);
    throw store_error(said(path, "its header is cut short (" + std::to_string(n < 0 ? 0 : n) + " of " +
                                     std::to_string(sizeof h) + " bytes): the file is damaged"));
  }
  if (std::memcmp(h.magic, file_magic, sizeof file_magic) != 0) {
    ::close(fd);
    throw store_error(said(path, "it is not a qs page file (its magic number is wrong)"));
  }
  if (h.version != file_version) {
    ::close(fd);
    throw store_error(said(path, "format version " + std::to_string(h.version) +
                                     ", which this qs does not read (it reads " + std::to_string(file_version) + ")"));
  }
  if (h.slot_bytes < 64 || h.slot_bytes > (std::uint32_t{1} << 24)) {
    ::close(fd);
    throw store_error(said(path, "its header gives slots of " + std::to_string(h.slot_bytes) +
                                     " bytes, not a record size qs makes: the file is damaged"));
  }
  return std::unique_ptr<page_file>(new page_file(path, fd, h.slot_bytes));
}

std::unique_ptr<page_file> page_file::create(const std::string& dir, std::uint32_t slot_bytes) {
  const std::string path = dir + "/" + file_name;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw store_error(said(path, std::string("cannot create it: ") + std::strerror(errno)));
  char block[header_bytes] = {};
  file_header h{};
  std::memcpy(h.magic, file_magic, sizeof file_magic);
  h.version = file_version;
  h.slot_bytes = slot_bytes;
  std::memcpy(block, &h, sizeof h);
  bool ok = ::pwrite(fd, block, sizeof block, 0) == static_cast<ssize_t>(sizeof block) && ::fsync(fd) == 0;
  if (!ok) {
    int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    throw store_error(said(path, std::string("cannot create it: ") + std::strerror(e)));
  }
  return std::unique_ptr<page_file>(new page_file(path, fd, slot_bytes));
}

void page_file::read(std::uint64_t page, void* buf, std::uint32_t cap) const {
  if (cap > slot_bytes_) cap = slot_bytes_;
  if (page >= (max_offset - header_bytes) / slot_bytes_) {
    std::memset(buf, 0, cap);
    return;
  }
  if (const std::byte* at = mapped(offset_of(page, 0), cap)) {
    std::memcpy(buf, at, cap);
    return;
  }
  read_fully(fd_, path_, offset_of(page, 0), buf, cap);
}

void page_file::read_into(std::uint64_t page, void* head, std::uint32_t head_bytes, void* rest,
                          std::uint32_t rest_bytes) const {
  if (page >= (max_offset - header_bytes) / slot_bytes_ || std::uint64_t{head_bytes} + rest_bytes > slot_bytes_) {
    std::memset(head, 0, head_bytes);
    std::memset(rest, 0, rest_bytes);
    return;
  }
  const std::uint64_t off = offset_of(page, 0);
  if (const std::byte* at = mapped(off, std::uint64_t{head_bytes} + rest_bytes)) {
    std::memcpy(head, at, head_bytes);
    std::memcpy(rest, at + head_bytes, rest_bytes);
    return;
  }
  iovec v[2] = {{head, head_bytes}, {rest, rest_bytes}};
  for (;;) {
    ssize_t n = ::preadv(fd_, v, 2, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw store_error(said(path_, std::string("read failed: ") + std::strerror(errno)));
    if (static_cast<std::uint64_t>(n) == std::uint64_t{head_bytes} + rest_bytes) return;
    break;
  }
  // Short (the end of the file, or an interrupted read): piece by piece.
  read_fully(fd_, path_, off, head, head_bytes);
  read_fully(fd_, path_, off + head_bytes, rest, rest_bytes);
}

std::uint64_t page_file::slots() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw store_error(said(path_, std::string("cannot examine it: ") + std::strerror(errno)));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  return size <= header_bytes ? 0 : (size - header_bytes + slot_bytes_ - 1) / slot_bytes_;
}

int page_file::write(std::uint64_t page, std::uint32_t offset, const void* p, std::uint32_t len) {
  if (page >= (max_offset - header_bytes) / slot_bytes_ || std::uint64_t{offset} + len > slot_bytes_) return EFBIG;
  std::uint64_t off = offset_of(page, offset);
  const auto* from = static_cast<const char*>(p);
  while (len > 0) {
    ssize_t n = ::pwrite(fd_, from, len, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    from += n;
    off += static_cast<std::uint64_t>(n);
    len -= static_cast<std::uint32_t>(n);
  }
  if (sync_each_ && ::fdatasync(fd_) != 0) return errno;
  return 0;
}

int page_file::reserve(std::uint64_t pages) {
  if (pages >= (max_offset - header_bytes) / slot_bytes_) return EFBIG;
  const std::uint64_t need = offset_of(pages, 0);
  if (need <= reserved_) return 0;
  const std::uint64_t to = need + reserve_ahead;
  int rc = ::posix_fallocate(fd_, static_cast<off_t>(reserved_), static_cast<off_t>(to - reserved_));
  if (rc != 0) return rc;
  reserved_ = to;
  return 0;
}

int page_file::sync() { return ::fdatasync(fd_) == 0 ? 0 : errno; }

}  // namespace qs::detail
