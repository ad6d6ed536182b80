// qs/format/keys.hpp: the metadata records of a database, and their encodings.
//
//   "format"        "qs 4"
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

}  // namespace qs::detail
