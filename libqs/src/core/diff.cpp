#include "core/diff.hpp"

#include <cstring>

namespace qs::detail {

void diff_pages(const std::byte* before, const std::byte* now, std::uint32_t n, std::vector<byte_range>& out,
                std::uint32_t merge_gap) {
  const std::size_t first = out.size();
  std::uint32_t i = 0;
  while (i < n) {
    // Skip equal 64-byte blocks quickly, then equal words.
    if (i + 64 <= n && std::memcmp(before + i, now + i, 64) == 0) {
      i += 64;
      continue;
    }
    std::uint64_t a, b;
    std::memcpy(&a, before + i, 8);
    std::memcpy(&b, now + i, 8);
    if (a == b) {
      i += 8;
      continue;
    }
    std::uint32_t start = i;
    std::uint32_t end = i + 8;
    for (i = end; i < n; i += 8) {
      std::memcpy(&a, before + i, 8);
      std::memcpy(&b, now + i, 8);
      if (a != b) end = i + 8;
      else if (i - end >= merge_gap) break;
    }
    if (out.size() > first && start - (out.back().offset + out.back().length) < merge_gap)
      out.back().length = end - out.back().offset;
    else out.push_back({start, end - start});
    i = end;
  }
}

}  // namespace qs::detail
