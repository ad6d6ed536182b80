// core/diff.hpp: the byte ranges in which a page differs from its before-image.
//
// Compares word by word and merges two ranges when the gap between them costs
// less to log than a second record would (Berkeley DB logs each partial put
// with a fixed overhead, and both the old and the new bytes of each range).
#pragma once

#include "store/store.hpp"

#include <cstdint>
#include <vector>

namespace qs::detail {

// Appends to `out` the ranges where `now` differs from `before` (n bytes, a
// multiple of 8). Ranges are 8-byte aligned, sorted and disjoint.
void diff_pages(const std::byte* before, const std::byte* now, std::uint32_t n, std::vector<byte_range>& out,
                std::uint32_t merge_gap = 64);

}  // namespace qs::detail
