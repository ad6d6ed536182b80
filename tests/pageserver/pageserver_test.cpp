// Integration tests of qs-pageserver: real servers on a Unix socket and a
// loopback TCP port, client processes updating counters concurrently,
// deadlocks, dropped connections, kill -9 of the server, hostile bytes.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "ps_types.hpp"
#include "support.hpp"
#include "types.hpp"
#include "wire_client.hpp"

#include <qs/bdb/bdb_env.hpp>
#include <qs/wire/connection.hpp>
#include <qs/wire/messages.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

using namespace qs_pstest;

namespace {

// Runs `n` incr workers (ids 0..n-1) of `txns` transactions at once, then
// checks that no increment was lost or applied twice.
void concurrent_counters(server_process& s, const std::string& url, int n, int txns) {
  REQUIRE(run_worker(s, url, {"setup"}, "setup") == 0);
  std::vector<process> ws;
  for (int i = 0; i < n; ++i)
    ws.push_back(worker(s, url, {"incr", std::to_string(i), std::to_string(txns), std::to_string(1000 + i)},
                        "incr" + std::to_string(i)));
  for (int i = 0; i < n; ++i) {
    int st = ws[i].wait(90000);
    INFO("worker " << i << ": " << ws[i].err());
    CHECK(st == 0);
  }
  process c = worker(s, url, {"check", std::to_string(n), std::to_string(txns)}, "check");
  int st = c.wait(30000);
  INFO(c.err());
  CHECK(st == 0);
}

qs::wire::request hello(const std::string& secret) {
  return qs::wire::hello_request{qs::wire::magic, qs::wire::version, secret};
}

}  // namespace

TEST_CASE_METHOD(server_fixture, "two clients update disjoint and overlapping pages: nothing lost or applied twice") {
  concurrent_counters(s, s.unix_url(), 2, 150);
}

TEST_CASE_METHOD(server_fixture,
                 "eight clients over TCP update disjoint and overlapping pages: nothing lost or applied twice") {
  concurrent_counters(s, s.tcp_url(), 8, 60);
  CHECK(s.log().find("connection from tcp 127.0.0.1") != std::string::npos);
}

TEST_CASE_METHOD(
    server_fixture,
    "crossed writes: one client's commit is refused with qs::conflict (a qs::deadlock), the other commits") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process a = worker(s, s.unix_url(), {"deadlock", "5", "6", sync}, "a");
  process b = worker(s, s.unix_url(), {"deadlock", "6", "5", sync}, "b");
  int sa = a.wait(30000), sb = b.wait(30000);
  INFO("a: " << a.out() << a.err() << "\nb: " << b.out() << b.err());
  CHECK(((sa == 0 && sb == 3) || (sa == 3 && sb == 0)));
  // Refused by the server, or by the client itself when the other's
  // invalidation of a page it read came first.
  const std::string said = a.out() + b.out();
  const bool by_server = said.find("deadlock: server " + s.unix_url() + ": commit refused: page ") != std::string::npos;
  CHECK(
      (by_server || said.find("deadlock: database " + s.unix_url() + ": commit refused: page ") != std::string::npos));
  // Only the winner's two increments are there.
  process c5 = worker(s, s.unix_url(), {"bump", "5"}, "c5");
  process c6 = worker(s, s.unix_url(), {"bump", "6"}, "c6");
  CHECK(c5.wait(20000) == 0);
  CHECK(c6.wait(20000) == 0);
  CHECK(c5.out() == "value=2\n");
  CHECK(c6.out() == "value=2\n");
  // A conflict is not an error of the server's: counted, not logged as one
  // (without --log-conflicts); SIGUSR1 logs the counts.
  CHECK(s.log().find("] error: ") == std::string::npos);
  CHECK(s.log().find("conflict") == std::string::npos);
  s.signal(SIGUSR1);
  for (int i = 0; i < 500 && s.log().find("statistics: ") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  INFO(s.log());
  CHECK(s.log().find(by_server ? " 1 refused for a conflict (" : " 0 refused for a conflict") != std::string::npos);
}

