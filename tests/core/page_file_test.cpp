// The page-file layout (qs::options::page_file, bdb_env.hpp): page records
// in pages.qs, their writes logged as application records. Killed with
// SIGKILL anywhere, before or after its commit reached the log, and before
// or halfway through the page file's writes, a database holds exactly the
// transactions whose commit reached the log; the layout stays the one the
// database was made with; a damaged page file is refused, naming it.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <qs/bdb/bdb_env.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>

using namespace qs_test;

namespace {

constexpr int nodes = 6000;  // per transaction: about 20 pages, more than the pool below
constexpr const char* pool = "16";
constexpr const char* dirty_eviction = "evict.dirty_written:60";

bool has_page_file(const std::string& db) { return std::filesystem::exists(db + "/pages.qs"); }

}  // namespace

TEST_CASE(
    "page file: kill -9 at the runtime's chosen points: every committed transaction survives, no partial one does") {
  env_var layout("QS_PAGE_FILE", "1");
  kill_at_chosen_points(nodes, {pool}, "grow", {dirty_eviction});
}

TEST_CASE("page file: kill -9 in transactions that create and delete the same objects, larger than the pool") {
  env_var layout("QS_PAGE_FILE", "1");
  kill_at_chosen_points(nodes, {pool}, "churn", {"worker.churned:3", dirty_eviction});
}

TEST_CASE("page file: killed once the commit is in the log, before or while its pages reach the page file") {
  env_var layout("QS_PAGE_FILE", "1");
  for (const char* point : {"page_file.committed:3", "page_file.half_applied:3"}) {
    DYNAMIC_SECTION(point) {
      test_dir dir;
      const std::string db = dir.sub("db");
      auto c = spawn_worker({db, "grow", "5", std::to_string(nodes), pool}, point, dir.sub("worker.err"));
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      REQUIRE(has_page_file(db));
      // The third commit's record is in the log: recovery writes its pages.
      CHECK(committed_transactions(db, nodes) == 3);
      check_verifies(db);
      auto again = spawn_worker({db, "grow", "1", std::to_string(nodes), pool});
      CHECK(again.wait() == 0);
      CHECK(committed_transactions(db, nodes) == 4);
      check_verifies(db);
    }
  }
}

TEST_CASE("page file: a database keeps the layout it was made with") {
  test_dir dir;
  const std::string with = dir.sub("with"), without = dir.sub("without");
  {
    env_var layout("QS_PAGE_FILE", "1");
    CHECK(spawn_worker({with, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
  }
  {
    env_var layout("QS_PAGE_FILE", "0");
    CHECK(spawn_worker({without, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
    // Opened without asking for it, the page file stays the store.
    CHECK(spawn_worker({with, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  }
  CHECK(has_page_file(with));
  CHECK_FALSE(has_page_file(without));
  CHECK(committed_transactions(with, nodes) == 3);
  {
    // Asked for, it is not made for a database that has pages.db's layout.
    env_var layout("QS_PAGE_FILE", "1");
    CHECK(spawn_worker({without, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  }
  CHECK_FALSE(has_page_file(without));
  CHECK(committed_transactions(without, nodes) == 3);
  check_verifies(with);
  check_verifies(without);
}

TEST_CASE("page file: qs-pageserver's environment and a damaged page file are refused, naming pages.qs") {
  test_dir dir;
  const std::string db = dir.sub("db");
  {
    env_var layout("QS_PAGE_FILE", "1");
    CHECK(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  }
  // A multiversion environment is qs-pageserver's.
  CHECK_THROWS_MATCHES(qs::detail::bdb_env(db, 16u << 20, true), qs::invalid_argument,
                       Catch::Matchers::Predicate<qs::invalid_argument>([](const qs::invalid_argument& e) {
                         return std::string(e.what()).find("pages.qs") != std::string::npos;
                       }));
  {
    std::fstream f(db + "/pages.qs", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.write("garbage!", 8);
  }
  try {
    qs::detail::bdb_env env(db, 16u << 20);
    FAIL("a page file whose header is damaged was opened");
  } catch (const qs::error& e) {
    CHECK_THAT(e.what(), Catch::Contains("pages.qs") && Catch::Contains("not a qs page file"));
  }
}
