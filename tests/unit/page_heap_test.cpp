// The page heap: objects on a small page, against an oracle that walks the
// whole page.
#include <catch2/catch.hpp>

#include "core/page_format.hpp"
#include "core/page_heap.hpp"

#include <cstdint>
#include <map>
#include <random>
#include <vector>

using namespace qs::detail;

namespace {

constexpr std::uint32_t page_size = 8192;

// What the page's header must say: the end of the last live object, and
// the bytes of the free blocks before it.
void check_header(const std::byte* image) {
  auto* ph = reinterpret_cast<const page_header*>(image);
  std::uint32_t off = sizeof(page_header), used_end = off;
  while (off < ph->top) {
    auto* oh = reinterpret_cast<const object_header*>(image + off);
    off += static_cast<std::uint32_t>(sizeof(object_header)) + oh->size;
    if (oh->type != free_type) used_end = off;
  }
  std::uint32_t free_total = 0;
  for (off = sizeof(page_header); off < used_end;) {
    auto* oh = reinterpret_cast<const object_header*>(image + off);
    if (oh->type == free_type) free_total += static_cast<std::uint32_t>(sizeof(object_header)) + oh->size;
    off += static_cast<std::uint32_t>(sizeof(object_header)) + oh->size;
  }
  REQUIRE(ph->top == used_end);
  REQUIRE(ph->free_bytes == free_total);
}

}  // namespace

TEST_CASE("page heap: frees keep the tail and the free bytes right, and lookups find exactly the live objects") {
  std::vector<std::byte> image(page_size);
  init_small_page(image.data(), page_size);
  std::mt19937 rng(11);
  std::map<std::uint32_t, std::uint32_t> live;  // payload offset -> size
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const auto size = static_cast<std::uint32_t>(8 * (1 + rng() % 40));
      const std::uint32_t p = heap_allocate(image.data(), page_size, 7, size, 8);
      if (p) live[p] = size;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      REQUIRE(heap_free(image.data(), page_size, it->first));
      REQUIRE_FALSE(heap_free(image.data(), page_size, it->first));  // freed once
      live.erase(it);
    }
    check_header(image.data());
    if (step % 97 == 0) {
      for (const auto& [p, size] : live) {
        const object_header* oh = heap_object_at(image.data(), page_size, p);
        REQUIRE(oh != nullptr);
        REQUIRE(oh->size == size);
        REQUIRE(heap_object_at(image.data(), page_size, p + 8) == nullptr);  // not a start
        REQUIRE_FALSE(heap_plan_free(image.data(), page_size, p + 8).found);
      }
      std::uint32_t seen = 0;
      heap_for_each(image.data(), page_size, [&](std::uint32_t p, const object_header&) {
        REQUIRE(live.count(p) == 1);
        ++seen;
      });
      REQUIRE(seen == live.size());
    }
  }
}

TEST_CASE("page heap: a free planned from an earlier object's start plans what the walk from the page's start does") {
  std::vector<std::byte> image(page_size);
  init_small_page(image.data(), page_size);
  std::mt19937 rng(5);
  std::map<std::uint32_t, std::uint32_t> live;  // payload offset -> size
  std::vector<std::uint32_t> starts;            // every object's header since the last allocation
  auto same = [](const heap_free_plan& a, const heap_free_plan& b) {
    return a.found == b.found && a.header == b.header && a.top == b.top && a.free_bytes == b.free_bytes;
  };
  std::uint64_t midway = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 == 0) {
      const auto size = static_cast<std::uint32_t>(8 * (1 + rng() % 40));
      const std::uint32_t p = heap_allocate(image.data(), page_size, 7, size, 8);
      if (p) live[p] = size;
      // An allocation may merge free blocks: only what a walk finds now are starts.
      starts.clear();
      heap_for_each(image.data(), page_size, [&](std::uint32_t q, const object_header&) {
        starts.push_back(q - static_cast<std::uint32_t>(sizeof(object_header)));
      });
      continue;
    }
    auto it = live.begin();
    std::advance(it, static_cast<long>(rng() % live.size()));
    const std::uint32_t target = it->first;
    const heap_free_plan whole = heap_plan_free(image.data(), page_size, target);
    REQUIRE(whole.found);
    for (std::uint32_t from : starts) {
      if (from >= target) continue;
      ++midway;
      REQUIRE(same(heap_plan_free(image.data(), page_size, target, from), whole));
      REQUIRE_FALSE(heap_plan_free(image.data(), page_size, target + 8, from).found);  // not a start
    }
    heap_apply_free(image.data(), whole);
    live.erase(it);
    check_header(image.data());
    for (std::uint32_t from : starts)
      if (from < target) REQUIRE_FALSE(heap_plan_free(image.data(), page_size, target, from).found);  // freed once
    starts.push_back(whole.header);  // a freed object's header stays a start
  }
  CHECK(midway > 10000);
}
