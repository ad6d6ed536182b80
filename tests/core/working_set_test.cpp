// A working set ten times the buffer pool, read and written in one
// transaction, and read back exactly after reopening.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

using namespace qs_test;

TEST_CASE("a working set ten times the pool is written in one transaction and read back") {
  test_dir dir;
  constexpr std::uint32_t pool = 32;
  auto opts = small_options(pool);
  const int n = 100000;  // 32-byte objects: about 400 pages of 8 KiB
  {
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < n; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
    CHECK(db.stats().dirty_evictions > 10 * pool);
  }
  {
    // One transaction: read everything, then write everything, twice over.
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    Pair* head = db.root<Pair*>("head");
    std::uint64_t count = 0;
    for (Pair* p = head; p; p = p->right) ++count;
    REQUIRE(count == n);
    for (Pair* p = head; p; p = p->right) {
      p->key = p->key * 2 + 1;
      p->left = p->right;  // a pointer written to every object
    }
    for (Pair* p = head; p; p = p->right) p->key += 1;
    tx.commit();
    auto s = db.stats();
    CHECK(s.read_faults > 10 * pool);
    CHECK(s.dirty_evictions > 10 * pool);
  }
  auto db = qs::database::open(dir.path(), opts);
  qs::transaction tx(db);
  std::uint64_t expect = n - 1, count = 0;
  for (Pair* p = db.root<Pair*>("head"); p; p = p->right, --expect, ++count) {
    REQUIRE(p->key == expect * 2 + 2);
    REQUIRE(p->left == p->right);
  }
  CHECK(count == n);
  tx.commit();
}
