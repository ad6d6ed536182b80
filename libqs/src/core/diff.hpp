// core/diff.hpp: the byte ranges in which a page differs from its before-image.
//
// Compares word by word and merges two ranges when the gap between them costs
// less to log than a second range would: the store says what that is
// (store::range_merge_gap; a Berkeley DB partial put logs a fixed overhead
// and both the old and the new bytes of each range, a page file's log
// record 8 bytes a range).
#pragma once

#include "store/store.hpp"

#include <cstdint>
#include <vector>

namespace qs::detail {

// Appends to `out` the ranges where `now` differs from `before` (n bytes, a
// multiple of 8). Ranges are 8-byte aligned, sorted and disjoint; two are
// merged when fewer than `merge_gap` equal bytes lie between them.
void diff_pages(const std::byte* before, const std::byte* now, std::uint32_t n, std::vector<byte_range>& out,
                std::uint32_t merge_gap);

}  // namespace qs::detail
