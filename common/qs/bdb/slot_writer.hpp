// qs/bdb/slot_writer.hpp: whole records written into the page file
// (page_file.hpp) by a thread of its own, so that the thread that hands
// them over goes on with the next page meanwhile.
//
// A bulk commit writes the records of the pages it adds in place
// (fresh_slots.hpp). On the committing thread each such write is a copy
// into the kernel's cache of the file, about a third of the commit of a
// million-node build, which the commit's checks and encoding of the next
// pages could overlap. write() copies the record into a buffer of a small
// ring and returns; the writer thread writes the buffers in the order they
// came, once `batch` of them wait (or someone settles), the records of
// consecutive pages among them as one run (page_file::write_records: a
// system call for their heads and one for their images).
// settle() waits until every record handed over is in the file (in the
// kernel's cache: syncing stays the caller's).
//
// Invariants:
//  * a record handed over is written exactly once, before settle() returns
//    (and before the slot_writer is destroyed);
//  * at most `depth` records wait at once: write() waits for room, so the
//    memory is bounded (depth times a record);
//  * the first failed write is kept: settle() and every later write()
//    report it (the environment breaks on it: fail_writes), and nothing
//    handed over after it is written.
//
// Thread-safety: write() and settle() from any number of threads at once
// (they take a mutex); records from different threads are written in no
// promised order, and the callers write different slots.
#pragma once

#include <qs/bdb/page_file.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace qs::detail {

class slot_writer {
 public:
  // Records in flight at most (64 of 8 KiB pages: half a MiB).
  static constexpr std::size_t depth = 64;
  // Records the writer waits for before it writes, unless settle() or the
  // destructor asks for what there is: the records of consecutive pages
  // among them go out as one run.
  static constexpr std::size_t batch = 16;

  explicit slot_writer(page_file& file);
  ~slot_writer();
  slot_writer(const slot_writer&) = delete;
  slot_writer& operator=(const slot_writer&) = delete;

  // Hands over page's whole record (len bytes: the file's slot_bytes()).
  // Returns 0, or the errno of a write that failed earlier (this record is
  // then not written), with its page in `failed_page`.
  int write(std::uint64_t page, const void* rec, std::uint32_t len, std::uint64_t& failed_page);
  // Waits until every record handed over is written; 0 or the errno of the
  // first write that failed, with its page in `failed_page` (a run's first
  // page, when it wrote a run of records).
  int settle(std::uint64_t& failed_page);
  // Whether records are waiting or being written (a hint: one load).
  bool busy() const { return pending_.load(std::memory_order_acquire) != 0; }

 private:
  struct item {
    std::uint64_t page = 0;
    std::uint32_t len = 0;
  };
  void run();

  page_file& file_;
  std::mutex mutex_;
  std::condition_variable work_;                       // the writer waits for records
  std::condition_variable room_;                       // write() waits for a free buffer, settle() for none pending
  std::vector<std::unique_ptr<std::byte[]>> buffers_;  // depth of them, made at the first write
  std::vector<item> items_;                            // the ring, depth of them
  std::size_t head_ = 0;                               // the next item to write
  std::size_t count_ = 0;                              // items in the ring, the one being written included
  std::atomic<std::size_t> pending_{0};                // count_, for busy()
  int error_ = 0;
  std::uint64_t error_page_ = 0;
  bool stop_ = false;
  int settling_ = 0;    // threads in settle()
  std::thread thread_;  // started at the first write
};

}  // namespace qs::detail