namespace {

// Counters 10 and 11 hold 50 each; two clients each read both and, seeing
// 100, take 100 from their own, which keeps the two at 0 or more if either
// runs alone. Returns whether their sum is still 0 or more.
bool write_skew_keeps_invariant(const std::string& isolation) {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  REQUIRE(run_worker(s, s.unix_url(), {"set", "10", "50"}, "set10") == 0);
  REQUIRE(run_worker(s, s.unix_url(), {"set", "11", "50"}, "set11") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process a = worker(s, s.unix_url(), {"skew", "10", "11", sync, isolation}, "a");
  process b = worker(s, s.unix_url(), {"skew", "11", "10", sync, isolation}, "b");
  int sa = a.wait(30000), sb = b.wait(30000);
  INFO(isolation << "\na: " << sa << " " << a.out() << a.err() << "\nb: " << sb << " " << b.out() << b.err());
  REQUIRE(((sa == 0 || sa == 3) && (sb == 0 || sb == 3)));
  process x = worker(s, s.unix_url(), {"show", "10"}, "x");
  process y = worker(s, s.unix_url(), {"show", "11"}, "y");
  REQUIRE(x.wait(20000) == 0);
  REQUIRE(y.wait(20000) == 0);
  long sum = std::stol(x.out().substr(6)) + std::stol(y.out().substr(6));
  INFO("x + y = " << sum);
  // Serializable: the loser learns it at its commit, by qs::conflict.
  if (isolation == "serializable") CHECK(sa + sb == 3);
  // With prefetch on, the other counter's page came ahead of its use (the
  // next pointer of the table): a prefetched page, once used, is one the
  // serializable transaction read. (Under snapshot isolation reads are not
  // checked, and prefetched pages are shown unwatched, uncounted.)
  if (const char* p = std::getenv("QS_PREFETCH"); isolation == "serializable" && (!p || std::string(p) != "0"))
    CHECK((a.out() + b.out()).find("used=0\n") == std::string::npos);
  return sum >= 0;
}

}  // namespace

TEST_CASE_METHOD(server_fixture,
                 "a page prefetched and never touched is not read by the transaction: its change is no conflict") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  // Serializable: a page the transaction read and another client changed
  // refuses its commit. Counter 21's page comes with counter 20's (the next
  // pointer of the table, the next page), unused.
  process a = worker(s, s.unix_url(), {"blind", "20", sync}, "a");
  REQUIRE(wait_for_file(sync + "/read"));
  REQUIRE(run_worker(s, s.unix_url(), {"bump", "21"}, "bump21") == 0);
  std::ofstream(sync + "/go").put('\n');
  int st = a.wait(30000);
  INFO(a.out() << a.err());
  const std::string out = a.out();
  if (const char* p = std::getenv("QS_PREFETCH"); !p || std::string(p) != "0") {
    // Prefetch brought pages (counter 21's among them), and the program
    // used only counter 20's.
    CHECK(out.find("prefetched=0 ") == std::string::npos);
    CHECK(out.find(" used=1\n") != std::string::npos);
  }
  CHECK(st == 0);
  CHECK(out.find("committed") != std::string::npos);
}

TEST_CASE_METHOD(server_fixture,
                 "a prefetched page that one-time relocation writes back commits: it was read at its version") {
  using qs_test::Node;
  constexpr int n = 3000;  // about a dozen pages
  {
    auto db = qs::database::open(s.unix_url(), qs_test::small_options());
    qs::transaction tx(db);
    auto& head = db.root<Node*>("list");
    for (int i = 0; i < n; ++i) head = new (db) Node{i, head};
    tx.commit();
  }
  // Every page is moved when it comes in, and written back with its new
  // pointers at the commit, touched or only prefetched.
  qs::options o = qs_test::small_options();
  o.relocation_policy = qs::relocation::one_time;
  o.force_relocation_percent = 100;
  {
    auto db = qs::database::open(s.unix_url(), o);
    qs::transaction tx(db);
    CHECK(db.root<Node*>("list")->value == n - 1);
    const qs::statistics st = db.stats();
    tx.commit();  // the pages prefetched with the head's are written too
    if (const char* p = std::getenv("QS_PREFETCH"); !p || std::string(p) != "0") {
      CHECK(st.pages_prefetched > 0);
      CHECK(db.stats().pages_written > 1);
    }
  }
  auto db = qs::database::open(s.unix_url(), qs_test::small_options());
  qs::transaction tx(db);
  std::int64_t expect = n - 1;
  for (Node* p = db.root<Node*>("list"); p; p = p->next) REQUIRE(p->value == expect--);
  CHECK(expect == -1);
}

TEST_CASE("write skew: serializable commits keep x + y >= 0; snapshot isolation lets both withdrawals commit") {
  CHECK(write_skew_keeps_invariant("serializable"));
  // The option's documented weakness, shown: each commit wrote only its own
  // page, which nobody else wrote.
  CHECK_FALSE(write_skew_keeps_invariant("snapshot"));
}

TEST_CASE("a conflict met by a transaction that deletes an object is raised by its commit, like any other") {
  // `delete` cannot throw: whatever goes wrong is raised by the commit, so
  // that db.run can retry. Both clients delete; the loser, whichever it is,
  // must end with qs::conflict (caught as qs::deadlock), not with abort().
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process a = worker(s, s.unix_url(), {"deadlock", "5", "6", sync, "delete"}, "a");
  process b = worker(s, s.unix_url(), {"deadlock", "6", "5", sync, "delete"}, "b");
  int sa = a.wait(30000), sb = b.wait(30000);
  INFO("a: " << sa << " " << a.out() << a.err() << "\nb: " << sb << " " << b.out() << b.err());
  CHECK(((sa == 0 && sb == 3) || (sa == 3 && sb == 0)));
  // Refused by the server, or by the client when the winner's invalidation
  // came first.
  const std::string said = a.out() + b.out();
  CHECK((said.find("deadlock: server " + s.unix_url() + ": commit refused: page ") != std::string::npos ||
         said.find("deadlock: database " + s.unix_url() + ": commit refused: page ") != std::string::npos));
}

