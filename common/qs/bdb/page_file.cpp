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
#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace qs::detail {
namespace {

constexpr char file_magic[8] = {'Q', 'S', 'P', 'A', 'G', 'E', 'S', '1'};
// 1: each record whole, one after the other (images at no particular
// alignment); 2: heads and images apart, images at multiples of 4096.
constexpr std::uint32_t file_version = 2;

struct file_header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t head_bytes;
  std::uint32_t image_bytes;
};

constexpr std::uint32_t block = page_file::header_bytes;

// What a page file's header must say of its sizes; empty when it is laid
// out by them.
std::string wrong_sizes(std::uint32_t head_bytes, std::uint32_t image_bytes) {
  if (head_bytes < 16 || head_bytes > block) return "records with heads of " + std::to_string(head_bytes) + " bytes";
  if (image_bytes == 0 || image_bytes % block != 0 || image_bytes > (std::uint32_t{1} << 24))
    return "images of " + std::to_string(image_bytes) + " bytes";
  return {};
}

// Records far enough out that their offsets would not fit in an off_t hold
// nothing (and cannot be written).
constexpr std::uint64_t max_offset = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) / 2;

// The address space reserved for the file's mapping (the most of it that
// reads through the mapping; records past it are read with pread).
constexpr std::uint64_t map_span = std::uint64_t{1} << 40;

// How far ahead of the records asked for blocks are reserved.
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

page_file::page_file(std::string path, int fd, std::uint32_t head_bytes, std::uint32_t image_bytes, std::uint64_t size)
    : path_(std::move(path)),
      fd_(fd),
      head_bytes_(head_bytes),
      image_bytes_(image_bytes),
      per_group_(block / head_bytes),
      group_bytes_(block + std::uint64_t{per_group_} * image_bytes),
      max_pages_((max_offset - header_bytes) / group_bytes_ * per_group_),
      size_(size) {
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
  const std::uint64_t size = size_.load(std::memory_order_acquire);
  if (offset + len > have && offset + len <= size) {
    const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // The last page may run past the end of the file (it reads as zero
    // there); no page wholly past it is mapped (it would raise SIGBUS).
    const std::uint64_t want = std::min<std::uint64_t>((size + page - 1) / page * page, map_span);
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
    throw store_error(
        said(path, "format version " + std::to_string(h.version) + " (" +
                       (h.version == 1 ? "records whole, one after the other" : "not a format qs has written") +
                       "), which this qs does not read: it reads version " + std::to_string(file_version) +
                       " (heads and images apart, images aligned to 4096 bytes)"));
  }
  if (std::string wrong = wrong_sizes(h.head_bytes, h.image_bytes); !wrong.empty()) {
    ::close(fd);
    throw store_error(said(path, "its header gives " + wrong + ", not a size qs makes: the file is damaged"));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw store_error(said(path, std::string("cannot examine it: ") + std::strerror(e)));
  }
  return std::unique_ptr<page_file>(
      new page_file(path, fd, h.head_bytes, h.image_bytes, static_cast<std::uint64_t>(st.st_size)));
}

std::unique_ptr<page_file> page_file::create(const std::string& dir, std::uint32_t head_bytes,
                                             std::uint32_t image_bytes) {
  const std::string path = dir + "/" + file_name;
  if (std::string wrong = wrong_sizes(head_bytes, image_bytes); !wrong.empty())
    throw invalid_argument(said(path, "cannot lay out " + wrong));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw store_error(said(path, std::string("cannot create it: ") + std::strerror(errno)));
  char first[header_bytes] = {};
  file_header h{};
  std::memcpy(h.magic, file_magic, sizeof file_magic);
  h.version = file_version;
  h.head_bytes = head_bytes;
  h.image_bytes = image_bytes;
  std::memcpy(first, &h, sizeof h);
  bool ok = ::pwrite(fd, first, sizeof first, 0) == static_cast<ssize_t>(sizeof first) && ::fsync(fd) == 0;
  if (!ok) {
    int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    throw store_error(said(path, std::string("cannot create it: ") + std::strerror(e)));
  }
  return std::unique_ptr<page_file>(new page_file(path, fd, head_bytes, image_bytes, header_bytes));
}

