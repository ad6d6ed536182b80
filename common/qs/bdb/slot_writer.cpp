// Records written into the page file by a thread of its own (see
// slot_writer.hpp).
#include <qs/bdb/slot_writer.hpp>

#include <cstring>
#include <span>
#include <vector>

namespace qs::detail {

slot_writer::slot_writer(page_file& file) : file_(file) {}

slot_writer::~slot_writer() {
  {
    // The writer writes what waits, however little, then ends.
    std::lock_guard<std::mutex> g(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int slot_writer::write(std::uint64_t page, const void* rec, std::uint32_t len, std::uint64_t& failed_page) {
  std::unique_lock<std::mutex> g(mutex_);
  if (error_ != 0) {
    failed_page = error_page_;
    return error_;
  }
  if (!thread_.joinable()) {
    items_.resize(depth);
    buffers_.resize(depth);
    thread_ = std::thread([this] { run(); });
  }
  room_.wait(g, [&] { return count_ < depth; });
  const std::size_t at = (head_ + count_) % depth;
  std::unique_ptr<std::byte[]>& buf = buffers_[at];
  // Every record of a file has the same length: a buffer, once made, fits.
  if (!buf || items_[at].len < len) buf = std::make_unique<std::byte[]>(len);
  // The copy under the mutex: the writer reads only buffers before the
  // ring's end, and this one is past it until count_ grows.
  std::memcpy(buf.get(), rec, len);
  items_[at] = {page, len};
  ++count_;
  pending_.store(count_, std::memory_order_release);
  const bool enough = count_ >= batch;
  g.unlock();
  if (enough) work_.notify_one();
  return 0;
}

int slot_writer::settle(std::uint64_t& failed_page) {
  std::unique_lock<std::mutex> g(mutex_);
  ++settling_;
  work_.notify_one();
  room_.wait(g, [&] { return count_ == 0; });
  --settling_;
  failed_page = error_page_;
  return error_;
}

void slot_writer::run() {
  std::vector<item> its;
  std::vector<const std::byte*> bufs;
  std::unique_lock<std::mutex> g(mutex_);
  for (;;) {
    // A batch, or whatever waits once someone waits for it (settle) or
    // the writer stops.
    work_.wait(g, [&] { return count_ >= batch || stop_ || (settling_ != 0 && count_ != 0); });
    if (count_ == 0) return;  // stopping, nothing left
    // Every record waiting now, in the order they came; the buffers stay
    // put until count_ shrinks. Records of consecutive pages go out as one
    // write of their heads and one of their images (page_file's
    // write_records), not two writes a page.
    const std::size_t taken = count_;
    its.resize(taken);
    bufs.resize(taken);
    for (std::size_t i = 0; i < taken; ++i) {
      its[i] = items_[(head_ + i) % depth];
      bufs[i] = buffers_[(head_ + i) % depth].get();
    }
    const bool failed = error_ != 0;
    g.unlock();
    // After a failure nothing more is written: the environment is broken,
    // and what follows it is no commit's.
    int e = 0;
    std::uint64_t e_page = 0;
    const std::uint32_t whole = file_.slot_bytes();
    for (std::size_t i = 0; i < taken && !failed && e == 0;) {
      std::size_t j = i + 1;
      if (its[i].len == whole)
        while (j < taken && its[j].len == whole && its[j].page == its[j - 1].page + 1) ++j;
      e = j - i > 1 ? file_.write_records(its[i].page, std::span<const std::byte* const>(bufs.data() + i, j - i))
                    : file_.write(its[i].page, 0, bufs[i], its[i].len);
      e_page = its[i].page;
      i = j;
    }
    g.lock();
    if (e != 0 && error_ == 0) {
      error_ = e;
      error_page_ = e_page;
    }
    head_ = (head_ + taken) % depth;
    count_ -= taken;
    pending_.store(count_, std::memory_order_release);
    room_.notify_all();
  }
}

}  // namespace qs::detail
