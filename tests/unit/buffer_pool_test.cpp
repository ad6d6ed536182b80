// The buffer pool's slots and its clock.
#include <catch2/catch.hpp>

#include "buffer_pool.hpp"
#include "page_table.hpp"
#include "transaction_log.hpp"

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
  CHECK(pool.owner_of(pool.data(slot)) == v);
}
