// qs/format/mapping.hpp: a page's mapping object, and the relocation of pointers.
//
// Pointers are stored on disk as the virtual addresses they had in memory.
// Each page's mapping object lists the runs of frames its pointer words
// pointed into when the page was last written, and which pages were there:
// one entry per run, {address of the run's first frame, the run's first
// page, the run's length in pages} (a run is one small page, or all the
// pages of a large object, which stay contiguous). When the page is faulted
// in, each run is given frames in this process (its home frames when they
// can be had); a run that moved becomes a relocation, and every pointer word
// into it is rewritten.
//
// Home frames. Page p (p >= 1) of a database has a home frame, p - 1, when
// that falls in the first three quarters of the reservation the database
// was created with (home_region). No other page ever takes a home frame:
// pages that cannot be at home (the test harness's forced relocation, pages
// past the home region) take frames from the last quarter. So a pointer into
// a small page at its home frame, written by a process whose reservation is
// at the database's preferred base, needs no entry: it names its page by its
// value alone, and a page whose pointers all lead home has an empty mapping
// object. A fault on a home frame no page holds yet is a fault on its page.
//
// Invariants:
//  * entries are sorted by address, their address ranges are disjoint, and
//    every pointer word of the page (other than null) falls in one of them
//    or is home-form: inside the home region and leading to a small page.
//  * the encoding is a sequence of varints, three per entry (mapping.cpp),
//    with nothing else; run addresses are multiples of the page size, and
//    the encoding cannot express entries out of order or overlapping.
//
// Thread-safety: values; a builder or moved_runs is used by one thread at a
// time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qs::detail {

struct mapping_entry {
  std::uint64_t address;  // where the run's first frame was
  std::uint64_t page;     // the run's first page
  std::uint32_t pages;    // the run's length
  friend bool operator==(const mapping_entry&, const mapping_entry&) = default;
};
using mapping = std::vector<mapping_entry>;

// `m` as the builder makes it (sorted, disjoint, addresses page-aligned).
std::string encode_mapping(const mapping& m, std::uint32_t page_size);
// nullopt when the bytes are not a well-formed mapping.
std::optional<mapping> decode_mapping(std::string_view bytes, std::uint32_t page_size);

// Builds a mapping from the runs pointers fall into: adds the run
// {address, page, pages} unless it is already there. Call finish() once.
class mapping_builder {
 public:
  void add(std::uint64_t address, std::uint64_t page, std::uint32_t pages);
  mapping finish();

 private:
  mapping entries_;
};

// One run that moved: [from, from + length) is now at [to, to + length).
struct moved_run {
  std::uint64_t from;
  std::uint64_t to;
  std::uint64_t length;
};

// Relocations sorted by `from`; answers where a stored pointer points now.
class moved_runs {
 public:
  explicit moved_runs(std::vector<moved_run> moves);
  bool empty() const { return moves_.empty(); }
  // The pointer's new value, or nullopt when its run did not move.
  std::optional<std::uint64_t> moved(std::uint64_t pointer) const;

 private:
  std::vector<moved_run> moves_;
};

// The home frames of a database: the first three quarters of the frames of
// the reservation it was created with, from its preferred base.
struct home_region {
  std::uint64_t base = 0;    // the preferred base (metadata "base")
  std::uint64_t frames = 0;  // home frames: those of pages 1 .. frames
  std::uint32_t page_size = 0;

  static home_region of(std::uint64_t base, std::uint64_t reservation_bytes, std::uint32_t page_size) {
    return {base, reservation_bytes / page_size / 4 * 3, page_size};
  }
  // The page whose home frame holds the home-form pointer v, or 0 when v
  // is outside the region.
  std::uint64_t page_of(std::uint64_t v) const {
    if (v < base || v - base >= frames * page_size) return 0;
    return (v - base) / page_size + 1;
  }
  // The home frame of page p, or nullopt when it has none.
  std::optional<std::uint64_t> frame_of_page(std::uint64_t p) const {
    if (p == 0 || p - 1 >= frames) return std::nullopt;
    return p - 1;
  }
};

// The entry of `m` whose run holds `pointer`, or nullptr.
const mapping_entry* find_run(const mapping& m, std::uint64_t pointer, std::uint32_t page_size);

}  // namespace qs::detail
