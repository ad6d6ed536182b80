// CRC-32C (Castagnoli), with the SSE4.2 instruction when the CPU has it.
#include <qs/format/checksum.hpp>

#include <array>
#include <cstring>

namespace qs::detail {
namespace {

std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

std::uint32_t crc_soft(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  static const auto table = make_table();
  while (n--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

__attribute__((target("sse4.2"))) std::uint32_t crc_hard(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    c = __builtin_ia32_crc32di(c, w);
    p += 8;
    n -= 8;
  }
  std::uint32_t c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

const bool have_sse42 = __builtin_cpu_supports("sse4.2");

}  // namespace

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t n) noexcept {
  auto p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  crc = have_sse42 ? crc_hard(crc, p, n) : crc_soft(crc, p, n);
  return ~crc;
}

std::uint32_t record_header_checksum(const record_header& h) noexcept {
  record_header z = h;
  z.checksum = 0;
  return crc32c(0, &z, sizeof z);
}

std::uint32_t record_checksum(const record_header& h, const std::byte* image, std::size_t n) noexcept {
  return crc32c(record_header_checksum(h), image, n);
}

}  // namespace qs::detail
