// counters.hpp: the page-server tests' helpers around the counters of
// ps_types.hpp (made by the worker's `setup`): one read in a transaction of
// its own, one bumped by another client process, and fans of new ones; and
// the server's statistics lines.
//
// Thread-safety: as the database handle and server given.
#pragma once

#include "harness.hpp"
#include "ps_types.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>

namespace qs_pstest {

// Counter n, read in a transaction of its own (db.run).
inline std::int64_t counter(qs::database& db, int n) {
  std::int64_t v = -1;
  db.run([&] { v = qs_test::touch(db.root<Table*>("table")->c[n]->value); });
  return v;
}

// Another process's view of counter n: it adds 1 and says what it got.
inline std::string bump(server_process& s, int n) {
  process b = worker(s, s.unix_url(), {"bump", std::to_string(n)}, "bump" + std::to_string(n));
  int st = b.wait(30000);
  INFO(b.err());
  CHECK(st == 0);
  return b.out();
}

// Roots fan0 .. fan<n-1>, each a Fan of new counters (a page each).
inline void make_fans(qs::database& db, int n) {
  db.run([&] {
    for (int i = 0; i < n; ++i) {
      Fan* f = new (db) Fan{};
      for (auto& c : f->c) c = new (db) Counter{};
      db.root<Fan*>("fan" + std::to_string(i)) = f;
    }
  });
}

// The server's statistics lines, asked for with SIGUSR1.
inline std::string statistics(server_process& s) {
  std::size_t before = s.log().size();
  s.signal(SIGUSR1);
  for (int i = 0; i < 500 && s.log().find("pages sent: ", before) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return s.log().substr(before);
}

}  // namespace qs_pstest
