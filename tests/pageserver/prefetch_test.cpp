// Prefetch through qs-pageserver: a read_pages answer comes in parts
// (wire::records_response::more), and the client takes in the pages of one
// part while the server reads the next. Real servers on a Unix socket.
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

TEST_CASE_METHOD(server_fixture, "pages prefetched in parts are the snapshot's, and used with no fault of their own",
                 "[prefetch]") {
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  qs::options o = client_options(s);
  o.pool_pages = 4 * fan_size;  // the fan stays resident
  auto db = qs::database::open(s.unix_url(), o);
  make_fans(db, 2);
  db.run([&] {
    Fan* f = db.root<Fan*>("fan1");
    for (int i = 0; i < fan_size; ++i) f->c[i]->value = i;
  });
  auto reader = qs::database::open(s.unix_url(), o);
  qs::statistics before = reader.stats();
  std::int64_t sum = 0;
  reader.run([&] {
    sum = 0;
    Fan* f = reader.root<Fan*>("fan1");
    for (int i = 0; i < fan_size; ++i) sum += qs_test::touch(f->c[i]->value);
  });
  CHECK(sum == std::int64_t{fan_size} * (fan_size - 1) / 2);
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
  reader.run([&] {
    sum = 0;
    Fan* f = reader.root<Fan*>("fan1");
    for (int i = 0; i < fan_size; ++i) sum += qs_test::touch(f->c[i]->value);
  });
  CHECK(sum == std::int64_t{fan_size} * (fan_size - 1) / 2 - 7 - 1000);
}
