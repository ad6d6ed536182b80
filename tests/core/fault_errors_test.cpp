// Errors raised in faults (qs/error.hpp): they fail the transaction before
// they are thrown, so that whatever catches one, nothing of the transaction
// is committed; raised inside code that cannot throw, they end the process
// with a message naming the error and the rule.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

using namespace qs_test;

namespace {

// A list of 3000 Pairs under root "head" and a counter root "n" of 1; then
// page 3, in the middle of the list, damaged on disk.
void damaged_list(const std::string& dir) {
  {
    auto db = qs::database::open(dir, small_options());
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < 3000; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    db.root<std::uint64_t>("n") = 1;
    tx.commit();
  }
  corrupt_stored_page(dir, 3, 1000);
}

std::uint64_t walk(qs::database& db) {
  std::uint64_t seen = 0;
  for (Pair* p = db.root<Pair*>("head"); p; p = p->right) seen += touch(p->key) < 3000;
  return seen;
}

// Code that cannot throw, as a std::map iterator's increment is.
__attribute__((noinline)) std::uint64_t walk_noexcept(qs::database& db) noexcept { return walk(db); }

}  // namespace

TEST_CASE("an error a fault raises fails the transaction: caught, commit raises it again and commits nothing") {
  test_dir dir;
  damaged_list(dir.path());
  auto db = qs::database::open(dir.path(), small_options());
  {
    qs::transaction tx(db);
    db.root<std::uint64_t>("n") = 2;
    Pair* head = db.root<Pair*>("head");
    CHECK_THROWS_AS(walk(db), qs::corrupt_page);
    // The objects it reached are still there; explicit calls raise the
    // failure, and so does the commit, which aborts.
    CHECK(head->key == 2999);
    CHECK_THROWS_AS(db.root<Pair*>("head"), qs::corrupt_page);
    CHECK_THROWS_AS(new (db) Pair{}, qs::corrupt_page);
    CHECK_THROWS_WITH(tx.commit(), Catch::Contains("page 3") && Catch::Contains("checksum"));
  }
  {
    // Raised in the fault handler, the error names its database too.
    qs::transaction tx(db);
    CHECK_THROWS_WITH(walk(db), Catch::StartsWith("database " + db.path() + ": ") && Catch::Contains("page 3"));
  }
  qs::transaction tx(db);
  CHECK(db.root<std::uint64_t>("n") == 1);
}

TEST_CASE("an error a fault raises inside noexcept code ends the process, naming the error and the rule") {
  test_dir dir;
  damaged_list(dir.path());
  qs_test::forked r = qs_test::run_forked([&] {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    walk_noexcept(db);
  });
  const std::string& said = r.err;
  INFO(said);
  CHECK(r.status == -SIGABRT);
  CHECK_THAT(said, Catch::Contains("qs: the process ends: a page fault raised") && Catch::Contains("page 3") &&
                       Catch::Contains("inside code that cannot throw") &&
                       Catch::Contains("docs/api.md, \"Errors in faults\""));
}