TEST_CASE("a client's index names the same index after the server restarts") {
  // Index numbers are the server's, given in the order its clients open
  // indexes. A client that outlives the server must not go on with the old
  // numbers: here "second" takes, on the new server, the number "first" had.
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process w = worker(s, s.unix_url(), {"index-restart", sync + "/go", sync}, "w");
  for (int i = 0; i < 1000 && !std::filesystem::exists(sync + "/ready"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(std::filesystem::exists(sync + "/ready"));
  s.kill9();
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"index-keys", "second"}, "open-second") == 0);
  std::ofstream(sync + "/go").put('\n');
  int st = w.wait(60000);
  INFO(w.out() << w.err());
  REQUIRE(st == 0);
  process first = worker(s, s.unix_url(), {"index-keys", "first"}, "first");
  process second = worker(s, s.unix_url(), {"index-keys", "second"}, "second");
  CHECK(first.wait(20000) == 0);
  CHECK(second.wait(20000) == 0);
  CHECK(first.out() == "keys: 1 2\n");
  CHECK(second.out() == "keys:\n");
}

TEST_CASE_METHOD(server_fixture, "a connection dropped in a transaction has it aborted and its locks freed") {
  REQUIRE(run_worker(s, s.tcp_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process h = worker(s, s.tcp_url(), {"hold", "7", sync}, "hold");
  for (int i = 0; i < 1000 && !std::filesystem::exists(sync + "/held"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(std::filesystem::exists(sync + "/held"));
  h.kill9();
  // The page's exclusive lock is free again: another client writes it.
  process b = worker(s, s.tcp_url(), {"bump", "7"}, "bump");
  CHECK(b.wait(20000) == 0);
  CHECK(b.out() == "value=1\n");  // the holder's +1000 never happened
  CHECK(s.log().find("its open transaction is aborted") != std::string::npos);
}

TEST_CASE_METHOD(server_fixture, "kill -9 of the server during a commit: recovery keeps it atomic; clients reconnect") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  int stopped = s.terminate();
  INFO(s.log());
  REQUIRE(stopped == 0);
  CHECK(s.log().find("stopped") != std::string::npos);
  // The second commit after this start stops with half of its 64 page
  // writes applied in its Berkeley DB transaction.
  s.start("server.commit.half_applied:2");
  std::string go = dir.sub("go");
  process w = worker(s, s.unix_url(), {"all", "4", go}, "all");
  REQUIRE(s.wait_paused(30000));
  s.kill9();
  // Recovery: the first transaction is there entirely, the second not at all.
  s.start();
  CHECK(run_worker(s, s.unix_url(), {"same"}, "same1") == 11);
  { std::ofstream(go.c_str()); }  // the client goes on: it reconnects and retries
  int st = w.wait(60000);
  INFO(w.out() << w.err());
  CHECK(st == 0);
  CHECK(w.out().find("connection_lost: server " + s.unix_url()) != std::string::npos);
  CHECK(w.out().find("done") != std::string::npos);
  CHECK(run_worker(s, s.unix_url(), {"same"}, "same2") == 14);
}

TEST_CASE_METHOD(server_fixture,
                 "kill -9 of the server while a commit's pages come ahead in parts: none of them stand") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  REQUIRE(s.terminate() == 0);
  // The first commit's 300 KiB of changes go ahead in parts as they are
  // written back (remote_store.hpp); the server stops with two of them in
  // its Berkeley DB transaction.
  s.start("server.write.applied:2");
  std::string go = dir.sub("go");
  process w = worker(s, s.unix_url(), {"all", "2", go, "whole"}, "all");
  REQUIRE(s.wait_paused(30000));
  s.kill9();
  s.start();
  CHECK(run_worker(s, s.unix_url(), {"same"}, "same1") == 10);
  { std::ofstream(go.c_str()); }
  int st = w.wait(60000);
  INFO(w.out() << w.err());
  CHECK(st == 0);
  CHECK(w.out().find("connection_lost: server " + s.unix_url()) != std::string::npos);
  CHECK(run_worker(s, s.unix_url(), {"same"}, "same2") == 12);
}

// The crash worker's slab transactions (tests/core/crash_worker.cpp) through
// the server: each adds 300 pages, a commit the server writes in a bulk
// transaction (bdb_env.hpp, bulk_min_pages).
constexpr int bulk_slabs = 300;
static_assert(bulk_slabs >= static_cast<int>(qs::detail::bulk_min_pages));

TEST_CASE_METHOD(server_fixture, "kill -9 of the server in a commit written in bulk: the committed ones stand, whole",
                 "[bulk]") {
  const std::string point = GENERATE(as<std::string>{}, "server.write.applied:60", "server.commit.before_commit:3",
                                     "server.commit.half_applied:3", "server.commit.after_commit:3");
  INFO("the server stops at " << point);
  REQUIRE(s.terminate() == 0);
  s.start(point);
  const std::string url = s.unix_url(), err = dir.sub("fill.err");
  process w = qs_test::spawn_worker({url, "fill", std::to_string(bulk_slabs), "close", "5", "512"}, "", err);
  REQUIRE(s.wait_paused(60000));
  w.kill9();  // before it asks the restarted server what became of its commit
  const int said = qs_test::commits_said(qs_test::read_file(err));
  INFO(qs_test::read_file(err));
  // The first commit creates the database: the point is met in the second
  // slab transaction or later, each begun in bulk.
  REQUIRE(said >= 1);
  s.signal(SIGUSR1);  // the statistics line, from the server's main thread
  const bool counted = logs_within(s, " " + std::to_string(said + 1) + " written in bulk transactions", 20000);
  INFO(s.log());
  CHECK(counted);
  s.kill9();
  s.start();
  const bool committed = point.starts_with("server.commit.after_commit");
  CHECK(qs_test::fill_holds(url, bulk_slabs, dir.sub("check.err")) == said + (committed ? 1 : 0));
  // And the database goes on.
  process more =
      qs_test::spawn_worker({url, "fill", std::to_string(bulk_slabs), "close", "1", "512"}, "", dir.sub("more.err"));
  CHECK(more.wait(60000) == 0);
  CHECK(qs_test::fill_holds(url, bulk_slabs, dir.sub("check2.err")) == said + (committed ? 2 : 1));
  REQUIRE(s.terminate() == 0);
  CHECK(s.log().find("1 written in bulk transactions") != std::string::npos);
}

TEST_CASE_METHOD(server_fixture, "an index update in a transaction written in bulk is refused with a conflict",
                 "[bulk]") {
  REQUIRE(run_worker(s, s.tcp_url(), {"setup"}, "setup") == 0);
  wire_client c(s.port());
  c.log_in(s.secret());
  c.send(qs::wire::open_index_request{"bulk_refusal", true});
  const auto ix = c.receive();
  REQUIRE(std::holds_alternative<qs::wire::index_response>(ix));
  c.send(qs::wire::begin_request{});
  REQUIRE(std::holds_alternative<qs::wire::begun_response>(c.receive()));
  // Its commit's first part says it adds 300 pages: the server begins the
  // transaction in bulk, holding the commit gate alone.
  qs::wire::write_request w;
  w.adds_pages = 300;
  c.send(w);
  REQUIRE(std::holds_alternative<qs::wire::ok_response>(c.receive()));
  c.send(qs::wire::index_insert_request{std::get<qs::wire::index_response>(ix).index, "k", "v"});
  const auto refused = c.receive();
  const auto* e = std::get_if<qs::wire::error_response>(&refused);
  REQUIRE(e);
  CHECK(e->code == qs::wire::error_code::conflict);
  CHECK(std::string(e->text).find("index update refused: the transaction is writing its commit's pages in bulk") !=
        std::string::npos);
  c.send(qs::wire::abort_request{});
  REQUIRE(std::holds_alternative<qs::wire::ok_response>(c.receive()));
  // The gate is free again: another client commits.
  process b = worker(s, s.tcp_url(), {"bump", "5"}, "bump");
  CHECK(b.wait(20000) == 0);
  CHECK(b.out() == "value=1\n");
}

TEST_CASE_METHOD(server_fixture,
                 "commits written in bulk run alone while other clients commit: nothing lost, nothing stuck",
                 "[bulk]") {
  const std::string url = s.unix_url();
  REQUIRE(run_worker(s, url, {"setup"}, "setup") == 0);
  process fill =
      qs_test::spawn_worker({url, "fill", std::to_string(bulk_slabs), "close", "4", "512"}, "", dir.sub("fill.err"));
  std::vector<process> incr;
  for (int i = 0; i < 2; ++i)
    incr.push_back(
        worker(s, url, {"incr", std::to_string(i), "150", std::to_string(2000 + i)}, "incr" + std::to_string(i)));
  for (auto& p : incr) {
    int st = p.wait(90000);
    INFO(p.err());
    CHECK(st == 0);
  }
  {
    int st = fill.wait(90000);
    INFO(fill.err());
    REQUIRE(st == 0);
  }
  CHECK(qs_test::fill_holds(url, bulk_slabs, dir.sub("check.err")) == 4);
  CHECK(run_worker(s, url, {"check", "2", "150"}, "check") == 0);
  REQUIRE(s.terminate() == 0);
  // Each slab transaction began one at its first attempt, and perhaps at
  // an attempt after a conflict with the counters' commits; none of those
  // small commits did.
  const std::string log = s.log(), said = fill.err();
  const auto at = log.rfind(" written in bulk transactions");
  REQUIRE(at != std::string::npos);
  const auto from = log.rfind(' ', at - 1) + 1;
  const int bulk = std::stoi(log.substr(from, at - from));
  int conflicts = 0;
  for (auto c = said.find("conflict "); c != std::string::npos; c = said.find("conflict ", c + 1)) ++conflicts;
  INFO(log.substr(from > 200 ? from - 200 : 0, 400) << "\n" << said);
  CHECK(bulk >= 4);
  CHECK(bulk <= 4 + conflicts);
}

TEST_CASE_METHOD(server_fixture,
                 "malformed, truncated, oversized and out-of-order messages close only their connection") {
  REQUIRE(run_worker(s, s.tcp_url(), {"setup"}, "setup") == 0);
  // A well-behaved client stays connected, in a transaction, throughout.
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  SECTION("garbage") {
    wire_client c(s.port());
    c.send_bytes("\x05\x00\x00\x00xxxxx", 9);
    CHECK(c.drain(5000).find("protocol error") != std::string::npos);
  }
  SECTION("truncated") {
    wire_client c(s.port());
    c.send(hello(s.secret()));
    c.send_bytes("\x64\x00\x00\x00\x02\x01", 6);  // says 100 bytes, sends 2, hangs up
    ::shutdown(c.fd, SHUT_WR);
    CHECK(c.drain(5000).find("<still open>") == std::string::npos);
  }
  SECTION("a hello of another protocol version") {
    // Version 10's hello: magic, version, secret; no read_replica flag.
    wire_client c(s.port());
    c.send_bytes(
        "\x0f\x00\x00\x00\x01QSWP\x0a\x00\x00\x00\x02\x00\x00\x00"
        "ab",
        19);
    CHECK(c.drain(5000).find("the client speaks protocol version 10, the server version") != std::string::npos);
  }
  SECTION("oversized") {
    wire_client c(s.port());
    c.send_bytes("\xf0\xff\xff\xff", 4);
    CHECK(c.drain(5000).find("more than the limit") != std::string::npos);
  }
  SECTION("out of order") {
    wire_client c(s.port());
    qs::wire::request commit = qs::wire::commit_request{};
    c.send(commit);  // before hello
    CHECK(c.drain(5000).find("expected hello") != std::string::npos);
    wire_client d(s.port());
    d.send(hello(s.secret()));
    d.send(commit);  // outside a transaction
    CHECK(d.drain(5000).find("commit outside a transaction") != std::string::npos);
  }
  SECTION("wrong secret") {
    wire_client c(s.port());
    c.send(hello("guess"));
    CHECK(c.drain(5000).find("authentication failed: wrong shared secret") != std::string::npos);
  }
  SECTION("no secret") {
    wire_client c(s.port());
    c.send(hello(""));
    CHECK(c.drain(5000).find("the client gave none") != std::string::npos);
  }
  SECTION("a client that writes the server's counters") {
    wire_client c(s.port());
    c.send(hello(s.secret()));
    c.send(qs::wire::begin_request{});
    qs::wire::commit_request w;
    qs::wire::meta_op op;
    op.key = "next_page";
    op.value = "1";
    w.metas.push_back(op);
    c.send(w);
    CHECK(c.drain(5000).find("'next_page', which the server owns once the database exists") != std::string::npos);
    wire_client d(s.port());
    d.send(hello(s.secret()));
    d.send(qs::wire::begin_request{});
    qs::wire::commit_request u;
    op.key = "x:anything";
    u.metas.push_back(op);
    d.send(u);
    CHECK(d.drain(5000).find("which no client writes") != std::string::npos);
  }
  SECTION("a bad patch inside a transaction") {
    wire_client c(s.port());
    c.send(hello(s.secret()));
    c.send(qs::wire::begin_request{});
    qs::wire::write_request w;
    qs::wire::page_op op;
    op.page = 1;
    op.record = "short";
    w.pages.push_back(op);
    c.send(w);
    CHECK(c.drain(5000).find("a record of 5 bytes") != std::string::npos);
  }
  SECTION("random frames") {
    std::minstd_rand rng(7);
    for (int i = 0; i < 100; ++i) {
      wire_client c(s.port());
      if (i % 2) c.send(hello(s.secret()));
      std::string body(1 + rng() % 64, '\0');
      for (auto& ch : body) ch = static_cast<char>(rng());
      if (i % 3 == 0) body[0] = static_cast<char>(1 + rng() % 16);  // a known type, random fields
      std::uint32_t n = static_cast<std::uint32_t>(body.size());
      char len[4] = {static_cast<char>(n), 0, 0, 0};
      c.send_bytes(len, 4);
      c.send_bytes(body.data(), body.size());
      ::shutdown(c.fd, SHUT_WR);
      CHECK(c.drain(5000).find("<still open>") == std::string::npos);  // answered, then closed
    }
  }
  CHECK(s.running());
  CHECK(s.log().find("] error: ") != std::string::npos);  // each one logged
  process b = worker(s, s.tcp_url(), {"bump", "3"}, "bump");
  CHECK(b.wait(20000) == 0);
  CHECK(b.out() == "value=1\n");
}

TEST_CASE_METHOD(server_fixture, "pages cached across transactions are revalidated, not resent") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  REQUIRE(run_worker(s, s.unix_url(), {"bump", "9"}, "bump1") == 0);
  qs::options o = qs_test::small_options(64, qs_test::commits::durable);
  auto db = qs::database::open(s.unix_url(), o);
  auto read9 = [&] {
    std::int64_t v = 0;
    db.run([&] { v = qs_test::touch(db.root<Table*>("table")->c[9]->value); });
    return v;
  };
  CHECK(read9() == 1);
  auto fetched = db.stats().pages_fetched;
  CHECK(read9() == 1);
  CHECK(db.stats().pages_fetched == fetched);  // both pages answered "unchanged"
  REQUIRE(run_worker(s, s.unix_url(), {"bump", "9"}, "bump2") == 0);
  CHECK(read9() == 2);
  CHECK(db.stats().pages_fetched == fetched + 1);  // only the counter's page came again
}

TEST_CASE("the server refuses a secret file others can read, and stops cleanly on SIGTERM") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  ::chmod(s.secret_file().c_str(), 0644);
  process p = spawn({QS_PAGESERVER, "--dir", dir.sub("db"), "--tcp", "0", "--secret-file", s.secret_file()},
                    logged(dir.path(), "refused"));
  CHECK(p.wait(10000) == 2);
  CHECK(p.err().find("readable or writable by group or others") != std::string::npos);
  process q = spawn({QS_PAGESERVER, "--dir", dir.sub("db"), "--tcp", "0"}, logged(dir.path(), "nosecret"));
  CHECK(q.wait(10000) == 2);
  ::chmod(s.secret_file().c_str(), 0600);
  s.start();
  // While served, the directory is closed to embedded clients.
  CHECK_THROWS_AS(qs::database::open(dir.sub("s") + "/db", qs_test::small_options()), qs::database_in_use);
  CHECK(s.terminate() == 0);
  CHECK(s.log().find("stopped") != std::string::npos);
}

