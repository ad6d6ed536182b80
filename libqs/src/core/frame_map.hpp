// core/frame_map.hpp: which frames of the reservation are free in this process.
//
// Every page the process knows of holds a run of frames: one for a small
// page, one per page for a large object (its pages stay contiguous in
// memory). A page keeps the frames its pointers were written against when
// they are free here; otherwise it is given other frames and the pointers to
// it are rewritten as pages come in (relocation, see mapping.hpp). The
// frame_map only knows which frames are taken; the page table knows by whom.
//
// A bitmap of the reservation's frames (a bit each: 1 MiB for the default
// 64 GiB of 8 KiB frames) and a summary bit per word of it that says the
// word is full: taking, giving back and testing a run cost the same however
// many pages the process knows and however scattered they are (a map of
// free runs cost a cache miss per level, a million runs deep at 10 GB).
//
// Invariants:
//  * taken_ == the number of set bits; full_ bit w == (bits_[w] is all ones).
//  * take(start, n) succeeds only when every frame of [start, start + n) is
//    free; find(n) returns the start of a free run of n frames or nothing.
//  * find(n, from, lo) never returns a run that starts before lo.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace qs::detail {

class frame_map {
 public:
  explicit frame_map(std::uint64_t frames);

  std::uint64_t frames() const { return frames_; }
  std::uint64_t free_frames() const { return frames_ - taken_; }

  // Whether every frame of [start, start + n) is free.
  bool is_free(std::uint64_t start, std::uint64_t n) const;
  // Takes [start, start + n); false (and nothing taken) unless all are free.
  bool take(std::uint64_t start, std::uint64_t n);
  // A free run of n frames in [lo, frames()), first fit at or after
  // `from` (wrapping around to `lo`), or none.
  std::optional<std::uint64_t> find(std::uint64_t n, std::uint64_t from = 0, std::uint64_t lo = 0) const;
  void give_back(std::uint64_t start, std::uint64_t n);
  // Every frame free again.
  void reset();

 private:
  // Sets or clears the bits of [start, start + n).
  void mark(std::uint64_t start, std::uint64_t n, bool taken);
  // The first free frame in [from, end), or end.
  std::uint64_t next_free(std::uint64_t from, std::uint64_t end) const;
  // The first taken frame in [from, end), or end.
  std::uint64_t next_taken(std::uint64_t from, std::uint64_t end) const;

  std::uint64_t frames_;
  std::uint64_t taken_ = 0;
  std::vector<std::uint64_t> bits_;  // bit f: frame f is taken
  std::vector<std::uint64_t> full_;  // bit w: bits_[w] is all ones
};

}  // namespace qs::detail
