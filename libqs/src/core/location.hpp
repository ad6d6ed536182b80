// core/location.hpp: the 24-byte encoding of a persistent reference kept outside
// pages (roots, index entries), big-endian fields.
//
//   hardware mode: page (8), offset in its run (4), run length in pages (4),
//                  run address when stored (8)
//   software mode: page (8), offset (4), zero (4), tag (8)
//
// Invariants: exactly 24 bytes; decode refuses any other size with
// qs::corrupt_page naming the database.
//
// Thread-safety: pure functions.
#pragma once

#include <qs/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace qs::detail {

struct location {
  std::uint64_t page = 0;
  std::uint32_t offset = 0;
  std::uint32_t run_pages = 0;  // software mode: 0
  std::uint64_t last = 0;       // the run's address (hardware mode) or the tag (software mode)
};

inline void put_be(std::string& s, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline std::uint64_t get_be(std::string_view s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

inline std::string encode_location(const location& l) {
  std::string s;
  put_be(s, l.page, 8);
  put_be(s, l.offset, 4);
  put_be(s, l.run_pages, 4);
  put_be(s, l.last, 8);
  return s;
}

inline location decode_location(std::string_view s) {
  if (s.size() != 24) throw corrupt_page(0, "a stored reference has " + std::to_string(s.size()) + " bytes, not 24");
  return {get_be(s, 0, 8), static_cast<std::uint32_t>(get_be(s, 8, 4)), static_cast<std::uint32_t>(get_be(s, 12, 4)),
          get_be(s, 16, 8)};
}

}  // namespace qs::detail
