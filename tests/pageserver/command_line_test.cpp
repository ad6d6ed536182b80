// The command lines of qs-pageserver and qs-evolve: a bad value is refused
// before anything starts, with one line naming the option and what it
// takes, and the usage status 2; a --dir that names a file is said to be
// one. The real programs, run as a user runs them.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "support.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace qs_pstest;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// qs-pageserver on a Unix socket in `dir`, with `more` options; its exit
// status (timed_out when it went on serving) and what it said.
struct outcome {
  int status;
  std::string err;
};
outcome run_server(const qs_test::test_dir& dir, const std::string& tag, const std::vector<std::string>& more,
                   const std::string& db = "") {
  std::vector<std::string> argv{QS_PAGESERVER, "--dir", db.empty() ? dir.sub("db") : db, "--unix", dir.sub("sock")};
  argv.insert(argv.end(), more.begin(), more.end());
  process p = spawn(argv, logged(dir.path(), tag));
  int status = p.wait(10000);
  return {status, p.err()};
}

}  // namespace

TEST_CASE("qs-pageserver refuses a number that is negative, has trailing junk or is out of range, naming the option") {
  struct bad {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<bad> cases{
      {{"--cache-mb", "-1"}, "--cache-mb: expected a whole number from 1 to 1048576, got '-1'"},
      {{"--cache-mb", "12abc"}, "--cache-mb: expected a whole number from 1 to 1048576, got '12abc'"},
      {{"--cache-mb", "0x10"}, "--cache-mb: expected a whole number from 1 to 1048576, got '0x10'"},
      {{"--outcome-window", "-1"}, "--outcome-window: expected a whole number from 0 to 31536000, got '-1'"},
      {{"--wait-spin-us", "100001"}, "--wait-spin-us: expected a whole number from 0 to 100000, got '100001'"},
      {{"--max-connections", "0"}, "--max-connections: expected a whole number from 1 to 1000000, got '0'"},
      {{"--buffer-mb", "18446744073709551617"},
       "--buffer-mb: expected a whole number from 1 to 1000000, got '18446744073709551617'"},
      {{"--lock-timeout", "5000"}, "--lock-timeout: expected seconds from 0 to 4294"},
      {{"--idle-timeout", "-0.5"}, "--idle-timeout: expected seconds from 0 to 31536000"},
      {{"--snapshot-max-age", "2y"}, "--snapshot-max-age: expected seconds from 0 to 31536000"},
      {{"--handshake-timeout", "1e3"}, "--handshake-timeout: expected seconds from 0.001 to 31536000"},
      {{"--tcp", "70000", "--secret-file", "x"}, "--tcp: expected [HOST:]PORT with PORT from 0 to 65535, got '70000'"},
  };
  int n = 0;
  for (const bad& c : cases) {
    qs_test::test_dir dir;
    outcome o = run_server(dir, "bad" + std::to_string(n++), c.args);
    INFO(c.args[0] << " " << c.args[1] << ": " << o.err);
    CHECK(o.status == 2);
    CHECK(has(o.err, "qs-pageserver: " + c.expected));
    CHECK_FALSE(std::filesystem::exists(dir.sub("db")));  // refused before the server opened anything
  }
}

TEST_CASE("qs-pageserver --dir naming a regular file says it is not a directory") {
  qs_test::test_dir dir;
  std::string file = dir.sub("a-file");
  { std::ofstream(file) << "not a database\n"; }
  outcome o = run_server(dir, "file", {}, file);
  INFO(o.err);
  CHECK(o.status == 1);
  CHECK(has(o.err, "database " + file + " is not a directory"));
  CHECK_FALSE(has(o.err, "another process"));
}

TEST_CASE(
    "qs-pageserver refuses an embedded database with a page file, saying how to move it; moved so, it serves it") {
  qs_test::test_dir dir;
  // An embedded database made with qs's defaults: its pages in pages.qs.
  const std::string embedded = dir.sub("embedded");
  auto bank = [&](const std::string& url, const std::vector<std::string>& args, const std::string& tag,
                  std::vector<std::string> env = {}) {
    std::vector<std::string> argv{QS_PS_BANK, url};
    argv.insert(argv.end(), args.begin(), args.end());
    process p = spawn(argv, logged(dir.path(), tag, std::move(env)));
    int st = p.wait(60000);
    INFO(tag << ": " << p.out() << p.err());
    return st;
  };
  REQUIRE(bank(embedded, {"setup"}, "setup") == 0);
  REQUIRE(bank(embedded, {"transfer", "0", "20"}, "transfer") == 0);
  REQUIRE(std::filesystem::exists(embedded + "/pages.qs"));
  outcome o = run_server(dir, "refused", {}, embedded);
  INFO(o.err);
  CHECK(o.status == 1);
  CHECK(has(o.err, "keeps its pages in pages.qs"));
  CHECK(has(o.err, "qs-inspect " + embedded + " dump > FILE, then QS_PAGE_FILE=0 qs-inspect NEWDIR load FILE"));
  // Moved as the message says, the database is served, whole.
  const std::string dumped = dir.sub("bank.jsonl"), moved = dir.sub("s/db");
  process d = spawn({QS_INSPECT, embedded, "dump"}, logged(dir.path(), "dump"));
  REQUIRE(d.wait(60000) == 0);
  { std::ofstream(dumped) << d.out(); }
  process l = spawn({QS_INSPECT, moved, "load", dumped}, logged(dir.path(), "load", {"QS_PAGE_FILE=0"}));
  INFO(l.err());
  REQUIRE(l.wait(60000) == 0);
  CHECK(std::filesystem::exists(moved + "/pages.db"));
  CHECK_FALSE(std::filesystem::exists(moved + "/pages.qs"));
  server_process s(dir.sub("s"));
  s.start();
  CHECK(bank(s.unix_url(), {"check", "1", "20"}, "check", {"QS_SECRET=" + s.secret()}) == 0);
  CHECK(bank(s.unix_url(), {"transfer", "0", "5"}, "more", {"QS_SECRET=" + s.secret()}) == 0);
}

TEST_CASE("qs-pageserver --help lists the options; an unknown option is a usage error") {
  qs_test::test_dir dir;
  process h = spawn({QS_PAGESERVER, "--help"}, logged(dir.path(), "help"));
  CHECK(h.wait(10000) == 0);
  for (const char* option :
       {"--dir", "--unix", "--tcp", "--secret-file", "--ready-file", "--cache-mb", "--outcome-window",
        "--log-conflicts", "--max-connections", "--max-handshakes", "--handshake-timeout", "--idle-timeout",
        "--lock-timeout", "--txn-timeout", "--snapshot-max-age", "--buffer-mb", "--wait-spin-us"})
    CHECK(has(h.out(), option));
  outcome o = run_server(dir, "unknown", {"--cache-size", "64"});
  CHECK(o.status == 2);
  CHECK(has(o.err, "--cache-size"));
}

TEST_CASE("qs-evolve refuses a command line without a program, naming --program") {
  qs_test::test_dir dir;
  process missing = spawn({QS_EVOLVE, dir.sub("db")}, logged(dir.path(), "missing"));
  CHECK(missing.wait(10000) == 2);
  CHECK(has(missing.err(), "--program is required"));
  process no_value = spawn({QS_EVOLVE, dir.sub("db"), "--program"}, logged(dir.path(), "no-value"));
  CHECK(no_value.wait(10000) == 2);
  CHECK(has(no_value.err(), "qs-evolve: --program"));
  process unknown =
      spawn({QS_EVOLVE, dir.sub("db"), "--program", QS_EVOLVE, "--dryrun"}, logged(dir.path(), "unknown"));
  CHECK(unknown.wait(10000) == 2);
  CHECK(has(unknown.err(), "--dryrun"));
  CHECK_FALSE(std::filesystem::exists(dir.sub("db")));
}
