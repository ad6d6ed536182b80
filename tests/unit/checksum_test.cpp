// CRC-32C: the standard check value, and the same CRC whether a buffer is
// taken whole (three streams at once for long ones) or a byte at a time.
#include <catch2/catch.hpp>

#include <qs/format/checksum.hpp>

#include <cstdint>
#include <random>
#include <vector>

using qs::detail::crc32c;

TEST_CASE("crc32c: the check value of \"123456789\"") {
  CHECK(crc32c(0, "123456789", 9) == 0xE3069283u);
  CHECK(crc32c(0, "", 0) == 0u);
}

TEST_CASE("crc32c: a buffer whole gives what its bytes give one at a time") {
  std::mt19937_64 rng(29);
  std::vector<unsigned char> buf(20000);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (std::size_t n : {1u, 7u, 8u, 127u, 384u, 385u, 1000u, 3071u, 3072u, 3073u, 8192u, 8256u, 12345u, 20000u}) {
    for (std::size_t at : {0u, 1u, 5u}) {
      if (at + n > buf.size()) continue;
      std::uint32_t bytewise = 17;
      for (std::size_t i = 0; i < n; ++i) bytewise = crc32c(bytewise, buf.data() + at + i, 1);
      INFO("n " << n << " at " << at);
      CHECK(crc32c(17, buf.data() + at, n) == bytewise);
    }
  }
}