template <class F>
void page_file::for_each_stretch(std::uint64_t page, std::uint32_t offset, std::uint32_t len, F&& f) const {
  const std::uint64_t group = group_offset(page), within = page % per_group_;
  const std::uint32_t end = offset + len;
  if (offset < head_bytes_) {
    const std::uint32_t n = std::min(end, head_bytes_) - offset;
    f(group + within * head_bytes_ + offset, offset, n);
    offset += n;
  }
  if (offset < end) f(group + block + within * image_bytes_ + (offset - head_bytes_), offset, end - offset);
}

void page_file::read(std::uint64_t page, void* buf, std::uint32_t cap) const {
  if (cap > slot_bytes()) cap = slot_bytes();
  auto* to = static_cast<std::byte*>(buf);
  if (page >= max_pages_) {
    std::memset(to, 0, cap);
    return;
  }
  for_each_stretch(page, 0, cap, [&](std::uint64_t at, std::uint32_t offset, std::uint32_t n) {
    if (const std::byte* from = mapped(at, n)) std::memcpy(to + offset, from, n);
    else read_fully(fd_, path_, at, to + offset, n);
  });
}

void page_file::read_into(std::uint64_t page, void* head, std::uint32_t head_bytes, void* rest,
                          std::uint32_t rest_bytes) const {
  if (page >= max_pages_ || std::uint64_t{head_bytes} + rest_bytes > slot_bytes()) {
    std::memset(head, 0, head_bytes);
    std::memset(rest, 0, rest_bytes);
    return;
  }
  for_each_stretch(page, 0, head_bytes + rest_bytes, [&](std::uint64_t at, std::uint32_t offset, std::uint32_t n) {
    // The stretch may fall on both sides of the split between head and rest.
    while (n > 0) {
      std::byte* to = offset < head_bytes ? static_cast<std::byte*>(head) + offset
                                          : static_cast<std::byte*>(rest) + (offset - head_bytes);
      const std::uint32_t k = offset < head_bytes ? std::min(n, head_bytes - offset) : n;
      if (const std::byte* from = mapped(at, k)) std::memcpy(to, from, k);
      else read_fully(fd_, path_, at, to, k);
      at += k;
      offset += k;
      n -= k;
    }
  });
}

bool page_file::image_at(std::uint64_t page, std::uint64_t& offset, const std::byte*& bytes) const {
  if (page >= max_pages_) return false;
  offset = group_offset(page) + block + page % per_group_ * std::uint64_t{image_bytes_};
  bytes = mapped(offset, image_bytes_);
  return bytes != nullptr;
}

