// Crash safety: a process killed with SIGKILL in the middle of a
// transaction or of a commit loses nothing that was committed and leaves no
// part of what was not.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <csignal>
#include <string>

using namespace qs_test;

namespace {

constexpr int nodes = 6000;  // per transaction: about 20 pages, more than the pool below
constexpr const char* pool = "16";
// Past the evictions of the first transaction, in a later one: its written
// pages are in the store transaction, which must not survive.
constexpr const char* dirty_eviction = "evict.dirty_written:60";

}  // namespace

TEST_CASE("kill -9 at chosen points: every committed transaction survives, no partial one does", "[kill]") {
  kill_at_chosen_points(nodes, {pool}, "grow", {dirty_eviction});
}

TEST_CASE("kill -9 in transactions that create and delete the same objects, larger than the pool", "[kill]") {
  kill_at_chosen_points(nodes, {pool}, "churn", {"worker.churned:3", dirty_eviction});
}

TEST_CASE("a worker run to the end commits everything") {
  test_dir dir;
  auto c = spawn_worker({dir.sub("db"), "grow", "3", std::to_string(nodes), pool});
  REQUIRE(c.wait() == 0);
  CHECK(committed_transactions(dir.sub("db"), nodes) == 3);
}

TEST_CASE("kill -9 at chosen points of commits whose records' B-tree pages are read ahead beside them",
          "[btree_layout][kill]") {
  env_var layout("QS_PAGE_FILE", "0");  // pages.db's B-tree leaves
  // Each transaction rewrites every node: the second commit writes about 90
  // stored pages and the third about 180, enough for a helper to read their
  // leaves ahead of the writes (pages.db only), with the pool holding them
  // all. The worker opens the database again before each transaction: only
  // a commit whose writes reopened the environment reads ahead. Its own
  // point falls in the third commit or the fourth.
  kill_at_chosen_points(30000, {"1024"}, "reopen", {"commit.reading_ahead:120"});
}

TEST_CASE("kill -9 at chosen points of commits written in bulk transactions", "[bulk][kill]") {
  env_var layout("QS_PAGE_FILE", "0");  // bulk transactions are pages.db's
  // Each transaction rewrites every node and adds 90,000 (265 pages), the
  // pool holding them all: each commit adds 256 pages or more, so it writes
  // in a bulk transaction (store/bdb_store.hpp), which does not log the
  // records it puts on the B-tree pages it adds. Recovery must undo the
  // third whole where it was not committed, and find it whole in pages.db
  // where it was.
  kill_at_chosen_points(90000, {"2048"}, "grow");
}

TEST_CASE("kill -9 at chosen points of transactions larger than the pool written in bulk transactions",
          "[bulk][kill]") {
  // Each transaction adds 900 slabs (a page each) through a pool of 320:
  // its dirty pages are evicted into the store before its commit, and the
  // first of those writes, with 256 pages or more added, begins the bulk
  // transaction (store/bdb_store.hpp): in pages.db, records on B-tree pages
  // it adds, unlogged; in the page file, records written in place into
  // fresh slots (qs/bdb/fresh_slots.hpp). Recovery must undo the third
  // whole where it was not committed, and find it whole where it was.
  constexpr int slabs = 900;
  const auto holds = [&](const std::string& db) { return fill_holds(db, slabs, db + ".check"); };
  struct point {
    const char* name;
    int expect;  // transactions committed when killed; -1: as many as the worker said
    bool page_file_only = false;
  };
  const bool page_file = GENERATE(false, true);
  env_var layout("QS_PAGE_FILE", page_file ? "1" : "0");
  for (const point p : {point{"evict.dirty_written:1500", -1}, point{"commit.half_written:3", 2},
                        point{"commit.before_store_commit:3", 2}, point{"commit.after_store_commit:3", 3},
                        point{"page_file.in_place:1500", -1, true}, point{"page_file.in_place_synced:3", 2, true}}) {
    if (p.page_file_only && !page_file) continue;
    DYNAMIC_SECTION((page_file ? "page file, " : "pages.db, ") << p.name) {
      test_dir dir;
      const std::string db = dir.sub("db");
      auto c = spawn_worker({db, "fill", std::to_string(slabs), "close", "5", "320"}, p.name, dir.sub("worker.err"));
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      const std::string said = c.err();
      INFO("the worker's standard error:\n" << said);
      int expect = p.expect;
      if (expect < 0) {
        expect = commits_said(said);
        REQUIRE(expect >= 1);  // killed after a commit, so that one must survive it
        REQUIRE(expect < 5);   // and before the last
      }
      CHECK(holds(db) == expect);
      check_verifies(db);
      // The database goes on working after recovery.
      CHECK(spawn_worker({db, "fill", std::to_string(slabs), "close", "1", "320"}, "", dir.sub("again.err")).wait() ==
            0);
      CHECK(holds(db) == expect + 1);
      check_verifies(db);
    }
  }
}
