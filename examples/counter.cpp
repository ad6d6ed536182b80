// counter: a number that survives the process.
//
//   build/examples/counter /tmp/counter.qs     prints "run 1"
//   build/examples/counter /tmp/counter.qs     prints "run 2", and so on
//
// The database is a directory (created on first use). The root "runs" is a
// persistent cell holding a long; the increment commits atomically and
// durably, so a run killed at any moment either counted or did not.
#include <qs/qs.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATABASE-DIR\n", argv[0]);
    return 2;
  }
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    long& runs = db.root<long>("runs");
    ++runs;
    std::printf("run %ld\n", runs);
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "counter: %s\n", e.what());
    return 1;
  }
}
