// kill_rounds.hpp: the crash torture's driver (scripts/torture).
//
// For each kind of victim it runs `rounds` rounds on one database that lives
// through all of them, so that damage left by one recovery is still there,
// and grows, in the next:
//   a  an embedded writer (a directory) killed with SIGKILL;
//   b  a writer through a qs-pageserver killed (the server lives on);
//   c  the qs-pageserver killed while three writers commit through it (the
//      writers live on, and go on with their cached pages once it is back);
//   d  an embedded writer on a small tmpfs filled to a random point: it
//      runs until the full disk stops it or is killed, and the checker runs
//      once there is room again (skipped, saying so, when not root);
//   e  the sites of a replication group of three (--repl-ack quorum): the
//      master, or a replica, killed while three writers commit through the
//      group's URL and follow the master; every commit a writer reported is
//      at the new master after each round, and on every site, each opened
//      embedded, at the end.
// A victim is killed after a random delay (from its start, so that some
// kills land while it opens and recovers the database) or where it stops at
// a random pass of a random pause point (qs/pause_point.hpp). In a quarter
// of the rounds of a and c, the process that recovers the database is
// killed too, a few milliseconds after it starts. After each round the
// checker (check.hpp) runs in a process of its own, with what the writers
// reported: nothing reported lost, nothing partial, the store's records
// sound. Every choice comes from one seed, printed first; the timing of a
// delay kill is the operating system's, so a replay takes the same choices
// but may land elsewhere.
//
// With `load` (--load N), N busy processes run beside the rounds, each
// spinning on a core for as long as the torture runs: a writer, a recovery
// and a checker then lose the processor at moments an idle machine never
// shows (Berkeley DB's bulk transactions, once used by qs, lost whole
// environments only so).
//
// On a failure the driver stops, prints the round, its choices and the
// checker's findings, and keeps the work directory (databases, logs).
//
// Thread-safety: one driver per process.
#pragma once

#include <cstdint>
#include <string>

namespace qs_torture {

struct torture_config {
  int rounds = 10;  // per kind
  std::uint64_t seed = 0;
  std::string kinds = "abcde";
  std::string dir;  // work directory; empty: a fresh one under $TMPDIR
  bool keep = false;
  bool verbose = false;
  int load = 0;      // busy processes beside the rounds
  std::string self;  // this program, which is also the writer and the checker
};

// Returns 0 when every round passed.
int run_torture(const torture_config& c);

}  // namespace qs_torture
