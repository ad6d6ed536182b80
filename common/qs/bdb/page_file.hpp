// qs/bdb/page_file.hpp: the file of fixed-size records that holds the page records of
// an environment laid out with a page file (bdb_env.hpp), instead of
// pages.db's B-tree.
//
// `pages.qs` starts with a header block (a magic number, the format version,
// the sizes of a record's head and image). Page i's record is its head (a
// record_header) and its image, kept apart so that every image lies at an
// offset that is a multiple of 4096: the file is a run of groups, each a
// 4096-byte block of the heads of per_group() pages, then their images, one
// after the other, in page order. A page's image can thus be mapped from the
// file as it is. A record whose head's first four bytes are zero, or that
// lies past the end of the file, is no record.
//
// The file holds what committed transactions wrote: page_log.hpp logs
// every change in Berkeley DB's log, in the transaction, and writes it here
// once the commit is in the log; recovery writes it again from the log.
// The one exception: a bulk transaction writes the records of the pages it
// adds into slots nothing committed holds, in place, unlogged, and the file
// is synced before its commit record (fresh_slots.hpp); an uncommitted one
// leaves records in slots past the committed pages.
// Nothing here is synced but by sync(), which the environment calls before
// every checkpoint (after which recovery no longer replays what came
// before). During recovery, writes are synced one by one instead
// (sync_each_write): Berkeley DB checkpoints at the end of recovery, with no
// hook before it.
//
// The blocks records are written into are reserved first (reserve), so that a
// write made after a commit returned never needs room the disk may not have.
//
// Reads copy from a read-only shared mapping of the file, grown as the
// file grows, so that a cold read takes the kernel's read-around as a
// mapped file's fault does (the records a program reads together are often
// neighbours); past the mapping, and where address space could not be
// reserved, they are preads. As with any mapped file, an I/O error under
// such a read ends the process with SIGBUS; nothing committed is lost by
// it.
//
// Everything read from the file is the caller's to check (a record's
// checksum, its fields): the file is trusted for nothing but its header.
//
// Thread-safety: reads from any number of threads at once; writes, reserve
// and sync from one thread at a time (bdb_env's writer), except that the
// thread writing records in place (slot_writer.hpp) writes into slots no
// other write touches, beside it.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

namespace qs::detail {

class page_file {
 public:
  static constexpr const char* file_name = "pages.qs";
  static constexpr std::uint32_t header_bytes = 4096;

  // Opens `dir`'s page file: nullptr when there is none. Throws
  // qs::store_error when it cannot be opened, or its header is not a page
  // file's (naming the file and what is wrong).
  static std::unique_ptr<page_file> open(const std::string& dir);
  // Creates `dir`'s page file for records of a head of `head_bytes` and an
  // image of `image_bytes` (a multiple of 4096), its header synced (its
  // directory entry is the caller's to sync). Throws qs::invalid_argument
  // for sizes it cannot lay out, qs::store_error when it cannot write.
  static std::unique_ptr<page_file> create(const std::string& dir, std::uint32_t head_bytes, std::uint32_t image_bytes);
  ~page_file();
  page_file(const page_file&) = delete;
  page_file& operator=(const page_file&) = delete;

  // A record's bytes: its head, then its image. Every offset into a record
  // below counts from its head's first byte.
  std::uint32_t slot_bytes() const { return head_bytes_ + image_bytes_; }
  std::uint32_t head_bytes() const { return head_bytes_; }
  std::uint32_t image_bytes() const { return image_bytes_; }
  // Pages per group (their heads fill one 4096-byte block).
  std::uint32_t per_group() const { return per_group_; }
  const std::string& path() const { return path_; }

  // Reads the first `cap` bytes (at most a record) of page's record into buf;
  // bytes past the end of the file read as zero. Throws qs::store_error on
  // an I/O error.
  void read(std::uint64_t page, void* buf, std::uint32_t cap) const;
  // Reads page's record into two places: its first head_bytes at head, the
  // next rest_bytes at rest.
  void read_into(std::uint64_t page, void* head, std::uint32_t head_bytes, void* rest, std::uint32_t rest_bytes) const;

