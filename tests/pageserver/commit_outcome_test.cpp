// A commit through qs-pageserver whose connection drops: the client asks the
// server what became of it. Real servers on loopback; a proxy between client
// and server loses the commit or its answer (proxy.hpp); kill -9 of a server
// that has committed and not answered.
#include <catch2/catch.hpp>

#include "counters.hpp"
#include "harness.hpp"
#include "proxy.hpp"
#include "ps_types.hpp"
#include "support.hpp"

#include <qs/wire/connection.hpp>
#include <qs/wire/messages.hpp>

#include <chrono>
#include <random>
#include <thread>

using namespace qs_pstest;

namespace {

// A client that retries a lost connection for budget_ms.
qs::options retrying_client(const server_process& s, std::uint32_t budget_ms = 30000) {
  qs::options o = qs_pstest::client_options(s);
  o.reconnect_budget_ms = budget_ms;
  return o;
}

// Sets counter n to v in one transaction, committed once.
void set_counter(qs::database& db, int n, std::int64_t v) {
  qs::transaction tx(db);
  db.root<Table*>("table")->c[n]->value = v;
  tx.commit();
}

// Sets counter 5 to 42 in a commit that must throw E; returns what it said.
template <class E>
std::string failing_commit(qs::database& db) {
  try {
    set_counter(db, 5, 42);
    FAIL("the commit returned");
  } catch (const E& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE_METHOD(server_fixture, "the answer to a commit is lost: the client asks, and the commit stands",
                 "[commit_outcome]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  proxy p(s.port());
  auto db = qs::database::open(p.url(), retrying_client(s));
  CHECK(counter(db, 5) == 0);
  p.arm(proxy::cut::after_commit);
  // The server commits; its answer never reaches the client.
  REQUIRE_NOTHROW(set_counter(db, 5, 42));
  CHECK(p.cuts() == 1);
  CHECK(p.requests(qs::wire::msg::outcome) >= 1);
  CHECK(!db.in_transaction());
  // The handle holds the committed pages: the server finds them current.
  auto fetched = db.stats().pages_fetched;
  CHECK(counter(db, 5) == 42);
  CHECK(db.stats().pages_fetched == fetched);
  CHECK(bump(s, 5) == "value=43\n");
  CHECK(counter(db, 5) == 43);
  CHECK(s.log().find("outcome of a commit: committed") != std::string::npos);
}

TEST_CASE_METHOD(server_fixture, "a commit lost before the server had it: the server says so, and it is an abort",
                 "[commit_outcome]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  proxy p(s.port());
  auto db = qs::database::open(p.url(), retrying_client(s));
  CHECK(counter(db, 5) == 0);
  const int commits = p.requests(qs::wire::msg::commit);
  p.arm(proxy::cut::before_commit);
  std::string what = failing_commit<qs::connection_lost>(db);
  CHECK(p.cuts() == 1);
  CHECK(p.requests(qs::wire::msg::commit) == commits);  // the server never had it
  CHECK(p.requests(qs::wire::msg::outcome) >= 1);
  CHECK(what.find("server " + p.url() + ": connection lost during commit") != std::string::npos);
  CHECK(what.find("the server did not commit the transaction: it is aborted") != std::string::npos);
  CHECK(!db.in_transaction());
  // Nothing of it anywhere; the handle goes on.
  CHECK(counter(db, 5) == 0);
  CHECK(bump(s, 5) == "value=1\n");
  set_counter(db, 5, 7);
  CHECK(bump(s, 5) == "value=8\n");
}

TEST_CASE("the server cannot be reached after a commit: qs::commit_unknown, and the handle stays usable",
          "[commit_outcome]") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  proxy p(s.port());
  // A short budget: the proxy refuses every connection after the cut.
  auto db = qs::database::open(p.url(), retrying_client(s, 300));
  CHECK(counter(db, 5) == 0);
  bool server_commits = GENERATE(true, false);
  INFO((server_commits ? "the answer is lost" : "the commit is lost"));
  p.arm(server_commits ? proxy::cut::after_commit : proxy::cut::before_commit, true);
  std::string what = failing_commit<qs::commit_unknown>(db);
  CHECK(what.find("could not be learned within 300 ms") != std::string::npos);
  CHECK(what.find("reopen the database and check") != std::string::npos);
  CHECK(!db.in_transaction());
  CHECK(p.requests(qs::wire::msg::outcome) == 0);  // never got through
  // The server is back: the same handle sees what the server has, whichever
  // way the commit went (its own copy of the page was discarded).
  p.refuse(false);
  CHECK(counter(db, 5) == (server_commits ? 42 : 0));
  set_counter(db, 6, 1);
  CHECK(bump(s, 6) == "value=2\n");
}

TEST_CASE("a commit the server no longer remembers: qs::commit_unknown", "[commit_outcome]") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start("", {"--outcome-window", "0"});  // every outcome expires at once
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  proxy p(s.port());
  auto db = qs::database::open(p.url(), retrying_client(s));
  p.arm(proxy::cut::after_commit);
  std::string what = failing_commit<qs::commit_unknown>(db);
  CHECK(what.find("the server no longer remembers whether the transaction committed") != std::string::npos);
  CHECK(p.requests(qs::wire::msg::outcome) == 1);
  CHECK(counter(db, 5) == 42);
}

TEST_CASE("kill -9 of the server after it committed, before it answered: the restarted server knows",
          "[commit_outcome]") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  REQUIRE(s.terminate() == 0);
  // The first commit after this start (the worker's) stops once committed.
  s.start("server.commit.after_commit:1");
  process w = worker(s, s.unix_url(), {"set", "9", "42"}, "set");
  REQUIRE(s.wait_paused(30000));
  s.kill9();
  s.start();  // recovery; the worker asks the new server
  int st = w.wait(60000);
  INFO(w.out() << w.err());
  CHECK(st == 0);
  CHECK(w.out() == "committing\ncommitted\n");
  CHECK(s.log().find("outcome of a commit: committed") != std::string::npos);
  CHECK(bump(s, 9) == "value=43\n");
}

