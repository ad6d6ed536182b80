// Frames populated ahead of new pages, on a helper thread (fresh_frames.hpp).
#include "core/fresh_frames.hpp"

#include "util/signal_free_thread.hpp"

#include <algorithm>

namespace qs::detail {

fresh_frames::fresh_frames(frame_space& frames)
    : frames_(frames), enabled_(std::thread::hardware_concurrency() > 1), generation_(fork_generation()) {}

fresh_frames::~fresh_frames() {
  if (!h_) return;
  if (generation_ != fork_generation()) {
    // A forked child's copy: the thread is the parent's, and not here.
    (void)h_.release();
    return;
  }
  {
    lock_guard g(h_->m);
    h_->stop = true;
  }
  h_->wake.notify_one();
  h_->thread.join();
}

void fresh_frames::took(std::uint64_t f, std::uint64_t mine) {
  if (!enabled_) return;
  const bool inside = f >= ahead_begin_ && f < ahead_end_;
  const bool extend = !inside || ahead_end_ - f <= window / 2;
  ahead_begin_ = f + 1;
  if (extend) ahead_end_ = f + 1 + std::min({window, mine, frames_.frames() - (f + 1)});
  if (!h_) {
    if (!extend || ahead_begin_ >= ahead_end_) return;
    start_helper();
  }
  {
    lock_guard g(h_->m);
    // The helper never works behind the program: a frame the program
    // reached first got its memory there.
    h_->want_begin = inside ? std::max(h_->want_begin, ahead_begin_) : ahead_begin_;
    if (!extend) return;
    h_->want_end = ahead_end_;
  }
  h_->wake.notify_one();
}

void fresh_frames::start_helper() {
  auto h = std::make_unique<helper_state>();
  h->thread = start_signal_free_thread([this, p = h.get()] { helper(*p); });
  h_ = std::move(h);
}

void fresh_frames::give_memory(const zeroed_memory& m, std::size_t offset, std::size_t bytes) {
  if (!enabled_) {
    (void)m.populate(offset, bytes);  // a kernel without it: pages get memory when written
    return;
  }
  if (!h_) start_helper();
  {
    lock_guard g(h_->m);
    // Before-images are taken in order: the next range follows the last,
    // unless a transaction ended in between (then the old one is dropped).
    if (h_->memory == &m && h_->memory_begin < h_->memory_end && h_->memory_end == offset) {
      h_->memory_end = offset + bytes;
    } else {
      h_->memory = &m;
      h_->memory_begin = offset;
      h_->memory_end = offset + bytes;
    }
  }
  h_->wake.notify_one();
}

std::pair<std::uint64_t, std::uint64_t> fresh_frames::drop() {
  if (!h_) return {0, 0};
  {
    unique_lock l(h_->m);
    h_->want_begin = h_->want_end = 0;
    h_->memory_begin = h_->memory_end = 0;
    while (h_->busy) h_->idle.wait(l);
  }
  return {std::exchange(ahead_begin_, 0), std::exchange(ahead_end_, 0)};
}

void fresh_frames::helper(helper_state& h) {
  unique_lock l(h.m);
  for (;;) {
    while (!h.stop && h.want_begin >= h.want_end && h.memory_begin >= h.memory_end) h.wake.wait(l);
    if (h.stop) return;
    h.busy = true;
    if (h.want_begin < h.want_end) {
      // A few frames at a time, so that the program, when it catches up,
      // moves the helper past the frames it reached.
      const std::uint64_t b = h.want_begin, e = std::min(h.want_end, b + chunk);
      h.want_begin = e;
      l.unlock();
      (void)frames_.populate(b, e - b);  // a kernel without it: pages get memory when built
    } else {
      const zeroed_memory* m = h.memory;
      const std::size_t b = h.memory_begin, e = std::min(h.memory_end, b + memory_chunk);
      h.memory_begin = e;
      l.unlock();
      (void)m->populate(b, e - b);
    }
    l.lock();
    h.busy = false;
    h.idle.notify_all();
  }
}

}  // namespace qs::detail
