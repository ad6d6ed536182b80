// CRC-32C (Castagnoli), with the SSE4.2 instruction when the CPU has it.
#include <qs/format/checksum.hpp>

#include <array>
#include <cstring>
#include <vector>

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

__attribute__((target("sse4.2"))) std::uint64_t crc_words(std::uint64_t c, const unsigned char* p, std::size_t words) {
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    c = __builtin_ia32_crc32di(c, w);
  }
  return c;
}

// The CRC register after `bytes` zero bytes more, as a linear map of the
// register (a table per byte of it): what joins the CRCs of neighbouring
// blocks computed apart.
class zero_shift {
 public:
  explicit zero_shift(std::size_t bytes) {
    const std::vector<unsigned char> zeros(bytes, 0);
    std::uint32_t basis[32];
    for (int b = 0; b < 32; ++b) basis[b] = crc_soft(std::uint32_t{1} << b, zeros.data(), bytes);
    for (int k = 0; k < 4; ++k)
      for (std::uint32_t v = 0; v < 256; ++v) {
        std::uint32_t r = 0;
        for (int b = 0; b < 8; ++b)
          if (v >> b & 1) r ^= basis[8 * k + b];
        t_[k][v] = r;
      }
  }
  std::uint32_t operator()(std::uint32_t c) const {
    return t_[0][c & 0xff] ^ t_[1][c >> 8 & 0xff] ^ t_[2][c >> 16 & 0xff] ^ t_[3][c >> 24];
  }

 private:
  std::uint32_t t_[4][256];
};

// Three streams at once: the instruction's latency is three times its
// throughput, so one stream of dependent steps runs at a third of the speed
// the unit has. Blocks of 3 x `len` bytes while n holds one, each stream's
// CRC shifted over the next stream's bytes and joined to it.
__attribute__((target("sse4.2"))) std::uint64_t crc_blocks(std::uint64_t c, const unsigned char*& p, std::size_t& n,
                                                           std::size_t len, const zero_shift& shift) {
  while (n >= 3 * len) {
    std::uint64_t a = c, b = 0, d = 0;
    for (std::size_t i = 0; i < len; i += 8) {
      std::uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + len + i, 8);
      std::memcpy(&w2, p + 2 * len + i, 8);
      a = __builtin_ia32_crc32di(a, w0);
      b = __builtin_ia32_crc32di(b, w1);
      d = __builtin_ia32_crc32di(d, w2);
    }
    const std::uint32_t r = shift(static_cast<std::uint32_t>(a)) ^ static_cast<std::uint32_t>(b);
    c = shift(r) ^ static_cast<std::uint32_t>(d);
    p += 3 * len;
    n -= 3 * len;
  }
  return c;
}

// Blocks of 3 x 1024 bytes, then 3 x 128, then one stream.
__attribute__((target("sse4.2"))) std::uint32_t crc_hard(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  static const zero_shift shift_long(1024), shift_short(128);
  std::uint64_t c = crc;
  c = crc_blocks(c, p, n, 1024, shift_long);
  c = crc_blocks(c, p, n, 128, shift_short);
  c = crc_words(c, p, n / 8);
  p += n / 8 * 8;
  n %= 8;
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