TEST_CASE("through the server: evictions, aborts, large objects, indexes, relocation and reopening work as embedded") {
  using qs_test::Blob;
  using qs_test::Node;
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  // The list below takes ~80 pages: dirty evictions within the transaction.
  qs::options o = qs_test::small_options(32);
  constexpr int n = 20000;
  {
    auto db = qs::database::open(s.unix_url(), o);
    qs::transaction tx(db);
    auto& head = db.root<Node*>("list");
    for (int i = 0; i < n; ++i) head = new (db) Node{i, head};
    qs::index<int, Node> by_value(db, "by_value", qs::unique);
    for (Node* p = head; p && p->value >= n - 100; p = p->next) by_value.insert(static_cast<int>(p->value), p);
    CHECK_THROWS_AS(by_value.insert(n - 1, head), qs::duplicate_key);
    auto& blob = db.root<Blob*>("blob");
    blob = new (db) Blob{};
    blob->words[0] = 1;
    blob->words[39999] = 2;
    blob->self = blob;
    tx.commit();
    CHECK(db.stats().dirty_evictions > 0);
  }
  {
    auto db = qs::database::open(s.unix_url(), o);
    {
      qs::transaction tx(db);
      Node* head = db.root<Node*>("list");
      head->value = -1;
      tx.abort();
    }
    qs::transaction tx(db);
    std::int64_t count = 0, expect = n - 1;
    bool ordered = true;
    for (Node* p = db.root<Node*>("list"); p; p = p->next, ++count) ordered = ordered && p->value == expect--;
    CHECK(count == n);
    CHECK(ordered);  // includes the aborted write's page
    qs::index<int, Node> by_value(db, "by_value", qs::unique);
    REQUIRE(by_value.find(n - 7) != nullptr);
    CHECK(by_value.find(n - 7)->value == n - 7);
    CHECK(by_value.find(n - 101) == nullptr);
    int seen = 0;
    by_value.range(n - 10, n - 1, [&](int k, Node* p) {
      CHECK(p->value == k);
      ++seen;
      return true;
    });
    CHECK(seen == 10);
    Blob* b = db.root<Blob*>("blob");
    CHECK(b->words[0] == 1);
    CHECK(b->words[39999] == 2);
    CHECK(b->self == b);
    delete b;
    db.root<Blob*>("blob") = nullptr;
    tx.commit();
  }
  {
    // Every page moved on its way in, and written back (one-time
    // relocation): the mapping objects come from the server with the pages.
    qs::options r = o;
    r.force_relocation_percent = 100;
    r.relocation_policy = qs::relocation::one_time;
    auto db = qs::database::open(s.unix_url(), r);
    qs::transaction tx(db);
    std::int64_t count = 0, expect = n - 1;
    bool ordered = true;
    for (Node* p = db.root<Node*>("list"); p; p = p->next, ++count) ordered = ordered && p->value == expect--;
    CHECK(count == n);
    CHECK(ordered);
    tx.commit();
    CHECK(db.stats().pages_relocated > 50);
    CHECK(db.stats().pages_written > 50);
  }
  {
    auto db = qs::database::open(s.unix_url(), o);
    qs::transaction tx(db);
    CHECK(db.root<Blob*>("blob") == nullptr);
    std::int64_t count = 0;
    for (Node* p = db.root<Node*>("list"); p; p = p->next) ++count;
    CHECK(count == n);
    tx.commit();
  }
}

