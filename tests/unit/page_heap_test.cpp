// The page heap: objects on a small page, against an oracle that walks the
// whole page.
#include <catch2/catch.hpp>

#include "core/page_format.hpp"
#include "core/page_heap.hpp"

#include <cstdint>
#include <iterator>
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

TEST_CASE("page heap: a free planned with the page's starts plans what the walk from the page's start does") {
  std::vector<std::byte> image(page_size);
  init_small_page(image.data(), page_size);
  std::mt19937 rng(5);
  std::map<std::uint32_t, std::uint32_t> live;  // payload offset -> size
  heap_starts starts;                           // built after each allocation, as the allocator does
  starts.build(image.data(), page_size);
  auto same = [](const heap_free_plan& a, const heap_free_plan& b) {
    return a.found == b.found && a.header == b.header && a.top == b.top && a.free_bytes == b.free_bytes;
  };
  std::uint64_t frees = 0, last = 0;
  for (int step = 0; step < 20000; ++step) {
    // Runs of frees long enough to empty a page from its end.
    if (live.empty() || rng() % 5 == 0) {
      const auto size = static_cast<std::uint32_t>(8 * (1 + rng() % 40));
      const std::uint32_t p = heap_allocate(image.data(), page_size, 7, size, 8);
      if (p) live[p] = size;
      starts.build(image.data(), page_size);
      REQUIRE(starts.usable());
      continue;
    }
    // The last object half the time: its free walks back over the free
    // blocks before it.
    auto it = live.begin();
    if (rng() % 2 == 0) it = std::prev(live.end());
    else std::advance(it, static_cast<long>(rng() % live.size()));
    const std::uint32_t target = it->first;
    const heap_free_plan whole = heap_plan_free(image.data(), page_size, target);
    REQUIRE(whole.found);
    REQUIRE(same(heap_plan_free(image.data(), page_size, target, starts), whole));
    REQUIRE_FALSE(heap_plan_free(image.data(), page_size, target + 8, starts).found);  // not a start
    REQUIRE_FALSE(heap_plan_free(image.data(), page_size, target - 8, starts).found);
    if (whole.top != reinterpret_cast<const page_header*>(image.data())->top) ++last;
    heap_apply_free(image.data(), whole);
    starts.applied(whole);
    ++frees;
    live.erase(it);
    check_header(image.data());
    REQUIRE_FALSE(heap_plan_free(image.data(), page_size, target, starts).found);  // freed once
    for (const auto& [p, size] : live)
      REQUIRE(same(heap_plan_free(image.data(), page_size, p, starts), heap_plan_free(image.data(), page_size, p)));
  }
  CHECK(frees > 5000);
  CHECK(last > 500);
}

TEST_CASE("page heap: a page whose header miscounts its free blocks is walked, not trusted") {
  std::vector<std::byte> image(page_size);
  init_small_page(image.data(), page_size);
  std::vector<std::uint32_t> objects;
  for (int i = 0; i < 4; ++i) objects.push_back(heap_allocate(image.data(), page_size, 7, 32, 8));
  REQUIRE(heap_free(image.data(), page_size, objects[2]));  // a free block before the last object
  heap_starts starts;
  starts.build(image.data(), page_size);
  auto* ph = reinterpret_cast<page_header*>(image.data());
  ph->free_bytes = 8;  // fewer than the free block before the last object holds
  const heap_free_plan walked = heap_plan_free(image.data(), page_size, objects[3]);
  const heap_free_plan indexed = heap_plan_free(image.data(), page_size, objects[3], starts);
  REQUIRE(indexed.found);
  CHECK(indexed.top == walked.top);
  CHECK(indexed.free_bytes == walked.free_bytes);
}
