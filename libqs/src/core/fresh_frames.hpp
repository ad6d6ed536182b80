// core/fresh_frames.hpp: memory for the frames of the pages this process
// creates next, and for the next before-images, given by a helper thread
// before the pages need it.
//
// A new page is built in its frame's memory through the runtime's view and
// then shown (pager::page_in). Memory a frame gets on demand costs the
// kernel an allocation, a zeroing, a charge and a page-cache insertion,
// about as much as the rest of a new page together. New pages take the home
// frames of new page numbers, which are handed out in order, so the frames
// after the last new page's are the next ones's: a helper thread populates
// a window of them (frame_space::populate) while the program goes on, and a
// new page finds its memory there. Through a page server, whose numbers
// come in blocks, the window stops at the end of the block in hand: the
// frames after it are other clients' pages. The before-images of the pages
// a transaction writes are entries taken in order too (before_images.hpp):
// the helper gives the next ones their memory the same way (give_memory).
// With one core there is no helper: give_memory populates on the caller's
// thread, one system call for a batch.
//
// Invariants:
//  * Only frames at or after the last new page's frame are populated, at
//    most `window` of them past it; a frame populated ahead that another
//    page takes first is filled like any other (frame_space::fill_and_show
//    takes a frame that has memory), and one that no page takes holds a
//    zeroed page until drop() or the database's close.
//  * The helper never touches persistent memory or the runtime's state: it
//    asks the kernel for memory behind the runtime's view, nothing else.
//
// Thread-safety: took() and drop() are called by one thread at a time (the
// pager's caller, under the runtime's lock); the helper thread is this
// class's own, started with every signal blocked
// (util/signal_free_thread.hpp). A child made by fork() has no helper: its copy leaves the
// parent's thread alone.
#pragma once

#include "os/frames.hpp"
#include "util/thread_annotations.hpp"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>

namespace qs::detail {

class fresh_frames {
 public:
  // Frames to keep populated past the last new page's, and how many the
  // helper populates in one system call.
  static constexpr std::uint64_t window = 64;
  static constexpr std::uint64_t chunk = 8;
  static constexpr std::size_t memory_chunk = std::size_t{64} << 10;  // bytes, for give_memory

  explicit fresh_frames(frame_space& frames);
  ~fresh_frames();
  fresh_frames(const fresh_frames&) = delete;
  fresh_frames& operator=(const fresh_frames&) = delete;

  // A new page took frame f, and the `mine` frames after it are the homes
  // of pages only this process may create: up to a window of them are
  // populated ahead when fewer than half the window are.
  void took(std::uint64_t f, std::uint64_t mine);
  // Gives bytes [offset, offset + bytes) of `m` their memory (populate), on
  // the helper thread when there is one. `m` outlives this object.
  void give_memory(const zeroed_memory& m, std::size_t offset, std::size_t bytes);
  // Stops populating ahead, and waits for a populate under way, which may
  // cover frames the program has reached since it began; returns the
  // frames asked for and not taken, [first, second): the caller releases
  // those that hold no page, and releases any other frame's memory only
  // after drop() returned. (A populate that ran late behind the program,
  // after a page it reached had left the pool, leaves that frame memory
  // until its page comes back or the database closes.)
  std::pair<std::uint64_t, std::uint64_t> drop();

 private:
  // What the program's thread and the helper share. A forked child's copy
  // is left as it is: its condition variables have the parent's waiters.
  struct helper_state {
    mutex m;
    std::condition_variable_any wake;               // work, or stop
    std::condition_variable_any idle;               // the helper finished a range
    std::uint64_t want_begin QS_GUARDED_BY(m) = 0;  // to populate next
    std::uint64_t want_end QS_GUARDED_BY(m) = 0;
    const zeroed_memory* memory QS_GUARDED_BY(m) = nullptr;  // to give memory next
    std::size_t memory_begin QS_GUARDED_BY(m) = 0, memory_end QS_GUARDED_BY(m) = 0;
    bool busy QS_GUARDED_BY(m) = false;
    bool stop QS_GUARDED_BY(m) = false;
    std::thread thread;
  };
  void helper(helper_state& h);
  void start_helper();

  frame_space& frames_;
  const bool enabled_;  // a second core to run the helper on
  const std::uint64_t generation_;
  // The program's side: the frames asked for so far, [ahead_begin_, ahead_end_).
  std::uint64_t ahead_begin_ = 0, ahead_end_ = 0;
  std::unique_ptr<helper_state> h_;  // made by the first took()
};

}  // namespace qs::detail
