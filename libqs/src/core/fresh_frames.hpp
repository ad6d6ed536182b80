// core/fresh_frames.hpp: memory for the frames of the pages this process
// creates next, given by a helper thread before the pages need it.
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
// frames after it are other clients' pages.
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

  explicit fresh_frames(frame_space& frames);
  ~fresh_frames();
  fresh_frames(const fresh_frames&) = delete;
  fresh_frames& operator=(const fresh_frames&) = delete;

  // A new page took frame f, and the `mine` frames after it are the homes
  // of pages only this process may create: up to a window of them are
  // populated ahead when fewer than half the window are.
  void took(std::uint64_t f, std::uint64_t mine);
  // Stops populating ahead, once the helper is idle, and returns the frames
  // asked for and not taken since, [first, second): the caller releases
  // those that hold no page.
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
    bool busy QS_GUARDED_BY(m) = false;
    bool stop QS_GUARDED_BY(m) = false;
    std::thread thread;
  };
  void helper(helper_state& h);

  frame_space& frames_;
  const bool enabled_;  // a second core to run the helper on
  const std::uint64_t generation_;
  // The program's side: the frames asked for so far, [ahead_begin_, ahead_end_).
  std::uint64_t ahead_begin_ = 0, ahead_end_ = 0;
  std::unique_ptr<helper_state> h_;  // made by the first took()
};

}  // namespace qs::detail