TEST_CASE_METHOD(server_fixture,
                 "a commit that read more pages than the lock table holds runs alone, and is still checked") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  using namespace qs::wire;
  // 250,000 pages read (none of them has a record): more locks than
  // Berkeley DB's lock table has (200,000), were each taken.
  auto big = [](std::uint64_t first_version) {
    commit_request c;
    c.metas.push_back({meta_op_kind::put, "r:big", "1"});
    c.reads.push_back({1'000'000, first_version});
    for (std::uint64_t p = 1'000'001; p < 1'250'000; ++p) c.reads.push_back({p, no_record});
    return c;
  };
  wire_client c(s.port());
  c.log_in(s.secret());
  c.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(c.receive()));
  c.send(big(no_record));
  response r = c.receive();
  INFO((std::holds_alternative<error_response>(r) ? std::string(std::get<error_response>(r).text) : "") << s.log());
  CHECK(std::holds_alternative<ok_response>(r));
  // One of them said to have had a record: refused.
  c.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(c.receive()));
  c.send(big(3));
  r = c.receive();
  REQUIRE(std::holds_alternative<error_response>(r));
  CHECK(std::get<error_response>(r).code == error_code::conflict);
  CHECK_THAT(std::string(std::get<error_response>(r).text),
             Catch::Contains("page 1000000 read by this transaction changed since (version 3 in the snapshot"));
  // While another transaction holds pages it sent ahead, whose locks would
  // wait for this commit, it is refused at once; then it commits.
  wire_client ahead(s.port());
  ahead.log_in(s.secret());
  ahead.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(ahead.receive()));
  write_request w;
  std::string record(48 + 8192, '\0');
  w.pages.push_back({page_op_kind::put, 2'000'000, record, {}, mapping_change::keep, {}, no_record});
  ahead.send(w);
  REQUIRE(std::holds_alternative<ok_response>(ahead.receive()));
  c.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(c.receive()));
  c.send(big(no_record));
  r = c.receive();
  REQUIRE(std::holds_alternative<error_response>(r));
  CHECK(std::get<error_response>(r).code == error_code::conflict);
  CHECK_THAT(std::string(std::get<error_response>(r).text),
             Catch::Contains("runs alone, and other transactions that sent pages ahead are open"));
  ahead.send(abort_request{});
  REQUIRE(std::holds_alternative<ok_response>(ahead.receive()));
  c.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(c.receive()));
  c.send(big(no_record));
  CHECK(std::holds_alternative<ok_response>(c.receive()));
  // Commits go on.
  process b = worker(s, s.unix_url(), {"bump", "3"}, "bump");
  CHECK(b.wait(20000) == 0);
}

