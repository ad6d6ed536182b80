// Prefetch through qs-pageserver: a read_pages answer comes in parts
// (wire::records_response::more), and the client takes in the pages of one
// part while the server reads the next. A prefetched page the program goes
// on to write comes writable at its first touch. Real servers on a Unix
// socket.
#include <catch2/catch.hpp>

#include "counters.hpp"
#include "harness.hpp"
#include "ps_types.hpp"
#include "support.hpp"
#include "wire_client.hpp"

#include <qs/wire/messages.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

using namespace qs_pstest;

namespace {

// A client whose pool holds a fan and all its counters.
qs::options fan_resident_options(const server_process& s) {
  qs::options o = client_options(s);
  o.pool_pages = 4 * fan_size;
  return o;
}

// The sum of the counters of the fan under root `name`, in one transaction.
std::int64_t fan_sum(qs::database& db, const std::string& name) {
  std::int64_t sum = 0;
  db.run([&] {
    sum = 0;
    Fan* f = db.root<Fan*>(name);
    for (int i = 0; i < fan_size; ++i) sum += qs_test::touch(f->c[i]->value);
  });
  return sum;
}

// Reads c, and adds to it when `write`: every first touch of a pass is the
// same instruction's, as in an update traversal.
[[gnu::noinline]] void visit(qs_pstest::Counter* c, bool write) {
  const std::int64_t v = *static_cast<volatile std::int64_t*>(&c->value);
  if (write) c->value = v + 1000;
}

// visit() for every counter of the fan under root "fan0", in the open
// transaction.
void visit_fan(qs::database& db, bool write) {
  Fan* f = db.root<Fan*>("fan0");
  for (int i = 0; i < fan_size; ++i) visit(f->c[i], write);
}

}  // namespace

TEST_CASE_METHOD(server_fixture, "a read_pages answer comes in parts, in the order asked, each page once",
                 "[prefetch]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  {
    auto db = qs::database::open(s.unix_url(), client_options(s));
    make_fans(db, 1);  // a page each
  }
  wire_client w(s.port());
  w.log_in(s.secret());
  w.send(qs::wire::begin_request{});
  REQUIRE(std::holds_alternative<qs::wire::begun_response>(w.receive()));
  // 64 pages of about 5 KiB records, one asked twice: more than a part holds.
  qs::wire::read_pages_request r;
  for (std::uint64_t p = 64; p >= 1; --p) r.pages.push_back(p);
  r.pages.push_back(10);
  w.send(r);
  std::vector<std::uint64_t> pages;
  int parts = 0;
  for (bool more = true; more;) {
    auto answer = w.receive();
    REQUIRE(std::holds_alternative<qs::wire::records_response>(answer));
    const auto& part = std::get<qs::wire::records_response>(answer);
    ++parts;
    more = part.more;
    std::size_t bytes = 0;
    for (const auto& rec : part.records) {
      // A part is sent once it holds part_bytes: its last record is the
      // one that got it there.
      CHECK(bytes < qs::wire::part_bytes);
      bytes += rec.record.size() + rec.mapping.size();
      pages.push_back(rec.page);
    }
  }
  CHECK(parts >= 8);
  REQUIRE(pages.size() == 64);
  for (std::size_t i = 0; i < pages.size(); ++i) CHECK(pages[i] == 64 - i);
  // The conversation goes on in step after the last part.
  w.send(qs::wire::abort_request{});
  CHECK(std::holds_alternative<qs::wire::ok_response>(w.receive()));
}

TEST_CASE_METHOD(server_fixture,
                 "a damaged record is left out of a read_pages answer; read alone, it is refused naming its page",
                 "[prefetch]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  {
    auto db = qs::database::open(s.unix_url(), client_options(s));
    make_fans(db, 1);
  }
  REQUIRE(s.terminate() == 0);
  qs_test::delete_stored_piece(dir.sub("s") + "/db", 10, 3);
  s.start();
  wire_client w(s.port());
  w.log_in(s.secret());
  w.send(qs::wire::begin_request{});
  REQUIRE(std::holds_alternative<qs::wire::begun_response>(w.receive()));
  // A prefetch is a guess: the pages around the damaged one still come.
  w.send(qs::wire::read_pages_request{{9, 10, 11}});
  std::vector<std::uint64_t> pages;
  for (bool more = true; more;) {
    auto answer = w.receive();
    REQUIRE(std::holds_alternative<qs::wire::records_response>(answer));
    const auto& part = std::get<qs::wire::records_response>(answer);
    more = part.more;
    for (const auto& rec : part.records) pages.push_back(rec.page);
  }
  CHECK(pages == std::vector<std::uint64_t>{9, 11});
  // The fault that needs it reads it alone, and learns what is wrong.
  w.send(qs::wire::read_page_request{10, {}});
  auto answer = w.receive();
  REQUIRE(std::holds_alternative<qs::wire::error_response>(answer));
  const auto& refused = std::get<qs::wire::error_response>(answer);
  CHECK(refused.code == qs::wire::error_code::corrupt);
  const std::string text(refused.text);
  INFO(text);
  CHECK(text.find("page 10 ") != std::string::npos);
  CHECK(text.find("missing piece 3") != std::string::npos);
  w.send(qs::wire::abort_request{});
  CHECK(std::holds_alternative<qs::wire::ok_response>(w.receive()));
}

