// qs_crash_worker_software: the process the software-mode crash test
// starts, kills and checks (the counterpart of tests/core/crash_worker.cpp,
// with qs::ref and qs::write). Usage:
//   qs_crash_worker_software DIR grow TXNS NODES   run TXNS transactions; each
//                  adds NODES items to the list and rewrites every item's
//                  value; says "committed N" on stderr after each commit returns
//   qs_crash_worker_software DIR check NODES       exit 10 + the number of
//                  transactions when DIR holds the state after a whole number
//                  of `grow` transactions; 1 otherwise
#include <qs/pause_point.hpp>
#include <qs/qs.hpp>

#include "test_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace sw_crash {

struct Item {
  QS_PERSISTENT(Item)
  std::int64_t value = 0;
  qs::ref<Item> next;
};

}  // namespace sw_crash

using sw_crash::Item;

namespace {

constexpr std::int64_t scale = 1000000;
// A transaction's pages stay in the pool in software mode.
constexpr std::uint32_t pool_pages = 256;

int grow(const std::string& dir, int txns, int nodes) {
  auto db = qs::database::open(dir, qs_test::small_options(pool_pages, qs_test::commits::durable));
  for (int t = 1; t <= txns; ++t) {
    qs::transaction tx(db);
    std::int64_t count = db.root<std::int64_t>("count") + 1;
    qs::ref<Item> list = db.root<qs::ref<Item>>("list");
    for (qs::ref<Item> n = list; n; n = n->next) qs::write(n)->value = count * scale + n->value % scale;
    for (int i = 0; i < nodes; ++i) {
      qs::ref<Item> x = new (db) Item;
      qs::write(x)->value = count * scale + count;
      qs::write(x)->next = list;
      list = x;
    }
    db.root<qs::ref<Item>>("list") = list;
    db.root<std::int64_t>("count") = count;
    qs::pause_point("worker.mid");
    tx.commit();
    std::fprintf(stderr, "committed %lld\n", static_cast<long long>(count));
  }
  return 0;
}

int check(const std::string& dir, int nodes) {
  auto db = qs::database::open(dir, qs_test::small_options(pool_pages, qs_test::commits::durable));
  qs::transaction tx(db);
  std::int64_t count = db.has_root("count") ? db.root<std::int64_t>("count") : 0;
  std::int64_t seen = 0;
  qs::ref<Item> n = db.has_root("list") ? db.root<qs::ref<Item>>("list") : nullptr;
  for (; n; n = n->next, ++seen) {
    std::int64_t created = count - seen / nodes;
    if (n->value != count * scale + created) {
      std::fprintf(stderr, "item %lld: value %lld, expected %lld\n", static_cast<long long>(seen),
                   static_cast<long long>(n->value), static_cast<long long>(count * scale + created));
      return 1;
    }
  }
  if (seen != count * nodes) {
    std::fprintf(stderr, "%lld items for %lld transactions of %d\n", static_cast<long long>(seen),
                 static_cast<long long>(count), nodes);
    return 1;
  }
  return static_cast<int>(count) + 10;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR grow TXNS NODES | DIR check NODES\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1], cmd = argv[2];
  try {
    if (cmd == "grow" && argc == 5) return grow(dir, std::atoi(argv[3]), std::atoi(argv[4]));
    if (cmd == "check" && argc == 4) return check(dir, std::atoi(argv[3]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs_crash_worker_software: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: %s DIR grow TXNS NODES | DIR check NODES\n", argv[0]);
  return 2;
}
