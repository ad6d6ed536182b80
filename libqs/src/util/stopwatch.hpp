// util/stopwatch.hpp: nanoseconds since a moment, for the time fields of
// qs::statistics (fault, fetch, mapping, swizzle, protect, commit).
//
// Thread-safety: pure function.
#pragma once

#include <chrono>
#include <cstdint>

namespace qs::detail {

inline std::uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace qs::detail
