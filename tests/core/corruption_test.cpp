// A page whose stored bytes changed behind qs's back is refused with
// qs::corrupt_page, and nothing else is lost.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

using namespace qs_test;

TEST_CASE("a flipped byte in a stored page is detected by its checksum") {
  test_dir dir;
  std::uint64_t victim_page = 0;
  {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < 3000; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
    victim_page = 3;  // a page in the middle of the list
  }
  corrupt_stored_page(dir.path(), victim_page, 1000);
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  std::uint64_t seen = 0;
  try {
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right) seen += p->key < 3000;
    FAIL("the corrupt page was read");
  } catch (const qs::corrupt_page& e) {
    CHECK(e.page() == victim_page);
    CHECK_THAT(e.what(), Catch::Contains("page 3") && Catch::Contains("checksum"));
  }
  CHECK(seen > 0);
  tx.abort();
  // Another page of the database is still readable, and the failed page is
  // refused every time.
  qs::transaction tx2(db);
  CHECK(db.root<Pair*>("head")->key == 2999);
  CHECK_THROWS_AS(
      [&] {
        for (Pair* p = db.root<Pair*>("head"); p; p = p->right) touch(p->key);
      }(),
      qs::corrupt_page);
}