void page_file::grown_to(std::uint64_t end) {
  // Records written in place come from a thread of their own
  // (slot_writer.hpp): the size only ever grows.
  std::uint64_t size = size_.load(std::memory_order_relaxed);
  while (end > size && !size_.compare_exchange_weak(size, end, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

std::uint64_t page_file::slots() const {
  // Every page of a group the file reaches into: what of a record is past
  // the end of the file reads as zero.
  const std::uint64_t size = size_.load(std::memory_order_acquire);
  if (size <= header_bytes) return 0;
  return std::min(max_pages_, (size - header_bytes + group_bytes_ - 1) / group_bytes_ * per_group_);
}

int page_file::write_all(std::uint64_t at, std::span<iovec> iov) {
  for (std::size_t i = 0;;) {
    while (i < iov.size() && iov[i].iov_len == 0) ++i;  // nothing to write there
    if (i == iov.size()) return 0;
    const int count = static_cast<int>(std::min<std::size_t>(iov.size() - i, IOV_MAX));
    const ssize_t w = ::pwritev(fd_, iov.data() + i, count, static_cast<off_t>(at));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    at += static_cast<std::uint64_t>(w);
    grown_to(at);
    // A write cut short goes on where it stopped.
    for (auto left = static_cast<std::size_t>(w); left > 0;) {
      if (left >= iov[i].iov_len) {
        left -= iov[i].iov_len;
        ++i;
      } else {
        iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
        iov[i].iov_len -= left;
        left = 0;
      }
    }
  }
}

int page_file::write(std::uint64_t page, std::uint32_t offset, const void* p, std::uint32_t len) {
  if (page >= max_pages_ || std::uint64_t{offset} + len > slot_bytes()) return EFBIG;
  int rc = 0;
  for_each_stretch(page, offset, len, [&](std::uint64_t at, std::uint32_t from_offset, std::uint32_t n) {
    iovec v{const_cast<char*>(static_cast<const char*>(p)) + (from_offset - offset), n};
    if (rc == 0) rc = write_all(at, {&v, 1});
  });
  if (rc == 0 && sync_each_ && ::fdatasync(fd_) != 0) rc = errno;
  return rc;
}

int page_file::write_records(std::uint64_t first, std::span<const std::byte* const> records) {
  const std::uint64_t n = records.size();
  if (n == 0) return 0;
  if (first >= max_pages_ || n > max_pages_ - first) return EFBIG;
  std::vector<iovec> iov;
  for (std::uint64_t k = 0; k < n;) {
    // The pages of one group: their heads side by side in its first block,
    // their images one after the other after it.
    const std::uint64_t page = first + k, within = page % per_group_;
    const std::uint64_t run = std::min<std::uint64_t>(n - k, per_group_ - within);
    for (int part = 0; part < 2; ++part) {
      iov.clear();
      for (std::uint64_t i = k; i < k + run; ++i) {
        auto* rec = const_cast<std::byte*>(records[i]);
        iov.push_back(part == 0 ? iovec{rec, head_bytes_} : iovec{rec + head_bytes_, image_bytes_});
      }
      const std::uint64_t at = group_offset(page) + (part == 0 ? within * head_bytes_ : block + within * image_bytes_);
      if (const int rc = write_all(at, iov); rc != 0) return rc;
    }
    k += run;
  }
  if (sync_each_ && ::fdatasync(fd_) != 0) return errno;
  return 0;
}

int page_file::write_pieces(std::uint64_t page, std::span<const piece> pieces) {
  if (pieces.size() <= 2) {
    for (const piece& p : pieces)
      if (int rc = write(page, p.offset, p.bytes, p.length)) return rc;
    return 0;
  }
  std::uint64_t first = slot_bytes(), end = 0;
  for (const piece& p : pieces) {
    first = std::min<std::uint64_t>(first, p.offset);
    end = std::max(end, std::uint64_t{p.offset} + p.length);
  }
  if (page >= max_pages_ || end > slot_bytes()) return EFBIG;
  if (first >= end) return 0;
  // The record as the file holds it up to the last piece's end, the pieces
  // laid over it in their order (as writing them one by one would leave
  // it), written from the first piece's start.
  thread_local std::unique_ptr<std::byte[]> buf;
  thread_local std::uint32_t buf_bytes = 0;
  if (buf_bytes < slot_bytes()) {
    buf.reset(new std::byte[slot_bytes()]);
    buf_bytes = slot_bytes();
  }
  try {
    read(page, buf.get(), static_cast<std::uint32_t>(end));
  } catch (const std::exception&) {
    return EIO;
  }
  for (const piece& p : pieces) std::memcpy(buf.get() + p.offset, p.bytes, p.length);
  return write(page, static_cast<std::uint32_t>(first), buf.get() + first, static_cast<std::uint32_t>(end - first));
}

int page_file::reserve(std::uint64_t pages) {
  if (pages > max_pages_) return EFBIG;
  if (pages == 0) return 0;
  const std::uint64_t need = end_of(pages - 1);
  if (need <= reserved_) return 0;
  const std::uint64_t to = need + reserve_ahead;
  int rc = ::posix_fallocate(fd_, static_cast<off_t>(reserved_), static_cast<off_t>(to - reserved_));
  if (rc != 0) return rc;
  reserved_ = to;
  grown_to(to);
  return 0;
}

int page_file::sync() { return ::fdatasync(fd_) == 0 ? 0 : errno; }

}  // namespace qs::detail
