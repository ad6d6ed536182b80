// qs_crash_worker: the processes the crash and fault tests start, kill and
// check. Usage:
//   qs_crash_worker DIR grow TXNS NODES POOL   run TXNS transactions; each adds
//                  NODES nodes to the list and rewrites every node's value;
//                  says "committed N" on stderr after each commit returns
//   qs_crash_worker DIR churn TXNS NODES POOL  the same, each transaction
//                  first making NODES scratch nodes, reachable from the root
//                  "scratch", then deleting them all (pause point
//                  worker.churned between the two)
//   qs_crash_worker DIR reopen TXNS NODES POOL  the same as grow, with the
//                  database closed and opened again before each transaction
//                  (its first write reopens the environment for writing)
//   qs_crash_worker DIR quick TXNS NODES POOL  the same as grow, its commits
//                  not durable (options::durable false: the log is written,
//                  not flushed)
//   qs_crash_worker DIR check NODES            exit 10 + the number of
//                  transactions when DIR holds the state after a whole number
//                  of `grow` or `churn` transactions (no scratch node left)
//   qs_crash_worker DIR badptr | segv | chain  fault outside any object
//   qs_crash_worker DIR fill SLABS close|die [TXNS [POOL]]  durable transactions
//                  of SLABS 8 KiB objects each until one fails (a full disk);
//                  says "committed N logged B" on stderr after each commit
//                  returns (B: the bytes its transaction logged), then
//                  closes the database normally or dies by SIGKILL (or
//                  stops after TXNS transactions); a pool of POOL pages
//                  (default 256). A transaction refused for a conflict
//                  (DIR a page server's URL) says "conflict N" and runs
//                  again.
//                  After the failure it reads the database again and says
//                  "read after the failure holds N", or why it could not.
//   qs_crash_worker DIR quickfill SLABS close|die [TXNS [POOL]]  the same,
//                  its commits not durable
//   qs_crash_worker DIR fillcheck SLABS        says "holds N" when DIR holds
//                  exactly the first N whole `fill` transactions; exit 0
#include <qs/pause_point.hpp>
#include <qs/qs.hpp>

#include "test_options.hpp"
#include "types.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using qs_test::Node;
using qs_test::Slab;