TEST_CASE_METHOD(server_fixture,
                 "outcome requests on the wire: answered outside a transaction, refused inside, checked",
                 "[commit_outcome]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  using namespace qs::wire;
  std::vector<std::byte> buf;
  auto open = [&] {
    auto c = std::make_unique<connection>(connect_tcp({"127.0.0.1", static_cast<std::uint16_t>(s.port())}));
    return c;
  };
  auto ask = [&](connection& c, const request& r) -> response {
    writer w;
    encode(r, w);
    c.send(w.finish());
    if (!c.receive(buf, max_message)) throw std::runtime_error("closed");
    return parse_response(buf);
  };
  auto outcome_of = [&](connection& c, const commit_id& id) {
    response r = ask(c, outcome_request{id});
    REQUIRE(std::holds_alternative<verdict_response>(r));
    return std::get<verdict_response>(r).outcome;
  };
  auto c = open();
  ask(*c, hello_request{magic, version, s.secret()});
  // A transaction that wrote nothing leaves no record: its outcome is
  // "aborted", which for it is the same as committed (nothing was to be kept).
  response b0 = ask(*c, begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(b0));
  commit_id read_only = std::get<begun_response>(b0).id;
  REQUIRE(std::holds_alternative<ok_response>(ask(*c, commit_request{})));
  CHECK(outcome_of(*c, read_only) == commit_outcome::aborted);
  // A transaction that writes a record, and one that never commits.
  response b1 = ask(*c, begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(b1));
  commit_id committed = std::get<begun_response>(b1).id;
  commit_request writes;
  writes.metas.push_back({meta_op_kind::put, "r:outcome", "1"});
  REQUIRE(std::holds_alternative<ok_response>(ask(*c, writes)));
  CHECK(outcome_of(*c, committed) == commit_outcome::committed);
  response b2 = ask(*c, begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(b2));
  commit_id open_one = std::get<begun_response>(b2).id;
  CHECK(open_one.time >= committed.time);
  CHECK(!(open_one == committed));
  // Another connection: the open transaction is still going on.
  auto d = open();
  ask(*d, hello_request{magic, version, s.secret()});
  CHECK(outcome_of(*d, open_one) == commit_outcome::pending);
  CHECK(outcome_of(*d, committed) == commit_outcome::committed);
  // An identity the server never gave.
  std::mt19937_64 rng(11);
  CHECK(outcome_of(*d, commit_id{committed.time + 1, rng()}) == commit_outcome::aborted);
  // Inside a transaction, a protocol error: the connection closes, and its
  // transaction is aborted.
  response refused = ask(*c, outcome_request{committed});
  REQUIRE(std::holds_alternative<error_response>(refused));
  CHECK(std::get<error_response>(refused).text.find("outcome inside a transaction") != std::string_view::npos);
  commit_outcome o = commit_outcome::pending;
  for (int i = 0; i < 1000 && o == commit_outcome::pending; ++i) {
    o = outcome_of(*d, open_one);
    if (o == commit_outcome::pending) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(o == commit_outcome::aborted);
  // A truncated identity is refused, naming the field.
  writer w;
  w.u8(static_cast<std::uint8_t>(msg::outcome));
  w.u64(committed.time);
  d->send(w.finish());
  REQUIRE(d->receive(buf, max_message));
  response bad = parse_response(buf);
  REQUIRE(std::holds_alternative<error_response>(bad));
  CHECK(std::get<error_response>(bad).text.find("outcome message, field id.nonce: message truncated") !=
        std::string_view::npos);
}
