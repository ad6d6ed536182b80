// allocation_slack (qs/bdb/allocation_slack.hpp): once installed, every
// small block Berkeley DB allocates has 128 bytes of room past what it
// asked for (its election tally writes past its end: the replication tests
// and torture kind e met it as heap corruption, valgrind as an invalid
// write). A block Berkeley DB hands back (a statistics structure) shows it.
#include <catch2/catch.hpp>

#include <qs/bdb/allocation_slack.hpp>

#include "temp_dir.hpp"

#include <db_cxx.h>
#include <malloc.h>

#include <cstdlib>

TEST_CASE("allocation_slack: Berkeley DB's small blocks get room past their end once it is installed") {
  qs_test::temp_dir dir;
  auto stat_block = [&] {
    DbEnv env(DB_CXX_NO_EXCEPTIONS);
    REQUIRE(env.open(dir.path().c_str(), DB_CREATE | DB_INIT_MPOOL | DB_PRIVATE, 0600) == 0);
    DB_MPOOL_STAT* st = nullptr;
    REQUIRE(env.memp_stat(&st, nullptr, 0) == 0);
    const std::size_t usable = ::malloc_usable_size(st);
    std::free(st);
    env.close(0);
    return usable;
  };
  // (No other test of this process installs it.)
  CHECK(stat_block() < sizeof(DB_MPOOL_STAT) + 128);
  qs::detail::install_allocation_slack();
  CHECK(stat_block() >= sizeof(DB_MPOOL_STAT) + 128);
}