TEST_CASE_METHOD(server_fixture,
                 "an index read in a transaction is its snapshot with its own updates, not another's later commit") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process a = worker(s, s.unix_url(), {"index-view", sync}, "view");
  process b = worker(s, s.unix_url(), {"index-add", sync}, "add");
  int sa = a.wait(30000), sb = b.wait(30000);
  INFO(a.out() << a.err() << b.out() << b.err());
  CHECK(sa == 0);
  CHECK(sb == 0);
  CHECK(a.out() == "before:\nafter another's commit:\nafter its own insert: 5\n");
  process k = worker(s, s.unix_url(), {"index-keys", "view"}, "keys");
  CHECK(k.wait(20000) == 0);
  CHECK(k.out() == "keys: 5 7\n");
}

TEST_CASE_METHOD(server_fixture,
                 "a lost server met by a fault inside noexcept code ends the process, naming the error and the rule") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process w = worker(s, s.unix_url(), {"noexcept-walk", sync}, "walk");
  REQUIRE(wait_for_file(sync + "/ready"));
  s.kill9();
  { std::ofstream go(sync + "/go"); }
  int st = w.wait(30000);
  INFO(w.out() << w.err());
  CHECK(st == -SIGABRT);
  CHECK_THAT(w.err(), Catch::Contains("qs: the process ends: a page fault raised \"server " + s.unix_url()) &&
                          Catch::Contains("inside code that cannot throw") &&
                          Catch::Contains("docs/api.md, \"Errors in faults\"") &&
                          Catch::Contains("terminate called after throwing an instance of 'qs::connection_lost'"));
}

