// The runtime's corners: sizes it cannot store, transactions of two
// databases in one thread, threads with a database each.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <string>

using namespace qs_test;

TEST_CASE("an allocation of 4 GiB or more is refused, naming the type and size") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  std::vector<char, qs::allocator<char>> keep(qs::allocator<char>{});
  keep.push_back('x');
  std::size_t huge = (std::size_t{1} << 32) + 16;
  try {
    qs::allocator<char>().allocate(huge);
    FAIL("a 4 GiB allocation returned");
  } catch (const qs::error& e) {
    std::string what = e.what();
    CHECK(what.find("4294967312") != std::string::npos);
  }
  try {
    qs::allocator<Blob>().allocate(20000);  // 6.4 GB of a persistent type
    FAIL("a 6.4 GB allocation returned");
  } catch (const qs::error& e) {
    CHECK(std::string(e.what()).find("Blob") != std::string::npos);
  }
  CHECK_THROWS_AS(qs::allocator<long>().allocate(std::size_t{1} << 62), qs::error);  // n * 8 overflows
  CHECK(keep[0] == 'x');  // the heap is as it was
  decltype(keep)().swap(keep);
  tx.commit();
}
