// Opening a database that was closed cleanly runs no recovery and writes no
// file; a process killed after its first write leaves a database that the
// next open recovers.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <csignal>
#include <filesystem>
#include <map>
#include <string>

using namespace qs_test;

namespace {

constexpr int nodes = 6000;
constexpr const char* pool = "16";

struct file_state {
  std::uintmax_t size;
  std::filesystem::file_time_type modified;
  bool operator==(const file_state&) const = default;
};

// Every file in the database directory, with its size and modification time.
std::map<std::string, file_state> files_of(const std::string& dir) {
  std::map<std::string, file_state> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files[e.path().filename().string()] = {e.file_size(), e.last_write_time()};
  return files;
}

bool has_clean_mark(const std::string& db) { return std::filesystem::exists(db + "/closed-cleanly"); }

}  // namespace

TEST_CASE("opening a cleanly closed database and reading it writes no file") {
  test_dir dir;
  std::string db = dir.sub("db");
  REQUIRE(spawn_worker({db, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
  CHECK(has_clean_mark(db));
  auto before = files_of(db);
  auto dir_time = std::filesystem::last_write_time(db);
  // Reads every node, in a process of its own, twice.
  CHECK(committed_transactions(db, nodes) == 2);
  CHECK(committed_transactions(db, nodes) == 2);
  CHECK(files_of(db) == before);
  CHECK(std::filesystem::last_write_time(db) == dir_time);
}

TEST_CASE("the first write after a clean open takes the clean mark away, and a clean close puts it back") {
  test_dir dir;
  std::string db = dir.sub("db");
  REQUIRE(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  REQUIRE(has_clean_mark(db));
  auto c = spawn_worker({db, "grow", "2", std::to_string(nodes), pool}, "worker.mid:1");
  c.kill9();
  CHECK(c.wait() == -SIGKILL);
  CHECK_FALSE(has_clean_mark(db));
  CHECK(committed_transactions(db, nodes) == 1);
  REQUIRE(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  CHECK(has_clean_mark(db));
  CHECK(committed_transactions(db, nodes) == 2);
}

TEST_CASE("kill -9 in a process that opened a cleanly closed database: the next open recovers") {
  struct point {
    const char* name;
    int expect;  // transactions committed in all when killed in the second run's first
  };
  const point points[] = {
      {"worker.mid:1", 2},
      {"commit.half_written:1", 2},
      {"commit.before_store_commit:1", 2},
      {"commit.after_store_commit:1", 3},
  };
  for (const point& p : points) {
    DYNAMIC_SECTION(p.name) {
      test_dir dir;
      std::string db = dir.sub("db");
      REQUIRE(spawn_worker({db, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
      REQUIRE(has_clean_mark(db));
      auto c = spawn_worker({db, "grow", "3", std::to_string(nodes), pool}, p.name);
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      CHECK(committed_transactions(db, nodes) == p.expect);
      check_verifies(db);
      REQUIRE(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
      CHECK(committed_transactions(db, nodes) == p.expect + 1);
    }
  }
}
