// writer.hpp: the process the crash torture kills: it runs a partition's
// transactions (plan.hpp) one after the other and says which committed.
//
// After each commit() returns, and only then, the writer writes the line
// "committed K" to its standard output with one write(2), which a kill -9
// cannot undo: the lines it leaves are a lower bound of what the database
// must hold. Each transaction starts from what the database says (the
// partition's count root), so a writer started on a recovered database goes
// on from there; a count below what the writer itself saw commit, or an
// object that is not what the transactions made, ends it (status 5).
//
// Against a page server, a writer may outlive the server (`go`): when a
// call fails with qs::connection_lost it writes "lost N" (N counting its
// losses) and waits until the file `go` holds a number of at least N, then
// goes on with the same database handle and its cached pages.
//
// With `hold`, the writer begins no transaction while that file exists:
// it writes "held N" (N: the number in the file) once and waits, so that
// a check sees a database nobody writes.
//
// Thread-safety: one writer per process.
#pragma once

#include <cstdint>
#include <string>

namespace qs_torture {

// How the writer's database is opened (the torture varies it per round).
struct writer_options {
  std::uint32_t pool_pages = 16;
  int relocation = 0;  // 0: continual; 1: continual, 25% of pages moved; 2: one-time, 25% moved
};

struct writer_config {
  std::string target;  // a directory, or a qs:// or qs+unix:// URL
  int part = 0;
  std::uint64_t seed = 0;
  writer_options options;
  std::int64_t max_txns = 1000000;
  std::string go;    // see above; empty: a lost connection ends the writer
  std::string hold;  // see above
  // For the checker's own tests, a transaction broken on purpose: at
  // transaction `break_at` the writer leaves out half of the plan
  // ("partial": everything after the first rewrite), or allocates an Item nothing points to ("leak").
  std::int64_t break_at = 0;
  std::string break_how;
};

// Runs the transactions; returns the exit status (0: max_txns done).
int run_writer(const writer_config& c);

}  // namespace qs_torture
