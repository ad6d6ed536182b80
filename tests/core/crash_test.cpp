// Crash safety: a process killed with SIGKILL in the middle of a
// transaction or of a commit loses nothing that was committed and leaves no
// part of what was not.
#include <catch2/catch.hpp>

#include "support.hpp"

using namespace qs_test;

namespace {

constexpr int nodes = 6000;  // per transaction: about 20 pages, more than the pool below
constexpr const char* pool = "16";

}  // namespace

TEST_CASE("kill -9 at chosen points: every committed transaction survives, no partial one does") {
  kill_at_chosen_points(nodes, {pool});
}

TEST_CASE("a worker run to the end commits everything") {
  test_dir dir;
  auto c = spawn_worker({dir.sub("db"), "grow", "3", std::to_string(nodes), pool});
  REQUIRE(c.wait() == 0);
  CHECK(committed_transactions(dir.sub("db"), nodes) == 3);
}
