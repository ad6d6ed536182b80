// Records written into the page file by a thread of its own (see
// slot_writer.hpp).
#include <qs/bdb/slot_writer.hpp>

#include <cstring>

namespace qs::detail {

slot_writer::slot_writer(page_file& file) : file_(file) {}

slot_writer::~slot_writer() {
  {
    std::unique_lock<std::mutex> g(mutex_);
    room_.wait(g, [&] { return count_ == 0; });
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
  g.unlock();
  work_.notify_one();
  return 0;
}

int slot_writer::settle(std::uint64_t& failed_page) {
  std::unique_lock<std::mutex> g(mutex_);
  room_.wait(g, [&] { return count_ == 0; });
  failed_page = error_page_;
  return error_;
}

void slot_writer::run() {
  std::unique_lock<std::mutex> g(mutex_);
  for (;;) {
    work_.wait(g, [&] { return count_ != 0 || stop_; });
    if (count_ == 0) return;  // stopping, nothing left
    const item it = items_[head_];
    const std::byte* buf = buffers_[head_].get();
    const bool failed = error_ != 0;
    g.unlock();
    // After a failure nothing more is written: the environment is broken,
    // and what follows it is no commit's.
    const int e = failed ? 0 : file_.write(it.page, 0, buf, it.len);
    g.lock();
    if (e != 0 && error_ == 0) {
      error_ = e;
      error_page_ = it.page;
    }
    head_ = (head_ + 1) % depth;
    --count_;
    pending_.store(count_, std::memory_order_release);
    room_.notify_all();
  }
}

}  // namespace qs::detail
