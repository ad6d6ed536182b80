// qs/format/keys.hpp: the metadata records of a database, and their encodings.
//
//   "format"        "qs 5" (hardware mode) or "qs 5 software"
//   "page_size"     page size in bytes (decimal)
//   "base"          preferred base address of the reservation (decimal)
//   "reservation"   size of the reservation in bytes (decimal)
//   "next_page"     persistent page counter (decimal)
//   "next_frame"    persistent frame counter (decimal)
//   "s:" + page     a small-object page with room: "frame bytes"
//   "t:" + name     a stored type layout (schema_registry.cpp)
//   "r:" + name     a named root: "run-address page pages offset mangled-type-name"
//
// Page numbers in keys are big-endian, so that keys sort by page.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qs::detail {

// The formats this qs writes and reads, one a mode. Format 5 stores a
// pointer to a small page at its home frame without a mapping entry
// (mapping.hpp); format 4, before it, listed every page pointed to.
inline constexpr const char* format_hardware = "qs 5";
inline constexpr const char* format_software = "qs 5 software";
inline constexpr const char* format_previous_hardware = "qs 4";
inline constexpr const char* format_previous_software = "qs 4 software";

inline std::string be64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[i] = static_cast<char>(v & 0xff);
  return s;
}
inline std::uint64_t from_be64(std::string_view s) {
  std::uint64_t v = 0;
  for (unsigned char c : s.substr(0, 8)) v = (v << 8) | c;
  return v;
}
inline std::string space_key(std::uint64_t page) { return "s:" + be64(page); }
// A decimal counter's value ("next_page", "next_frame"): 0 when the record
// is not 1 to 19 decimal digits (a damaged record says nothing).
inline std::uint64_t decimal_counter(std::string_view s) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string_view::npos) return 0;
  std::uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  return v;
}

}  // namespace qs::detail