TEST_CASE("a slow transaction on a page others keep committing gets its turn: it reserves the page after losing") {
  // Optimistically it would lose nearly every time: its 50 ms between
  // reading the counter and writing it hold another client's commit. After
  // eight refusals in a row its begin reserves the page.
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::vector<process> hammers;
  for (int i = 0; i < 3; ++i)
    hammers.push_back(worker(s, s.unix_url(), {"hammer", "9", "6000"}, "hammer" + std::to_string(i)));
  process slow = worker(s, s.unix_url(), {"slow", "9", "3", "12"}, "slow");
  int st = slow.wait(60000);
  for (process& h : hammers) CHECK(h.wait(60000) == 0);
  INFO(slow.out() << slow.err());
  CHECK(st == 0);
  CHECK_THAT(slow.out(), Catch::StartsWith("committed=3 runs="));
  // Nothing lost: the hammers' commits and the slow client's three.
  long hammered = 0;
  for (process& h : hammers) hammered += std::stol(h.out().substr(h.out().find('=') + 1));
  process v = worker(s, s.unix_url(), {"show", "9"}, "show");
  REQUIRE(v.wait(20000) == 0);
  CHECK(v.out() == "value=" + std::to_string(hammered + 3) + "\n");
}

TEST_CASE_METHOD(
    server_fixture,
    "a reserved page: locked from begin, before the snapshot; another's commit of it waits, then is checked") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  using namespace qs::wire;
  const std::uint64_t page = 3'000'000;
  std::string record(48 + 8192, '\0');
  wire_client a(s.port()), b(s.port());
  a.log_in(s.secret());
  b.log_in(s.secret());
  // B's snapshot first, then A reserves the page.
  b.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(b.receive()));
  begin_request reserving;
  reserving.reserve.push_back(page);
  a.send(reserving);
  REQUIRE(std::holds_alternative<begun_response>(a.receive()));
  // B's commit of the page waits for A.
  commit_request put;
  put.pages.push_back({page_op_kind::put, page, record, {}, mapping_change::keep, {}, no_record});
  b.send(put);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(b.open());  // no answer yet
  // A writes it and commits; B, whose snapshot had no record, is refused.
  a.send(put);
  REQUIRE(std::holds_alternative<ok_response>(a.receive()));
  response r = b.receive();
  REQUIRE(std::holds_alternative<error_response>(r));
  CHECK(std::get<error_response>(r).code == error_code::conflict);
  CHECK_THAT(std::string(std::get<error_response>(r).text),
             Catch::Contains("page 3000000 written by this transaction"));
}

