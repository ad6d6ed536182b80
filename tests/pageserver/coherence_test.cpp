// Cache coherence through qs-pageserver (pageserver/cache_directory.hpp): a
// client keeps its pages between transactions and uses them with no round
// trip; another client's commit reaches it as an invalidation. Real servers
// on a Unix socket, client processes.
#include <catch2/catch.hpp>

#include "counters.hpp"
#include "harness.hpp"
#include "ps_types.hpp"
#include "support.hpp"
#include "wire_client.hpp"

#include <qs/wire/messages.hpp>

#include <chrono>
#include <csignal>
#include <thread>
#include <variant>

using namespace qs_pstest;

namespace {}  // namespace

TEST_CASE_METHOD(server_fixture,
                 "cached pages are used with no round trip; another client's commit arrives as an invalidation",
                 "[coherence]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  auto db = qs::database::open(s.unix_url(), client_options(s));
  for (int n = 0; n < 8; ++n) CHECK(counter(db, n) == 0);
  qs::statistics before = db.stats();
  // The pages came in; read again in new transactions, nothing is asked.
  for (int n = 0; n < 8; ++n) CHECK(counter(db, n) == 0);
  qs::statistics again = db.stats();
  CHECK(again.pages_fetched == before.pages_fetched);
  CHECK(again.read_faults == before.read_faults);
  CHECK(again.invalidations_received == 0);

  CHECK(bump(s, 5) == "value=1\n");
  // The next transaction sees it: the invalidation came before the answer
  // to its begin; the page alone is fetched again.
  CHECK(counter(db, 5) == 1);
  for (int n = 0; n < 8; ++n) CHECK(counter(db, n) == (n == 5 ? 1 : 0));
  qs::statistics after = db.stats();
  INFO("fetched " << after.pages_fetched - again.pages_fetched << ", invalidations " << after.invalidations_received);
  CHECK(after.invalidations_received == 1);
  CHECK(after.pages_fetched == again.pages_fetched + 1);
  CHECK(statistics(s).find("invalidations sent naming 1 pages") != std::string::npos);
}

TEST_CASE_METHOD(server_fixture,
                 "a transaction that read a page changed by another client's commit is refused, then retried",
                 "[coherence]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  auto db = qs::database::open(s.unix_url(), client_options(s));
  CHECK(counter(db, 5) == 0);
  CHECK(counter(db, 6) == 0);
  int runs = 0;
  db.run([&] {
    Table* t = db.root<Table*>("table");
    std::int64_t seen = qs_test::touch(t->c[5]->value);  // from the cache
    if (++runs == 1) CHECK(bump(s, 5) == "value=1\n");   // meanwhile, another client changes it
    t->c[6]->value = seen + 100;
  });
  CHECK(runs == 2);  // the first run read 0, which no longer stood
  // The retry followed its reads page by page: the pages no one had
  // changed were revalidated with no round trip.
  CHECK(db.stats().revalidations_avoided > 0);
  CHECK(counter(db, 6) == 101);
  CHECK(bump(s, 6) == "value=102\n");
}

TEST_CASE_METHOD(server_fixture, "a client whose connection dropped revalidates its cache and reads current data",
                 "[coherence]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  auto db = qs::database::open(s.unix_url(), client_options(s));
  CHECK(counter(db, 5) == 0);
  // A new server process: it knows nothing of what the client caches, and
  // another client changes the page before this one is back.
  REQUIRE(s.terminate() == 0);
  s.start();
  CHECK(bump(s, 5) == "value=1\n");
  std::int64_t v = -1;
  for (int attempt = 0; attempt < 2 && v == -1; ++attempt) {
    try {
      v = counter(db, 5);
    } catch (const qs::connection_lost&) {
      // The first call learns that the connection is gone.
    }
  }
  CHECK(v == 1);
  CHECK(counter(db, 6) == 0);
}

TEST_CASE("a client holding more pages than --directory-pages is told to revalidate everything, and reads current data",
          "[coherence]") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start("", {"--directory-pages", "1024"});
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  qs::options o = client_options(s);
  o.pool_pages = 4096;  // every page stays cached
  auto db = qs::database::open(s.unix_url(), o);
  // Two fans of counters, one page each: more pages than the directory
  // keeps for all clients together.
  make_fans(db, 2);
  auto sum = [&] {
    std::int64_t total = 0;
    db.run([&] {
      total = 0;
      for (const char* name : {"fan0", "fan1"})
        for (Counter* c : db.root<Fan*>(name)->c) total += c->value;
      total += db.root<Table*>("table")->c[5]->value;
    });
    return total;
  };
  CHECK(sum() == 0);
  CHECK(sum() == 0);
  CHECK(bump(s, 5) == "value=1\n");
  CHECK(sum() == 1);
  CHECK(bump(s, 5) == "value=2\n");
  CHECK(sum() == 2);
  std::string stats = statistics(s);
  INFO(stats);
  CHECK(stats.find(" 0 clients told to revalidate everything") == std::string::npos);
  CHECK(stats.find("cache directory: ") != std::string::npos);
}

TEST_CASE("a client that stops reading its socket holds up no commit, and is disconnected past --push-queue-kb",
          "[coherence]") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.start("", {"--push-queue-kb", "64"});
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  auto db = qs::database::open(s.unix_url(), client_options(s));
  constexpr int fans = 6;  // 5,400 counters, a page each
  make_fans(db, fans);
  // A client of the wire protocol reads every page, so that the server
  // counts it holding them all...
  wire_client w(s.port());
  w.log_in(s.secret());
  w.send(qs::wire::begin_request{});
  REQUIRE(std::holds_alternative<qs::wire::begun_response>(w.receive()));
  constexpr std::uint64_t pages = fans * fan_size + 100;
  std::uint64_t held = 0;
  for (std::uint64_t first = 1; first <= pages; first += qs::wire::max_batch) {
    qs::wire::read_pages_request r;
    for (std::uint64_t p = first; p < first + qs::wire::max_batch && p <= pages; ++p) r.pages.push_back(p);
    w.send(r);
    for (bool more = true; more;) {  // the answer's parts
      auto answer = w.receive();
      REQUIRE(std::holds_alternative<qs::wire::records_response>(answer));
      held += std::get<qs::wire::records_response>(answer).records.size();
      more = std::get<qs::wire::records_response>(answer).more;
    }
  }
  REQUIRE(held > fans * fan_size);
  // ...then asks for more than its socket holds, and stops reading: the
  // server's session is stuck sending that answer.
  qs::wire::read_pages_request big;
  for (std::uint64_t p = 1; p <= qs::wire::max_batch; ++p) big.pages.push_back(p);
  w.send(big);
  // Another client's commit changes every page the stuck one holds: its
  // invalidations (16 bytes a page) pass 64 KiB in the queue.
  auto t0 = std::chrono::steady_clock::now();
  db.run([&] {
    for (int i = 0; i < fans; ++i)
      for (Counter* c : db.root<Fan*>("fan" + std::to_string(i))->c) c->value = 7;
  });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(seconds < 60);  // (a commit that waited for the stuck client would wait out its --idle-timeout, 300 s)
  std::string stats = statistics(s);
  INFO(stats);
  CHECK(stats.find(" 1 disconnected for not reading them") != std::string::npos);
  // The stuck client finds its connection closed once it reads.
  CHECK(w.drain(20000).find("<still open>") == std::string::npos);
  // Everyone else goes on.
  CHECK(bump(s, 5) == "value=1\n");
}
