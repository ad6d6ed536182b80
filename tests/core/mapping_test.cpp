// The pieces of relocation: free frames, mapping objects, moved runs.
#include <catch2/catch.hpp>

#include <qs/format/mapping.hpp>
#include "core/frame_map.hpp"
#include "mode/page_access.hpp"
#include "os/frames.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <optional>
#include <vector>

using namespace qs::detail;

TEST_CASE("frame_map hands out free runs and merges what comes back") {
  frame_map f(100);
  CHECK(f.take(10, 5));
  CHECK_FALSE(f.take(12, 1));
  CHECK_FALSE(f.is_free(9, 2));
  CHECK(f.is_free(15, 85));
  CHECK_FALSE(f.is_free(15, 86));
  CHECK(f.find(10, 5) == 15u);  // [5, 10) is too short for 10 frames
  CHECK(f.find(5, 5) == 5u);
  CHECK(f.find(6, 5) == 15u);
  CHECK(f.find(11, 95) == 15u);  // wraps around to the first run that fits
  CHECK(f.free_frames() == 95);
  f.give_back(10, 5);
  CHECK(f.is_free(0, 100));
  CHECK(f.take(0, 100));
  CHECK_FALSE(f.find(1).has_value());
  f.reset();
  CHECK(f.free_frames() == 100);
}

TEST_CASE("frame_map agrees with a frame-by-frame oracle across word boundaries") {
  for (std::uint64_t frames : {64ull, 1000ull, 4096ull + 7, 70000ull}) {
    frame_map f(frames);
    std::vector<bool> taken(frames, false);
    auto oracle_free = [&](std::uint64_t start, std::uint64_t n) {
      if (n == 0 || start + n > frames) return false;
      for (std::uint64_t i = start; i < start + n; ++i)
        if (taken[i]) return false;
      return true;
    };
    // First fit from `from`, as frame_map::find promises: from itself, then
    // the runs starting after it, then the runs starting before it.
    auto oracle_find = [&](std::uint64_t n, std::uint64_t from) -> std::optional<std::uint64_t> {
      if (from < frames && oracle_free(from, n)) return from;
      for (std::uint64_t s = from; s < frames; ++s)
        if (!taken[s] && (s == 0 || taken[s - 1]) && oracle_free(s, n)) return s;
      for (std::uint64_t s = 0; s < from && s < frames; ++s)
        if (!taken[s] && (s == 0 || taken[s - 1]) && oracle_free(s, n)) return s;
      return std::nullopt;
    };
    std::uint64_t x = frames;
    auto next = [&] {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      return x >> 33;
    };
    std::uint64_t used = 0;
    for (int step = 0; step < 3000; ++step) {
      std::uint64_t start = next() % frames, n = 1 + next() % 130;
      INFO("frames " << frames << ", step " << step << ", [" << start << ", +" << n << ")");
      REQUIRE(f.is_free(start, n) == oracle_free(start, n));
      if (next() % 3 == 0) {
        // Give back a taken stretch inside [start, start + n).
        std::uint64_t end = std::min(frames, start + n), s = start;
        while (s < end && !taken[s]) ++s;
        std::uint64_t e = s;
        while (e < end && taken[e]) ++e;
        if (e > s) {
          f.give_back(s, e - s);
          for (std::uint64_t i = s; i < e; ++i) taken[i] = false;
          used -= e - s;
        }
      } else if (f.take(start, n)) {
        for (std::uint64_t i = start; i < start + n; ++i) taken[i] = true;
        used += n;
      }
      std::uint64_t want = 1 + next() % 200, from = next() % frames;
      REQUIRE(f.find(want, from) == oracle_find(want, from));
      REQUIRE(f.free_frames() == frames - used);
    }
  }
}

