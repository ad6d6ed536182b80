// The crash torture (qs_torture): a short run of each kind of victim, and
// the checker's own tests: each breaks a database the way a wrong recovery
// would and expects the checker to say so.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "support.hpp"

#include <random>
#include <string>
#include <vector>

using qs_pstest::process;

namespace {

constexpr const char* seed = "12345";

// Runs qs_torture with `args` in `dir`; returns its status, its output in `out`.
int torture(const qs_test::test_dir& dir, const std::vector<std::string>& args, std::string* out = nullptr,
            int timeout_ms = 120000) {
  std::vector<std::string> argv{QS_TORTURE};
  argv.insert(argv.end(), args.begin(), args.end());
  static int n = 0;
  process p = qs_pstest::spawn(argv, qs_pstest::logged(dir.path(), "torture" + std::to_string(++n)));
  int st = p.wait(timeout_ms);
  if (out) *out = p.out() + p.err();
  return st;
}

int write(const qs_test::test_dir& dir, const std::string& txns, const std::string& brk = "") {
  std::vector<std::string> args{"write", dir.sub("db"), "0", seed, "16", "0", "--txns", txns};
  if (!brk.empty()) args.insert(args.end(), {"--break", brk});
  return torture(dir, args);
}

int check(const qs_test::test_dir& dir, const std::string& floor, std::string& out) {
  return torture(dir, {"check", dir.sub("db"), seed, floor}, &out);
}

}  // namespace

TEST_CASE("the checker passes what the writer committed, and says how many transactions it holds") {
  qs_test::test_dir dir;
  REQUIRE(write(dir, "6") == 0);
  std::string out;
  CHECK(check(dir, "6", out) == 0);
  INFO(out);
  CHECK(out.find("holds 0 6") != std::string::npos);
  CHECK(out.find("\nok") != std::string::npos);
  // One more than the writer reported may have committed unreported; not two.
  CHECK(check(dir, "5", out) == 0);
  CHECK(check(dir, "4", out) == 1);
  // Unless two writer processes were killed since: each may have.
  CHECK(check(dir, "4+2", out) == 0);
  CHECK(check(dir, "3+2", out) == 1);
}

TEST_CASE("the checker finds a transaction reported committed that the database lacks") {
  qs_test::test_dir dir;
  REQUIRE(write(dir, "4") == 0);
  std::string out;
  CHECK(check(dir, "5", out) == 1);
  INFO(out);
  CHECK(out.find("transaction 5 was reported committed, the database holds 4") != std::string::npos);
}

TEST_CASE("the checker finds a transaction that committed only in part") {
  qs_test::test_dir dir;
  REQUIRE(write(dir, "5", "partial:3") == 0);
  std::string out;
  CHECK(check(dir, "5", out) == 1);
  INFO(out);
  CHECK(out.find("problem: partition 0 at transaction 5") != std::string::npos);
}

TEST_CASE("the checker's store audit finds an object no transaction made") {
  qs_test::test_dir dir;
  REQUIRE(write(dir, "3", "leak:2") == 0);
  std::string out;
  CHECK(check(dir, "3", out) == 1);
  INFO(out);
  CHECK(out.find("objects of qs_torture::Item, the partitions hold") != std::string::npos);
}

TEST_CASE("the checker finds a damaged page record") {
  qs_test::test_dir dir;
  REQUIRE(write(dir, "3") == 0);
  qs_test::corrupt_stored_page(dir.sub("db"), 1, 100);
  std::string out;
  CHECK(check(dir, "3", out) == 1);
  INFO(out);
  CHECK(out.find("checksum") != std::string::npos);
}

TEST_CASE("ten kills of each kind: every committed transaction survives, no partial one does") {
  qs_test::test_dir dir;
  std::string s = std::to_string(std::random_device{}());
  std::string out;
  int st = torture(dir, {"run", "10", "--seed", s, "--dir", dir.sub("work")}, &out, 280000);
  INFO(out);
  CHECK(st == 0);
  CHECK(out.find("kind a (") != std::string::npos);
  CHECK(out.find("kind b (") != std::string::npos);
  CHECK(out.find("kind c (") != std::string::npos);
  CHECK(out.find("kind e (") != std::string::npos);
  // The full disk's kind, or why it could not run (not root).
  CHECK((out.find("kind d (") != std::string::npos || out.find("kind d skipped") != std::string::npos));
}

TEST_CASE("with the pages.db layout, ten kills of an embedded writer and of one on a filling disk") {
  qs_test::test_dir dir;
  qs_test::env_var layout("QS_PAGE_FILE", "0");
  std::string s = std::to_string(std::random_device{}());
  std::string out;
  int st = torture(dir, {"run", "10", "--kinds", "ad", "--seed", s, "--dir", dir.sub("work")}, &out, 280000);
  INFO(out);
  CHECK(st == 0);
  CHECK(out.find("kind a (") != std::string::npos);
  CHECK((out.find("kind d (") != std::string::npos || out.find("kind d skipped") != std::string::npos));
}

TEST_CASE("with two busy processes beside it, twenty kills of an embedded writer on each layout") {
  // The moments at which a loaded machine takes the processor away are
  // where Berkeley DB's bulk transactions lost environments to recovery.
  const char* page_file = GENERATE("1", "0");
  qs_test::test_dir dir;
  qs_test::env_var layout("QS_PAGE_FILE", page_file);
  std::string s = std::to_string(std::random_device{}());
  std::string out;
  int st =
      torture(dir, {"run", "20", "--kinds", "a", "--load", "2", "--seed", s, "--dir", dir.sub("work")}, &out, 280000);
  INFO(out);
  CHECK(st == 0);
  CHECK(out.find("2 busy processes beside it") != std::string::npos);
  CHECK(out.find("kind a (") != std::string::npos);
}