namespace {

constexpr std::int64_t scale = 1000000;

int grow(const std::string& dir, int txns, int nodes, std::uint32_t pool, bool churn, bool reopen,
         bool durable = true) {
  const auto opts = qs_test::small_options(pool, durable ? qs_test::commits::durable : qs_test::commits::fast);
  std::optional<qs::database> open;
  for (int t = 1; t <= txns; ++t) {
    if (reopen || !open) {
      open.reset();
      open.emplace(qs::database::open(dir, opts));
    }
    qs::database& db = *open;
    qs::transaction tx(db);
    auto& count = db.root<std::int64_t>("count");
    auto& list = db.root<Node*>("list");
    std::int64_t c = count + 1;  // a database's transactions are numbered across runs
    if (churn) {
      // Objects created and deleted in one transaction: their pages are new,
      // and the nodes below take their space.
      auto& scratch = db.root<Node*>("scratch");
      for (int i = 0; i < nodes; ++i) scratch = new (db) Node{-c, scratch};
      qs::pause_point("worker.churned");
      while (Node* n = scratch) {
        scratch = n->next;
        delete n;
      }
    }
    for (Node* n = list; n; n = n->next) n->value = c * scale + n->value % scale;
    for (int i = 0; i < nodes; ++i) list = new (db) Node{c * scale + c, list};
    count = c;
    qs::pause_point("worker.mid");
    tx.commit();
    std::fprintf(stderr, "committed %lld\n", static_cast<long long>(c));
  }
  return 0;
}

int check(const std::string& dir, int nodes) {
  auto db = qs::database::open(dir, qs_test::small_options(64, qs_test::commits::durable));
  qs::transaction tx(db);
  std::int64_t count = db.has_root("count") ? db.root<std::int64_t>("count") : 0;
  std::int64_t seen = 0;
  std::int64_t expect_txn = count;
  Node* n = db.has_root("list") ? db.root<Node*>("list") : nullptr;
  for (; n; n = n->next, ++seen) {
    std::int64_t created = count - seen / nodes;
    if (n->value / scale != count || n->value % scale != created) {
      std::fprintf(stderr, "node %lld: value %lld, expected %lld\n", static_cast<long long>(seen),
                   static_cast<long long>(n->value), static_cast<long long>(count * scale + created));
      return 1;
    }
    expect_txn = created;
  }
  (void)expect_txn;
  if (db.has_root("scratch") && db.root<Node*>("scratch")) {
    std::fprintf(stderr, "a scratch node outlived its transaction\n");
    return 1;
  }
  if (seen != count * nodes) {
    std::fprintf(stderr, "%lld nodes for %lld transactions of %d\n", static_cast<long long>(seen),
                 static_cast<long long>(count), nodes);
    return 1;
  }
  std::printf("count=%lld\n", static_cast<long long>(count));
  return static_cast<int>(count) + 10;  // the test reads the count from the status
}

int badptr(const std::string& dir) {
  auto db = qs::database::open(dir, qs_test::small_options(64, qs_test::commits::durable));
  qs::transaction tx(db);
  auto& list = db.root<Node*>("list");
  list = new (db) Node{1, nullptr};
  // A frame far beyond any page of this database.
  auto* bogus = reinterpret_cast<volatile std::int64_t*>(reinterpret_cast<char*>(list) + (std::size_t{1} << 28));
  return static_cast<int>(*bogus);
}

int segv(const std::string& dir, bool own_handler) {
  if (own_handler) {
    struct sigaction sa {};
    sa.sa_handler = [](int) { _exit(42); };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
  }
  auto db = qs::database::open(dir, qs_test::small_options(64, qs_test::commits::durable));
  // A page of no database that nothing may touch (not a null pointer, whose
  // load UndefinedBehaviorSanitizer stops before it faults).
  void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 4;
  return *static_cast<volatile int*>(page);
}

// raise(SIGSEGV) with the default action in place (`raise`) or with SIGSEGV
// ignored before the database opened (`raise-ignored`), then a transaction
// that faults pages in. Exits 0 when the transaction committed.
int raise_segv(const std::string& dir, bool ignored) {
  if (ignored) signal(SIGSEGV, SIG_IGN);
  auto db = qs::database::open(dir, qs_test::small_options(64, qs_test::commits::durable));
  {
    qs::transaction tx(db);
    db.root<Node*>("list") = new (db) Node{7, nullptr};
    tx.commit();
  }
  db.release_cache();
  raise(SIGSEGV);
  qs::transaction tx(db);
  int v = static_cast<int>(db.root<Node*>("list")->value);  // faults the page in
  tx.commit();
  return v == 7 ? 0 : 1;
}

// Slab chains: transaction t adds `slabs` Slabs of value t in front of the
// list and sets the root "count" to t.
// How many whole `fill` transactions the database holds, or -1 saying why
// not in `why`.
long holds(qs::database& db, int slabs, std::string& why) {
  qs::transaction tx(db);
  std::int64_t count = db.has_root("count") ? db.root<std::int64_t>("count") : 0;
  Slab* s = db.has_root("list") ? db.root<Slab*>("list") : nullptr;
  for (std::int64_t t = count; t >= 1; --t)
    for (int i = slabs - 1; i >= 0; --i, s = s->next) {
      if (!s || s->value != static_cast<std::uint64_t>(t) ||
          s->fill[7] != static_cast<std::uint64_t>(t) * 1000003 + i) {
        why =
            "transaction " + std::to_string(t) + ", slab " + std::to_string(i) + ": " + (s ? "wrong value" : "missing");
        return -1;
      }
    }
  if (s) {
    why = "more slabs than " + std::to_string(count) + " transactions hold";
    return -1;
  }
  tx.commit();
  return count;
}

int fill(const std::string& dir, int slabs, bool die, long txns, std::uint32_t pool, bool durable) {
  qs::options o = qs_test::small_options(pool, durable ? qs_test::commits::durable : qs_test::commits::fast);
  try {
    auto db = qs::database::open(dir, o);
    for (long done = 0; done < txns; ++done) {
      std::int64_t t = 0;
      const std::uint64_t logged = db.stats().log_bytes;
      try {
        qs::transaction tx(db);
        auto& count = db.root<std::int64_t>("count");
        auto& list = db.root<Slab*>("list");
        t = count + 1;
        for (int i = 0; i < slabs; ++i) {
          Slab* s = new (db) Slab;
          s->next = list;
          s->value = static_cast<std::uint64_t>(t);
          for (std::uint64_t& w : s->fill) w = static_cast<std::uint64_t>(t) * 1000003 + i;
          list = s;
        }
        count = t;
        tx.commit();
      } catch (const qs::conflict&) {
        // Through a page server, beside other clients: the same
        // transaction again.
        std::fprintf(stderr, "conflict %lld\n", static_cast<long long>(t));
        --done;
        continue;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "failed %lld: %s\n", static_cast<long long>(t), e.what());
        // Read on: what this process committed, or an error saying why
        // it cannot be read (never a state the commits did not make).
        try {
          std::string why;
          const long seen = holds(db, slabs, why);
          if (seen < 0) std::fprintf(stderr, "read after the failure: %s\n", why.c_str());
          else std::fprintf(stderr, "read after the failure holds %ld\n", seen);
        } catch (const qs::error& r) {
          std::fprintf(stderr, "read after the failure refused: %s\n", r.what());
        }
        if (die) ::kill(::getpid(), SIGKILL);
        break;  // the database closes normally
      }
      std::fprintf(stderr, "committed %lld logged %llu\n", static_cast<long long>(t),
                   static_cast<unsigned long long>(db.stats().log_bytes - logged));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "close: %s\n", e.what());
    return 5;
  }
  return 0;
}

