// Schema evolution killed: release 2 of tests/schema/evolution.cpp converts
// release 1's database and is killed with SIGKILL at chosen points of the
// conversion and of its commit, and at random moments. After each kill the
// database is either release 1's, whole (release 1 walks and checks all of
// it), or release 2's, whole (release 2 does): never a mix.
#include "support.hpp"

#include <signal.h>
#include <time.h>
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace qs_test;

namespace {

int run(const char* program, const std::string& db, const char* mode, const std::string& log) {
  process c = spawn_program(program, {db, mode}, "", log);
  return c.wait();
}

// "old" or "new": which database the kill left, each checked whole.
std::string which(const std::string& db, const std::string& log) {
  int old_rc = run(QS_EVOLUTION_V1, db, "check", log);
  if (old_rc == 0) return "old";
  INFO("release 1's check exited " << old_rc << ": " << read_file(log));
  REQUIRE(old_rc == 3);  // refused: the types are release 2's
  int new_rc = run(QS_EVOLUTION_V2, db, "check", log);
  INFO("release 2's check: " << read_file(log));
  REQUIRE(new_rc == 0);
  return "new";
}

}  // namespace

TEST_CASE("schema evolution: kill -9 at chosen points leaves the old database or the new one", "[evolution][crash]") {
  struct point {
    const char* name;
    const char* expect;
  };
  std::vector<point> points{{"evolve.converted", "old"},
                            {"evolve.rewritten", "old"},
                            {"commit.half_written", "old"},
                            {"commit.before_store_commit", "old"},
                            {"commit.after_store_commit", "new"}};
  // The page file's: the commit is in the log, its pages not (all) written.
  if (page_file_layout())
    points.insert(points.end(), {{"page_file.committed", "new"}, {"page_file.half_applied", "new"}});
  for (point p : points) {
    SECTION(p.name) {
      test_dir dir;
      std::string db = dir.sub("db"), log = dir.sub("log");
      REQUIRE(run(QS_EVOLUTION_V1, db, "create", log) == 0);
      process c = spawn_program(QS_EVOLUTION_V2, {db, "evolve"}, p.name, log);
      c.kill9();
      REQUIRE(c.wait() == -SIGKILL);
      CHECK(which(db, log) == p.expect);
      check_verifies(db);
      // Whatever was left converts (again or not at all) and checks whole.
      REQUIRE(run(QS_EVOLUTION_V2, db, "evolve", log) == 0);
      REQUIRE(run(QS_EVOLUTION_V2, db, "check", log) == 0);
    }
  }
}

TEST_CASE("schema evolution: kill -9 at random moments", "[evolution][crash]") {
  std::random_device seed_source;
  const unsigned seed = seed_source();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (int round = 0; round < 6; ++round) {
    test_dir dir;
    std::string db = dir.sub("db"), log = dir.sub("log");
    REQUIRE(run(QS_EVOLUTION_V1, db, "create", log) == 0);
    process c = spawn_program(QS_EVOLUTION_V2, {db, "evolve"}, "", log);
    long delay_us = static_cast<long>(rng() % 60000);
    INFO("round " << round << ", killed after " << delay_us << " us");
    timespec ts{0, delay_us * 1000};
    ::nanosleep(&ts, nullptr);
    c.kill9();
    int st = c.wait();
    CHECK((st == -SIGKILL || st == 0));
    std::string left = which(db, log);
    CHECK((left == "old" || left == "new"));
    check_verifies(db);
    REQUIRE(run(QS_EVOLUTION_V2, db, "evolve", log) == 0);
    REQUIRE(run(QS_EVOLUTION_V2, db, "check", log) == 0);
  }
}

TEST_CASE("schema evolution: hostile bytes in the database stop it with an error, never a hang or a crash",
          "[evolution][hostile]") {
  test_dir dir;
  std::string db = dir.sub("db"), log = dir.sub("log");
  SECTION("a page counter of 2^62") {
    REQUIRE(run(QS_EVOLUTION_V1, db, "create", log) == 0);
    put_stored_record(db, "next_page", std::to_string(std::uint64_t{1} << 62));
    // Only the pages that exist are walked; the counter is not a list.
    if (page_file_layout()) {
      // A page file has no slot for the conversion's first new page there:
      // refused, naming the counter, and the database is as it was.
      CHECK(run(QS_EVOLUTION_V2, db, "evolve", log) == 3);
      CHECK_THAT(read_file(log), Catch::Contains("page 4611686018427387904 lies past what") &&
                                     Catch::Contains("damaged page counter (next_page)"));
      CHECK(which(db, log) == "old");
    } else {
      REQUIRE(run(QS_EVOLUTION_V2, db, "evolve", log) == 0);
      REQUIRE(run(QS_EVOLUTION_V2, db, "check", log) == 0);
    }
  }
  SECTION("a stored layout whose member lies outside its type") {
    REQUIRE(run(QS_EVOLUTION_V1, db, "create", log) == 0);
    // Release 1 gives Note type index 16, Holder 17 and Part 18 (in the order
    // it allocates them).
    std::string bad =
        "qs-type 1\nindex 18\nsize 32\nalign 8\npointers 16\nvptrs \nmembers\n0 4 id int\n4 400 mass int\n"
        "8 2 grade short int\n12 4 ratio float\n16 8 next Part*\n24 6 tag char[6]";
    put_stored_record(db, "t:Part", bad);
    int rc = run(QS_EVOLUTION_V2, db, "evolve", log);
    INFO(read_file(log));
    CHECK(rc == 3);
    CHECK_THAT(read_file(log), Catch::Contains("type Part: member mass (400 bytes at offset 4) does not lie inside"));
    CHECK_THAT(read_file(log), Catch::Contains("damaged"));
  }
}
