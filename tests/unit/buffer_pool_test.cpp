// The buffer pool's slots and its clock.
#include <catch2/catch.hpp>

#include "core/buffer_pool.hpp"
#include "core/page_table.hpp"
#include "core/transaction_log.hpp"

using namespace qs::detail;

TEST_CASE("the clock passes over referenced and pinned pages") {
  buffer_pool pool(16, 4096);
  page_table t;
  transaction_log log;
  std::vector<page_desc*> pages;
  for (std::uint64_t i = 0; i < 16; ++i) {
    page_desc* d = t.add(i + 1, i, i + 1, 1);
    std::uint32_t slot;
    REQUIRE(pool.take_free(d, slot));
    d->loaded(slot);
    pages.push_back(d);
  }
  std::uint32_t slot;
  CHECK_FALSE(pool.take_free(pages[0], slot));  // full
  pages[0]->referenced = true;
  log.pin(pages[1]);
  page_desc* v = pool.victim();
  CHECK(v == pages[2]);  // 0 had its second chance, 1 is pinned
  CHECK_FALSE(pages[0]->referenced);
  for (page_desc* d : pages) log.pin(d);
  CHECK(pool.victim() == nullptr);  // everything pinned
  log.reset();
  CHECK(pool.victim() != nullptr);
  pool.release(v->slot());
  CHECK(pool.take_free(v, slot));
  CHECK(slot == v->slot());
}

TEST_CASE("slots are handed out as pages come in: a huge pool costs nothing until used") {
  buffer_pool pool(1u << 30, 8192);  // 8 TiB of pool, of which nothing is used
  page_table t;
  CHECK(pool.size() == 1u << 30);
  CHECK(pool.free_slots() == 1u << 30);
  CHECK(pool.victim() == nullptr);
  std::uint32_t slot;
  page_desc* d = t.add(7, 7, 7, 1);
  REQUIRE(pool.take_free(d, slot));
  CHECK(slot == 0);
  CHECK(pool.free_slots() == (1u << 30) - 1);
  pool.before(slot)[8191] = std::byte{1};  // its before-image is real memory
  pool.offer_before_images();
  pool.before(slot)[8191] = std::byte{2};  // and still usable after it was offered back
  CHECK(pool.before(slot)[8191] == std::byte{2});
}
