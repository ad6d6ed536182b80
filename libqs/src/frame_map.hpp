// frame_map.hpp: which frames of the reservation are free in this process.
//
// Every page the process knows of holds a run of frames: one for a small
// page, one per page for a large object (its pages stay contiguous in
// memory). A page keeps the frames its pointers were written against when
// they are free here; otherwise it is given other frames and the pointers to
// it are rewritten as pages come in (relocation, see mapping.hpp). The
// frame_map only knows which frames are taken; the page table knows by whom.
//
// Invariants:
//  * free runs are disjoint, sorted, non-empty, and never adjacent (merged).
//  * take(start, n) succeeds only when every frame of [start, start + n) is
//    free; find(n) returns the start of a free run of n frames or nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace qs::detail {

class frame_map {
 public:
  explicit frame_map(std::uint64_t frames) : frames_(frames) { free_[0] = frames; }

  std::uint64_t frames() const { return frames_; }
  std::uint64_t free_frames() const { return frames_ - taken_; }

  // Whether every frame of [start, start + n) is free.
  bool is_free(std::uint64_t start, std::uint64_t n) const;
  // Takes [start, start + n); false (and nothing taken) unless all are free.
  bool take(std::uint64_t start, std::uint64_t n);
  // A free run of n frames at or after `from` (wrapping around), or none.
  std::optional<std::uint64_t> find(std::uint64_t n, std::uint64_t from = 0) const;
  void give_back(std::uint64_t start, std::uint64_t n);
  // Every frame free again.
  void reset();

 private:
  std::uint64_t frames_;
  std::uint64_t taken_ = 0;
  std::map<std::uint64_t, std::uint64_t> free_;  // start -> length
};

}  // namespace qs::detail