TEST_CASE_METHOD(server_fixture,
                 "a page whose mapping object takes several KiB is read by a client that never cached it") {
  qs::options o;
  o.durable = false;
  o.reservation_bytes = std::uint64_t{1} << 30;
  o.server_secret = s.secret();
  std::int64_t sum = 0;
  {
    auto db = qs::database::open(s.unix_url(), o);
    qs::transaction tx(db);
    Fan* f = new (db) Fan{};
    for (int i = 0; i < fan_size; ++i) {
      f->c[i] = new (db) Counter{};
      f->c[i]->value = i;
      sum += i;
      new (db) Counter{};  // a page between two pages f points to
    }
    db.root<Fan*>("fan") = f;
    tx.commit();
  }
  // Every counter the fan points to, read in a transaction of its own.
  auto check_fan = [&](qs::database& db) {
    qs::transaction tx(db);
    std::int64_t seen = 0;
    Fan* f = db.root<Fan*>("fan");
    for (int i = 0; i < fan_size; ++i) seen += f->c[i]->value;
    CHECK(seen == sum);
    tx.commit();
  };
  {
    // The pages f points to are at home, which needs no mapping entries.
    // Read once with every page forced away (the test harness): one-time
    // relocation writes f back naming where each page went, an entry a page.
    qs::options r = o;
    r.force_relocation_percent = 100;
    r.relocation_policy = qs::relocation::one_time;
    auto db = qs::database::open(s.unix_url(), r);
    check_fan(db);
  }
  for (const std::string& url : {s.unix_url(), s.tcp_url()}) {
    INFO(url);
    auto db = qs::database::open(url, o);
    check_fan(db);
  }
  REQUIRE(s.terminate() == 0);
  // The page did have a mapping object of several KiB.
  std::uint32_t largest = 0;
  qs::detail::bdb_env env(dir.sub("s") + "/db", 16u << 20);
  env.read_range_into(
      nullptr, 0, ~std::uint64_t{0}, [](std::uint64_t) { return qs::detail::bdb_env::record_place{}; },
      [&](std::uint64_t, bool is_mapping, const void*, std::uint32_t n) {
        if (is_mapping) largest = std::max(largest, n);
        return true;
      });
  CHECK(largest > 2048);
}

TEST_CASE_METHOD(server_fixture, "a client gives memory ahead only to the frames of page numbers it holds") {
  auto db = qs::database::open(s.unix_url(), client_options(s));
  const std::uint64_t page = db.page_size();
  {
    qs::transaction tx(db);
    // A client's first block of page numbers holds one: the frames after
    // its page's are the homes of pages other clients may create.
    db.root<Counter*>("lone") = new (db) Counter{};
    tx.commit();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // what a helper would populate, it has
  const qs::statistics st = db.stats();
  INFO(st.frame_memory_bytes << " bytes of frame memory, " << st.resident_pages << " resident pages");
  CHECK(st.resident_pages >= 1);
  CHECK(st.frame_memory_bytes <= st.resident_pages * page);
}

TEST_CASE_METHOD(server_fixture, "a client that cached pages of a history the server lost takes their numbers anew") {
  // A group's master that fails before its replicas take a commit loses it,
  // though its clients may have read it; a server restored from a copy
  // does the same. The store then hands out the page numbers that commit
  // had taken, which the client still knows.
  const std::string db_dir = dir.sub("s") + "/db", copy = dir.sub("copy");
  auto db = qs::database::open(s.unix_url(), client_options(s));
  auto run = [&](const std::function<void()>& f) {
    // The first call after the server restarted meets the lost connection.
    for (int attempt = 0;; ++attempt) {
      try {
        db.run(f);
        return;
      } catch (const qs::connection_lost&) {
        if (attempt == 3) throw;
      }
    }
  };
  auto sum = [&] {
    std::int64_t total = 0;
    run([&] {
      total = 0;
      for (qs_test::Node* n = db.root<qs_test::Node*>("list"); n; n = n->next) total += n->value;
    });
    return total;
  };
  auto add = [&](int count, std::int64_t value) {
    run([&] {
      auto& head = db.root<qs_test::Node*>("list");
      for (int i = 0; i < count; ++i) head = new (db) qs_test::Node{value, head};
    });
  };
  add(100, 1);
  REQUIRE(s.terminate() == 0);
  std::filesystem::copy(db_dir, copy, std::filesystem::copy_options::recursive);
  s.start();
  add(3000, 10);  // pages the copy does not have, read back
  CHECK(sum() == 100 + 30000);
  REQUIRE(s.terminate() == 0);
  std::filesystem::remove_all(db_dir);
  std::filesystem::copy(copy, db_dir, std::filesystem::copy_options::recursive);
  s.start();
  CHECK(sum() == 100);
  add(3000, 100);  // the same page numbers again
  CHECK(sum() == 100 + 300000);
  db = qs::database::open(s.unix_url(), client_options(s));  // a fresh cache reads the same
  CHECK(sum() == 100 + 300000);
}
