// qs/format/mapping.hpp: a page's mapping object, and the relocation of pointers.
//
// Pointers are stored on disk as the virtual addresses they had in memory.
// Each page's mapping object lists the runs of frames its pointer words
// pointed into when the page was last written, and which pages were there:
// one entry per run, {address of the run's first frame, the run's first
// page, the run's length in pages} (a run is one small page, or all the
// pages of a large object, which stay contiguous). When the page is faulted
// in, each run is given frames in this process (its old ones when they are
// free); a run that moved becomes a relocation, and every pointer word into
// it is rewritten.
//
// Invariants:
//  * entries are sorted by address, their address ranges are disjoint, and
//    every pointer word of the page (other than null) falls in one of them.
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

// The entry of `m` whose run holds `pointer`, or nullptr.
const mapping_entry* find_run(const mapping& m, std::uint64_t pointer, std::uint32_t page_size);

}  // namespace qs::detail