  // Where page's image lies in the file (a multiple of 4096), and its bytes
  // in the file's mapping, when the mapping reaches past them; false when
  // it does not. The bytes stay mapped as long as the page_file lives.
  bool image_at(std::uint64_t page, std::uint64_t& offset, const std::byte*& bytes) const;
  // The file, open for reading (for a mapping of its images).
  int fd() const { return fd_; }

  // How many pages the file reaches now (pages past them hold no record;
  // some below may hold none either). The file grows only through this
  // page_file (one process owns an environment), which keeps its size: no
  // system call.
  std::uint64_t slots() const;

  // Writes `len` bytes at `offset` of page's record; 0 or the errno of the
  // failure.
  int write(std::uint64_t page, std::uint32_t offset, const void* p, std::uint32_t len);
  // Writes the whole records of pages first, first + 1, ... (each
  // slot_bytes() long, records[i] page first + i's): one write of the
  // heads and one of the images for the pages of each group, where
  // write() would take two a page. 0 or the errno of the failure (some of
  // them may be written then).
  int write_records(std::uint64_t first, std::span<const std::byte* const> records);
  // A range of a record and its new bytes.
  struct piece {
    std::uint32_t offset;
    std::uint32_t length;
    const void* bytes;
  };
  // Writes `pieces` into page's record, leaving what writing them one by
  // one in their order would: 0 or the errno of the failure. More than two
  // go out as one write of the stretch they span, the bytes between them
  // read from the file first, so that a record changed in many small
  // places costs a system call, not one a piece. Those bytes are written
  // back as the file holds them: no other thread writes the record
  // meanwhile (see Thread-safety), and a write cut short by a crash leaves
  // them as they were.
  int write_pieces(std::uint64_t page, std::span<const piece> pieces);
  // Makes sure the blocks of the records of pages below `pages` are allocated
  // (ahead by a few MiB); 0 or the errno of the failure.
  int reserve(std::uint64_t pages);
  // Flushes what was written to the disk; 0 or the errno of the failure.
  int sync();
  // While on, every write is on the disk when it returns (recovery).
  void sync_each_write(bool on) { sync_each_ = on; }

 private:
  page_file(std::string path, int fd, std::uint32_t head_bytes, std::uint32_t image_bytes, std::uint64_t size);
  // Notes that the file reaches at least `end` bytes.
  void grown_to(std::uint64_t end);
  // Writes all of `iov` (its entries may be advanced) at `at`, going on
  // where a write was cut short; 0 or the errno of the failure.
  int write_all(std::uint64_t at, std::span<iovec> iov);
  // Where the file's bytes [offset, offset + len) are mapped, mapping more
  // of the file when it has grown; null when they are not (past its end).
  const std::byte* mapped(std::uint64_t offset, std::uint64_t len) const;
  // Calls f(file offset, record offset, bytes) for each of the (at most
  // two) stretches of the file that bytes [offset, offset + len) of page's
  // record are.
  template <class F>
  void for_each_stretch(std::uint64_t page, std::uint32_t offset, std::uint32_t len, F&& f) const;
  std::uint64_t group_offset(std::uint64_t page) const { return header_bytes + page / per_group_ * group_bytes_; }
  // The file offset just past page's record.
  std::uint64_t end_of(std::uint64_t page) const {
    return group_offset(page) + header_bytes + (page % per_group_ + 1) * std::uint64_t{image_bytes_};
  }

  std::string path_;
  int fd_;
  std::uint32_t head_bytes_;
  std::uint32_t image_bytes_;
  std::uint32_t per_group_;
  std::uint64_t group_bytes_;
  std::uint64_t max_pages_;     // pages whose offsets fit in an off_t, with room
  std::uint64_t reserved_ = 0;  // bytes of the file known to be allocated
  // The file's size: what it was at open, grown by every write and
  // reservation since (read by any thread, written by the writer).
  std::atomic<std::uint64_t> size_;
  bool sync_each_ = false;
  // The mapping: address space for map_span bytes, of which the first
  // map_len_ are the file's (a multiple of the OS page size).
  std::byte* map_ = nullptr;
  mutable std::atomic<std::uint64_t> map_len_{0};
  mutable std::mutex map_mutex_;  // guards growing the mapping
};

}  // namespace qs::detail
