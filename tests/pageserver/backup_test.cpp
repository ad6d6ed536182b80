// Hot backups through qs-pageserver: the server copies its environment into
// a directory under its --backup-dir while clients commit; the copy opens as
// an embedded database holding a committed prefix, and passes verify.
#include <catch2/catch.hpp>

#include "backup_load.hpp"
#include "harness.hpp"
#include "support.hpp"
#include "types.hpp"

#include <qs/inspect.hpp>

#include <filesystem>
#include <sstream>
#include <string>

using namespace qs_pstest;
using qs_test::Pair;

TEST_CASE("a backup through the page server, taken while a client commits, holds a committed prefix", "[backup]") {
  qs_test::temp_dir dir;
  server_process s(dir.sub("s"));
  const std::string backups = dir.sub("backups");
  std::filesystem::create_directories(backups);
  s.start("", {"--backup-dir", backups});
  std::pair<std::uint64_t, std::uint64_t> span;
  {
    auto db = qs::database::open(s.unix_url(), client_options(s));
    span = qs_test::commit_during<Pair>(db, [&] { db.backup("during"); });
  }
  INFO("backup between commits " << span.first << " and " << span.second);
  CHECK(span.second > span.first);
  // qs-inspect asks the same of the server, on TCP with the secret.
  qs::options o;
  o.server_secret = s.secret();
  qs::inspector(s.tcp_url(), o).backup("after");
  // And reads the served database in a snapshot: stat and verify.
  {
    qs::inspector served(s.unix_url());
    std::ostringstream stat;
    served.stat(stat);
    CHECK_THAT(stat.str(), Catch::Contains("(kept by the page server)") && Catch::Contains("qs_test::Pair"));
    std::string problems;
    CHECK(served.verify([&](const std::string& line) { problems += line + "\n"; }) == 0);
    CHECK(problems.empty());
  }
  CHECK(s.terminate() == 0);
  CHECK_THAT(s.log(), Catch::Contains("hot backup into " + backups + "/during"));

  for (const char* name : {"during", "after"}) {
    const std::string copy = backups + "/" + name;
    qs_test::check_verifies(copy);
    auto db = qs::database::open(copy, qs_test::small_options());
    const std::int64_t n = qs_test::committed_prefix<Pair>(db);
    CHECK(n >= static_cast<std::int64_t>(span.first));
    CHECK(n <= static_cast<std::int64_t>(span.second) + 1);
  }
}

TEST_CASE("a page server refuses a backup without --backup-dir, or with a name that is not one directory", "[backup]") {
  qs_test::temp_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  auto db = qs::database::open(s.unix_url(), client_options(s));
  try {
    db.backup("x");
    FAIL("a backup was made");
  } catch (const qs::invalid_argument& e) {
    CHECK_THAT(e.what(), Catch::Contains("start it with --backup-dir"));
  }
  CHECK(s.terminate() == 0);
  std::filesystem::create_directories(dir.sub("backups"));
  s.start("", {"--backup-dir", dir.sub("backups")});
  auto again = qs::database::open(s.unix_url(), client_options(s));
  for (const char* bad : {"../elsewhere", "a/b", ".hidden"}) {
    INFO(bad);
    CHECK_THROWS_AS(again.backup(bad), qs::invalid_argument);
  }
  again.backup("ok");
  CHECK_THROWS_WITH(again.backup("ok"), Catch::Contains("is not empty"));
  CHECK(std::filesystem::exists(dir.sub("backups") + "/ok/closed-cleanly"));
}