TEST_CASE("mapping objects encode, decode and find runs") {
  const std::uint32_t ps = 8192;
  mapping_builder b;
  b.add(0x100000 + 5 * ps, 7, 1);
  b.add(0x100000, 3, 4);  // a large object of four pages
  b.add(0x100000 + 5 * ps, 7, 1);
  mapping m = b.finish();
  REQUIRE(m.size() == 2);
  CHECK(m[0].page == 3);
  auto back = decode_mapping(encode_mapping(m, ps), ps);
  REQUIRE(back);
  CHECK(*back == m);
  CHECK(find_run(m, 0x100000 + 3 * ps + 17, ps)->page == 3);
  CHECK(find_run(m, 0x100000 + 4 * ps, ps) == nullptr);
  CHECK(find_run(m, 0x100000 + 5 * ps + 8, ps)->page == 7);
  CHECK_FALSE(decode_mapping("ab", ps));  // an entry cut short
  mapping overlapping{{0x100000, 1, 2}, {0x100000 + ps, 2, 1}};
  CHECK_FALSE(decode_mapping(encode_mapping(overlapping, ps), ps));
}

TEST_CASE("moved runs rewrite pointers into moved runs only") {
  moved_runs r({{0x2000, 0x9000, 0x2000}, {0x100, 0x500, 0x100}});
  CHECK(r.moved(0x2010) == 0x9010u);
  CHECK(r.moved(0x3fff) == 0xafffu);
  CHECK_FALSE(r.moved(0x4000));
  CHECK(r.moved(0x100) == 0x500u);
  CHECK_FALSE(r.moved(0x50));
}

TEST_CASE("a reservation placed anywhere is aligned to the page size") {
  // A hint the kernel will honour exactly: free, 4 KiB-aligned, not 8 KiB-aligned.
  void* probe = mmap(nullptr, 1 << 22, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(probe != MAP_FAILED);
  auto hint = (reinterpret_cast<std::uintptr_t>(probe) + 65536) / 65536 * 65536 + 4096;
  munmap(probe, 1 << 22);
  for (std::uint32_t ps : {8192u, 65536u}) {
    qs::detail::frame_space f(hint, std::uint64_t{ps} * 16, ps, false, qs::detail::page_access::control());
    CHECK(reinterpret_cast<std::uintptr_t>(f.base()) % ps == 0);
    CHECK(f.frames() == 16);
  }
}

TEST_CASE("a mapping object whose run would end past the address space is refused") {
  const std::uint32_t ps = 8192;
  // A run at the top of the address space, then one below it: with the end
  // of the first wrapping around, the two looked ordered.
  mapping wraps{{0xfffffffffffe0000ull, 5, 255}, {0x90400000000ull, 3, 1}};
  CHECK_FALSE(decode_mapping(encode_mapping(wraps, ps), ps).has_value());
  mapping fine{{0x90400000000ull, 3, 1}, {0x100000004000ull, 7, 2}};
  CHECK(decode_mapping(encode_mapping(fine, ps), ps).has_value());
}

TEST_CASE("a mapping object of a pointer-dense page takes a few bytes an entry, and damaged ones are refused") {
  const std::uint32_t ps = 8192;
  const std::uint64_t base = 0x100000000000ull;
  // 384 runs spread over 9,000 frames, pages handed out with their frames.
  mapping_builder b;
  std::uint64_t x = 12345;
  for (int i = 0; i < 384; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::uint64_t frame = (x >> 33) % 9000;
    b.add(base + frame * ps, frame + 2, 1);
  }
  mapping m = b.finish();
  std::string bytes = encode_mapping(m, ps);
  CHECK(bytes.size() <= 4 * m.size());
  auto back = decode_mapping(bytes, ps);
  REQUIRE(back);
  CHECK(*back == m);
  // Cut inside its last number, or with a number longer than 64 bits.
  CHECK_FALSE(decode_mapping(std::string_view(bytes).substr(0, bytes.size() - 1), ps));
  CHECK_FALSE(decode_mapping(std::string(11, '\xff') + std::string(1, '\x01'), ps));
  // A run of no pages.
  CHECK_FALSE(decode_mapping(std::string("\x01\x00\x00", 3), ps));
}