int fillcheck(const std::string& dir, int slabs) {
  auto db = qs::database::open(dir, qs_test::small_options(64, qs_test::commits::durable));
  std::string why;
  const long seen = holds(db, slabs, why);
  if (seen < 0) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  std::fprintf(stderr, "holds %ld\n", seen);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR MODE ...\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1], mode = argv[2];
  try {
    if ((mode == "grow" || mode == "churn" || mode == "reopen") && argc == 6)
      return grow(dir, std::atoi(argv[3]), std::atoi(argv[4]), static_cast<std::uint32_t>(std::atoi(argv[5])),
                  mode == "churn", mode == "reopen");
    if (mode == "quick" && argc == 6)
      return grow(dir, std::atoi(argv[3]), std::atoi(argv[4]), static_cast<std::uint32_t>(std::atoi(argv[5])), false,
                  false, false);
    if (mode == "check" && argc == 4) return check(dir, std::atoi(argv[3]));
    if ((mode == "fill" || mode == "quickfill") && argc >= 5 && argc <= 7)
      return fill(dir, std::atoi(argv[3]), std::string(argv[4]) == "die", argc >= 6 ? std::atol(argv[5]) : 1L << 40,
                  argc == 7 ? static_cast<std::uint32_t>(std::atoi(argv[6])) : 256u, mode == "fill");
    if (mode == "fillcheck" && argc == 4) return fillcheck(dir, std::atoi(argv[3]));
    if (mode == "badptr") return badptr(dir);
    if (mode == "segv") return segv(dir, false);
    if (mode == "chain") return segv(dir, true);
    if (mode == "raise") return raise_segv(dir, false);
    if (mode == "raise-ignored") return raise_segv(dir, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs_crash_worker: %s\n", e.what());
    return 3;
  }
  std::fprintf(stderr, "qs_crash_worker: bad arguments\n");
  return 2;
}
