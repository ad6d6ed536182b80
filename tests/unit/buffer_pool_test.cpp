// The buffer pool's slots and its clock.
#include <catch2/catch.hpp>

#include "core/buffer_pool.hpp"
#include "core/page_table.hpp"
#include "core/transaction_log.hpp"

#include <algorithm>
#include <vector>

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
  before_images::range ahead;
  pool.take_before(slot, ahead)[8191] = std::byte{1};  // its before-image is real memory
  pool.offer_before_images();
  pool.take_before(slot, ahead)[8191] = std::byte{2};  // and still usable after it was offered back
  CHECK(pool.before(slot)[8191] == std::byte{2});
}

TEST_CASE(
    "a page that borrows its stored image as its before-image takes no entry, until it leaves or the "
    "transaction ends") {
  buffer_pool pool(8, 8192);
  page_table t;
  std::uint32_t a, b, c;
  REQUIRE(pool.take_free(t.add(1, 1, 1, 1), a));
  REQUIRE(pool.take_free(t.add(2, 2, 2, 1), b));
  REQUIRE(pool.take_free(t.add(3, 3, 3, 1), c));
  std::vector<std::byte> stored_a(8192, std::byte{0xa}), stored_b(8192, std::byte{0xb});
  before_images::range ahead;
  pool.borrow_before(a, stored_a.data());
  std::byte* first = pool.take_before(c, ahead);
  pool.borrow_before(b, stored_b.data());
  CHECK(pool.before(a) == stored_a.data());
  CHECK(pool.before(b) == stored_b.data());
  CHECK(pool.before(c) == first);
  // Borrowing took no entry: the next page written takes the second.
  pool.release(c);
  REQUIRE(pool.take_free(t.add(4, 4, 4, 1), c));
  CHECK(pool.take_before(c, ahead) == first);
  // A page that leaves the pool forgets what it borrowed; its slot's next
  // page takes an entry.
  pool.release(a);
  REQUIRE(pool.take_free(t.add(5, 5, 5, 1), a));
  CHECK(pool.take_before(a, ahead) == first + 8192);
  CHECK(pool.before(a) == first + 8192);
  // So does every page when the transaction ends.
  pool.forget_before_images();
  CHECK(pool.take_before(b, ahead) == first);
  CHECK(pool.before(b) == first);
}

// Before-images follow the pages a transaction writes, not the slots: the
// memory a program keeps for them is that of the most pages one of its
// transactions wrote, and it is warm from one transaction to the next.
TEST_CASE("the pages a transaction writes take the first before-image entries, whatever their slots") {
  buffer_pool pool(64, 8192);
  page_table t;
  std::vector<std::uint32_t> slots;
  for (std::uint64_t i = 0; i < 64; ++i) {
    std::uint32_t slot;
    REQUIRE(pool.take_free(t.add(i + 1, i, i + 1, 1), slot));
    slots.push_back(slot);
  }
  before_images::range ahead;
  std::byte* first = pool.take_before(slots[40], ahead);
  // The next batch of entries is to be given memory ahead, in one call.
  CHECK(ahead.offset == 8192);
  CHECK(ahead.bytes == before_images::batch * 8192);
  CHECK(pool.take_before(slots[7], ahead) == first + 8192);
  CHECK(ahead.bytes == 0);                             // asked for already
  CHECK(pool.take_before(slots[40], ahead) == first);  // a slot keeps its entry
  CHECK(pool.take_before(slots[63], ahead) == first + 2 * 8192);
  // A page that leaves the pool gives its entry to the next page written.
  pool.release(slots[7]);
  CHECK(pool.take_before(slots[12], ahead) == first + 8192);
  // The next transaction starts again from the first entry.
  pool.forget_before_images();
  CHECK(pool.take_before(slots[63], ahead) == first);
  CHECK(pool.take_before(slots[40], ahead) == first + 8192);
  // Every slot at once: each its own entry, all inside the reservation, and
  // each batch asked for before the one in use runs out.
  pool.forget_before_images();
  std::vector<std::byte*> seen;
  // (Entries asked for by the earlier transactions have their memory.)
  std::size_t asked_to = std::size_t{pool.before_image_entries().ready()} * 8192;
  for (std::uint32_t s : slots) {
    if (s == slots[7]) continue;
    seen.push_back(pool.take_before(s, ahead));
    if (ahead.bytes) {
      CHECK(ahead.offset == asked_to);  // in order, nothing skipped
      pool.before_image_memory().populate(ahead.offset, ahead.bytes);
      asked_to = ahead.offset + ahead.bytes;
    }
    const std::size_t taken_to = static_cast<std::size_t>(seen.back() - first) + 8192;
    CHECK(asked_to >= std::min<std::size_t>(64 * 8192, taken_to + 8192 * (before_images::batch / 2)));
  }
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
  CHECK(seen.back() == first + 62 * 8192);
  seen.back()[8191] = std::byte{3};  // past the first batch: real memory too
}