TEST_CASE_METHOD(server_fixture,
                 "a damaged page read through a page server is refused naming it, as far into a walk with "
                 "prefetch as without",
                 "[prefetch]") {
  {
    auto db = qs::database::open(s.unix_url(), client_options(s));
    make_fans(db, 1);  // the fan's page, then a page for each counter
  }
  REQUIRE(s.terminate() == 0);
  qs_test::delete_stored_piece(dir.sub("s") + "/db", 5, 3);  // the fourth counter's
  s.start();
  struct outcome {
    int seen = 0;
    std::uint64_t page = 0, prefetched = 0;
    std::string what;
  };
  auto walk = [&](std::uint32_t prefetch_pages) {
    qs::options o = client_options(s);
    o.prefetch_pages = prefetch_pages;
    auto db = qs::database::open(s.unix_url(), o);
    qs::transaction tx(db);
    outcome r;
    try {
      Fan* f = db.root<Fan*>("fan0");
      for (int i = 0; i < fan_size; ++i, ++r.seen) qs_test::touch(f->c[i]->value);
    } catch (const qs::corrupt_page& e) {
      r.page = e.page();
      r.what = e.what();
    }
    r.prefetched = db.stats().pages_prefetched;
    tx.abort();
    return r;
  };
  const outcome off = walk(0);
  INFO(off.what);
  REQUIRE(off.page == 5);
  REQUIRE(off.seen > 0);
  // The client used to raise it as page 0: the server's answer names the
  // page in its text only.
  const outcome on = walk(32);
  INFO(on.what);
  CHECK(on.page == 5);
  CHECK(on.seen == off.seen);
  CHECK(on.prefetched > 0);
}

TEST_CASE_METHOD(server_fixture, "pages prefetched in parts are the snapshot's, and used with no fault of their own",
                 "[prefetch]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  const qs::options o = fan_resident_options(s);
  auto db = qs::database::open(s.unix_url(), o);
  make_fans(db, 2);
  db.run([&] {
    Fan* f = db.root<Fan*>("fan1");
    for (int i = 0; i < fan_size; ++i) f->c[i]->value = i;
  });
  auto reader = qs::database::open(s.unix_url(), o);
  qs::statistics before = reader.stats();
  CHECK(fan_sum(reader, "fan1") == std::int64_t{fan_size} * (fan_size - 1) / 2);
  qs::statistics after = reader.stats();
  INFO("read faults " << after.read_faults - before.read_faults << ", prefetched "
                      << after.pages_prefetched - before.pages_prefetched);
  // The fan's page names every counter's: most come ahead of their use.
  CHECK(after.pages_prefetched - before.pages_prefetched > fan_size / 2);
  CHECK(after.read_faults - before.read_faults < fan_size / 4);
  // The server counts them too, and the parts their answers took.
  std::string stats = statistics(s);
  INFO(stats);
  unsigned long long faults = 0, unchanged = 0, prefetched = 0, answers = 0, parts = 0;
  auto at = stats.find("pages sent: ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(stats.c_str() + at,
                      "pages sent: %llu asked for by faults (%llu more revalidated unchanged), %llu prefetched in "
                      "%llu answers of %llu parts",
                      &faults, &unchanged, &prefetched, &answers, &parts) == 5);
  CHECK(prefetched >= after.pages_prefetched - before.pages_prefetched);
  CHECK(parts > answers);
  // Another client's change is seen by the next transaction, prefetched again.
  db.run([&] { db.root<Fan*>("fan1")->c[7]->value = -1000; });
  CHECK(fan_sum(reader, "fan1") == std::int64_t{fan_size} * (fan_size - 1) / 2 - 7 - 1000);
}

