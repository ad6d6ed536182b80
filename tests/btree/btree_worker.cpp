// qs_btree_worker (hardware mode) and qs_btree_worker_software: the process
// the B+-tree crash tests start and kill with SIGKILL. Usage:
//   qs_btree_worker DIR grow TXNS KEYS   runs TXNS durable transactions; the
//        c-th of the database (the root "count" says how many committed)
//        inserts KEYS int64 keys spread over the whole tree (so that nodes
//        split everywhere) and KEYS / 8 string keys, erases every third key
//        transaction c - 2 inserted, and sets "count" to c.
// The test process checks the database afterwards (btree_expected_* below
// say what transaction counts imply).
#include <qs/pause_point.hpp>

#include "btree_types.hpp"
#include "test_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace btree_test;

namespace {

// A transaction's pages stay in the pool in software mode, and touch the
// whole tree.
constexpr std::uint32_t pool_pages = 2048;

int grow(const std::string& dir, int txns, int keys) {
  auto db = qs::database::open(dir, qs_test::small_options(pool_pages, qs_test::commits::durable));
  for (int t = 1; t <= txns; ++t) {
    qs::transaction tx(db);
    std::int64_t c = db.root<std::int64_t>("count") + 1;
    auto& map = db.root<crash_map>("map");
    auto& strings = db.root<crash_strings>("strings");
    for (int i = 0; i < keys; ++i) {
      if (!map.insert(crash_key(i, c), c).second) {
        std::fprintf(stderr, "transaction %lld: key %lld is there already\n", static_cast<long long>(c),
                     static_cast<long long>(crash_key(i, c)));
        return 1;
      }
    }
    for (int i = 0; i < keys / 8; ++i) strings.insert(crash_string(i, c), c);
    if (c > 2)
      for (int i = 0; i < keys; i += 3) map.erase(crash_key(i, c - 2));
    db.root<std::int64_t>("count") = c;
    qs::pause_point("worker.mid");
    tx.commit();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[2]) == "grow") {
    try {
      return grow(argv[1], std::atoi(argv[3]), std::atoi(argv[4]));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "usage: %s DIR grow TXNS KEYS\n", argv[0]);
  return 2;
}
