// Crash safety: a process killed with SIGKILL in the middle of a
// transaction or of a commit loses nothing that was committed and leaves no
// part of what was not.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <csignal>

using namespace qs_test;

namespace {

constexpr int nodes = 6000;  // per transaction: about 20 pages, more than the pool below
constexpr const char* pool = "16";

// Runs `check` on the database; returns the number of committed transactions.
int committed(const std::string& db) {
  auto c = spawn_worker({db, "check", std::to_string(nodes)});
  int st = c.wait();
  REQUIRE(st >= 10);
  return st - 10;
}

}  // namespace

TEST_CASE("kill -9 at chosen points: every committed transaction survives, no partial one does") {
  struct point {
    const char* name;
    int expect;  // transactions committed when killed in the third
  };
  const point points[] = {
      {"worker.mid:3", 2},                  // inside the transaction, after dirty evictions
      {"commit.half_written:3", 2},         // half the pages in the store transaction
      {"commit.before_store_commit:3", 2},  // everything written, not committed
      {"commit.after_store_commit:3", 3},   // committed, nothing cleaned up
  };
  for (const point& p : points) {
    DYNAMIC_SECTION(p.name) {
      test_dir dir;
      std::string db = dir.sub("db");
      auto c = spawn_worker({db, "grow", "5", std::to_string(nodes), pool}, p.name);
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      CHECK(committed(db) == p.expect);
      // The database goes on working after recovery.
      auto again = spawn_worker({db, "grow", "1", std::to_string(nodes), pool});
      CHECK(again.wait() == 0);
    }
  }
}

TEST_CASE("a worker run to the end commits everything") {
  test_dir dir;
  auto c = spawn_worker({dir.sub("db"), "grow", "3", std::to_string(nodes), pool});
  REQUIRE(c.wait() == 0);
  CHECK(committed(dir.sub("db")) == 3);
}