TEST_CASE_METHOD(server_fixture, "prefetched pages the program goes on to write come writable at their first touch",
                 "[prefetch]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  const qs::options o = fan_resident_options(s);
  {
    auto db = qs::database::open(s.unix_url(), o);
    make_fans(db, 1);
  }
  auto db = qs::database::open(s.unix_url(), o);
  auto pass = [&](bool write) { db.run([&] { visit_fan(db, write); }); };
  const qs::statistics s0 = db.stats();
  pass(true);
  const qs::statistics s1 = db.stats();
  INFO("prefetched " << s1.pages_prefetched - s0.pages_prefetched << ", writable on arrival "
                     << s1.writable_on_arrival - s0.writable_on_arrival << ", write faults "
                     << s1.write_faults - s0.write_faults);
  // The counters come ahead of their use (watched: a serializable
  // transaction reads exactly what it touches), and after the first few,
  // each first touch shows its page writable: the write that follows takes
  // no fault of its own.
  REQUIRE(s1.pages_prefetched - s0.pages_prefetched > fan_size / 2);
  CHECK(s1.writable_on_arrival - s0.writable_on_arrival > fan_size / 2);
  CHECK(s1.write_faults - s0.write_faults < fan_size / 2);
  CHECK(s1.pages_written - s0.pages_written == fan_size);
  // An abort puts back what such a pass wrote.
  db.release_cache();
  {
    qs::transaction tx(db);
    visit_fan(db, true);
    CHECK(db.stats().writable_on_arrival - s1.writable_on_arrival > fan_size / 2);
    tx.abort();
  }
  // A pass that only reads writes nothing.
  const qs::statistics s2 = db.stats();
  pass(false);
  CHECK(db.stats().pages_written == s2.pages_written);
  // Every write was logged: another client sees them.
  auto other = qs::database::open(s.unix_url(), o);
  CHECK(fan_sum(other, "fan0") == std::int64_t{fan_size} * 1000);
}

TEST_CASE_METHOD(server_fixture, "under snapshot isolation prefetched pages are shown as they come, not watched",
                 "[prefetch]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  qs::options o = fan_resident_options(s);
  {
    auto db = qs::database::open(s.unix_url(), o);
    make_fans(db, 1);
  }
  // The pages a pass prefetches, and of those the ones hidden until their
  // first touch; the counters add 1000 on each write pass.
  struct counts {
    std::uint64_t prefetched, watched;
  };
  auto pass = [&](qs::isolation level, bool write) {
    o.isolation_level = level;
    auto db = qs::database::open(s.unix_url(), o);
    db.run([&] { visit_fan(db, write); });
    const qs::statistics st = db.stats();
    return counts{st.pages_prefetched, st.prefetch_watched};
  };
  const counts serializable = pass(qs::isolation::serializable, false);
  const counts snapshot = pass(qs::isolation::snapshot, false);
  INFO("serializable: prefetched " << serializable.prefetched << ", watched " << serializable.watched
                                   << "; snapshot: prefetched " << snapshot.prefetched << ", watched "
                                   << snapshot.watched);
  // A serializable transaction reads exactly what it touches: every page
  // waits for its touch. A snapshot one's reads are not checked: one page
  // in eight is watched, to see whether prefetch pays.
  REQUIRE(serializable.prefetched > fan_size / 2);
  CHECK(serializable.watched == serializable.prefetched);
  REQUIRE(snapshot.prefetched > fan_size / 2);
  CHECK(snapshot.watched < snapshot.prefetched / 4);
  // Pages shown as they come are written as any other.
  pass(qs::isolation::snapshot, true);
  {
    auto db = qs::database::open(s.unix_url(), o);
    CHECK(fan_sum(db, "fan0") == std::int64_t{fan_size} * 1000);
  }
  // QS_ISOLATION sets every open's isolation, whatever the program asked;
  // anything but the two names is refused, by name.
  {
    qs_test::env_var level("QS_ISOLATION", "snapshot");
    const counts by_env = pass(qs::isolation::serializable, false);
    REQUIRE(by_env.prefetched > fan_size / 2);
    CHECK(by_env.watched < by_env.prefetched / 4);
  }
  qs_test::env_var level("QS_ISOLATION", "sometimes");
  CHECK_THROWS_AS(qs::database::open(s.unix_url(), o), qs::invalid_argument);
  CHECK_THROWS_WITH(qs::database::open(s.unix_url(), o),
                    Catch::Contains("QS_ISOLATION must be serializable or snapshot, not 'sometimes'"));
}
