// qs_ps_worker: a client process of the page-server tests. Usage:
//   qs_ps_worker URL setup                      create the table of counters
//   qs_ps_worker URL incr ID TXNS SEED          TXNS transactions (db.run); each adds 1
//                                               to counter ID (its own) and to one
//                                               counter of 32..63 (shared, random)
//   qs_ps_worker URL check CLIENTS TXNS         exit 0 when counters 0..CLIENTS-1 are
//                                               TXNS and 32..63 sum to CLIENTS*TXNS
//   qs_ps_worker URL deadlock FIRST SECOND DIR [delete]
//                                               write counter FIRST, say so (file
//                                               DIR/FIRST), wait for DIR/SECOND, write
//                                               counter SECOND (or delete it), commit:
//                                               exit 0, or 3 on qs::conflict, caught as
//                                               qs::deadlock (one attempt, no retry)
//   qs_ps_worker URL hold N DIR [index]         write counter N (or, with "index", put key
//                                               N in index "held"), create DIR/held, sleep
//                                               (until killed; 30 s at most)
//   qs_ps_worker URL idle N DIR                 write counter N, create DIR/held, wait for
//                                               DIR/go (60 s at most), commit: exit 0, or 4
//                                               on qs::connection_lost (printed)
//   qs_ps_worker URL once N [index]             add 1 to counter N in one attempt (no
//                                               retry): print its value, or exit 3 on
//                                               qs::deadlock (printed); with "index", put
//                                               key N in index "held" first
//   qs_ps_worker URL bump N                     add 1 to counter N; print its value
//   qs_ps_worker URL all TXNS [GO [whole]]      TXNS transactions setting all 64 counters
//                                               (whole: every word of them) to the
//                                               transaction's number; after a lost
//                                               connection, waits for file GO (if given),
//                                               reconnects and goes on
//   qs_ps_worker URL same                       exit 10+v when all counters are v, 1 if not
//   qs_ps_worker URL set N V                    set counter N to V in one transaction
//                                               (no retry): exit 0 when it committed,
//                                               4 on qs::commit_unknown, 5 on
//                                               qs::connection_lost
//   qs_ps_worker URL index-restart GO DIR       open indexes "first" and "second", put key 1
//                                               in "first", create DIR/ready, wait for file
//                                               GO, put key 2 in "first" (reconnecting)
//   qs_ps_worker URL index-keys NAME            print the keys of index NAME
//   qs_ps_worker URL skew MINE OTHER DIR ISOLATION
//                                               with isolation `serializable` or `snapshot`:
//                                               read counters MINE and OTHER, say so (file
//                                               DIR/MINE), wait for DIR/OTHER, take 100
//                                               from MINE if the two hold 100 or more,
//                                               print how many prefetched pages it used,
//                                               commit: exit 0, or 3 on qs::conflict (one
//                                               attempt, printed)
//   qs_ps_worker URL blind MINE DIR             read counter MINE (prefetch reads the
//                                               pages of the counters after it), print
//                                               the prefetch statistics, create
//                                               DIR/read, wait for DIR/go, add 1 to
//                                               MINE, commit (serializable): exit 0, or
//                                               3 on qs::conflict (one attempt, printed)
//   qs_ps_worker URL show N                     print counter N's value
//   qs_ps_worker URL hammer N MS                add 1 to counter N in db.run transactions,
//                                               one after another, for MS milliseconds
//   qs_ps_worker URL slow N K ATTEMPTS          K transactions (db.run, ATTEMPTS attempts
//                                               each) that read counter N, wait 50 ms and
//                                               write it plus 1: exit 0 when all committed
//                                               (printing the runs), 3 on a conflict
//   qs_ps_worker URL noexcept-walk DIR          in a transaction, read the table, create
//                                               DIR/ready, wait for DIR/go, then sum every
//                                               counter inside a noexcept function
//   qs_ps_worker URL index-view DIR             in one transaction: print the keys of index
//                                               "view", create DIR/began, wait for
//                                               DIR/added, print them again, put key 5,
//                                               print them again, commit
//   qs_ps_worker URL index-add DIR              wait for DIR/began, put key 7 in index
//                                               "view" and commit, create DIR/added
// Every wait is bounded. Output on stdout, errors on stderr.
#include "ps_types.hpp"
#include "test_options.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

using namespace qs_pstest;

namespace {

bool wait_for_file(const std::string& path, int ms) {
  for (int i = 0; i < ms / 10; ++i) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

void touch_file(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

Table* table(qs::database& db) {
  Table* t = db.root<Table*>("table");
  if (!t) throw qs::error("no table: run setup first");
  return t;
}

int setup(qs::database& db) {
  db.run([&] {
    auto& root = db.root<Table*>("table");
    if (root) return;
    Table* t = new (db) Table{};
    t->n = counters;
    for (int i = 0; i < counters; ++i) t->c[i] = new (db) Counter{};
    root = t;
  });
  return 0;
}

int incr(qs::database& db, int id, int txns, unsigned seed) {
  std::minstd_rand rng(seed);
  int runs = 0;
  for (int i = 0; i < txns; ++i) {
    int shared = 32 + static_cast<int>(rng() % 32);
    db.run([&] {
      ++runs;
      Table* t = table(db);
      t->c[id]->value += 1;
      t->c[shared]->value += 1;
    });
  }
  std::printf("committed=%d runs=%d\n", txns, runs);
  return 0;
}

int check(qs::database& db, int clients, int txns) {
  int rc = 0;
  db.run([&] {
    Table* t = table(db);
    std::int64_t sum = 0;
    for (int i = 0; i < clients; ++i)
      if (t->c[i]->value != txns) {
        std::fprintf(stderr, "counter %d is %lld, expected %d\n", i, static_cast<long long>(t->c[i]->value), txns);
        rc = 1;
      }
    for (int i = 32; i < counters; ++i) sum += t->c[i]->value;
    if (sum != std::int64_t{clients} * txns) {
      std::fprintf(stderr, "shared counters sum to %lld, expected %lld\n", static_cast<long long>(sum),
                   static_cast<long long>(std::int64_t{clients} * txns));
      rc = 1;
    }
    std::printf("sum=%lld\n", static_cast<long long>(sum));
  });
  return rc;
}

int deadlock_role(qs::database& db, int first, int second, const std::string& dir, bool by_delete) {
  try {
    qs::transaction tx(db);
    Table* t = table(db);
    t->c[first]->value += 1;
    touch_file(dir + "/" + std::to_string(first));
    if (!wait_for_file(dir + "/" + std::to_string(second), 10000)) {
      std::fprintf(stderr, "the other client never took its lock\n");
      return 1;
    }
    // Each has now written what the other read: one commit wins, the
    // other's is refused.
    if (by_delete) delete t->c[second];
    else t->c[second]->value += 1;
    tx.commit();
    std::printf("committed\n");
    return 0;
  } catch (const qs::deadlock& e) {
    std::printf("deadlock: %s\n", e.what());
    return 3;
  }
}

using counter_index = qs::index<int, Counter>;

int hold(qs::database& db, int n, const std::string& dir, bool index) {
  counter_index held(db, "held");
  qs::transaction tx(db);
  table(db)->c[n]->value += 1000;
  if (index) held.insert(n, table(db)->c[n]);  // Berkeley DB locks the index's leaf until the commit
  touch_file(dir + "/held");
  std::this_thread::sleep_for(std::chrono::seconds(30));
  return 1;  // killed before
}

int idle(qs::database& db, int n, const std::string& dir) {
  try {
    qs::transaction tx(db);
    table(db)->c[n]->value += 1000;
    touch_file(dir + "/held");
    if (!wait_for_file(dir + "/go", 60000)) {
      std::fprintf(stderr, "never told to go on\n");
      return 1;
    }
    tx.commit();
    std::printf("committed\n");
    return 0;
  } catch (const qs::connection_lost& e) {
    std::printf("connection_lost: %s\n", e.what());
    return 4;
  }
}

int once(qs::database& db, int n, bool index) {
  try {
    counter_index held(db, "held");
    qs::transaction tx(db);
    if (index) held.insert(n, table(db)->c[n]);
    std::int64_t v = ++table(db)->c[n]->value;
    tx.commit();
    std::printf("value=%lld\n", static_cast<long long>(v));
    return 0;
  } catch (const qs::deadlock& e) {
    std::printf("deadlock: %s\n", e.what());
    return 3;
  }
}

int skew(qs::database& db, int mine, int other, const std::string& dir) {
  try {
    qs::transaction tx(db);
    Table* t = table(db);
    std::int64_t x = t->c[mine]->value, y = t->c[other]->value;
    touch_file(dir + "/" + std::to_string(mine));
    if (!wait_for_file(dir + "/" + std::to_string(other), 10000)) {
      std::fprintf(stderr, "the other client never read\n");
      return 1;
    }
    if (x + y >= 100) t->c[mine]->value -= 100;  // keeps x + y >= 0, alone
    std::printf("used=%llu\n", static_cast<unsigned long long>(db.stats().prefetched_used));
    tx.commit();
    std::printf("committed\n");
    return 0;
  } catch (const qs::conflict& e) {
    std::printf("conflict: %s\n", e.what());
    return 3;
  }
}

int blind(qs::database& db, int mine, const std::string& dir) {
  try {
    qs::transaction tx(db);
    Table* t = table(db);
    std::int64_t x = t->c[mine]->value;
    const qs::statistics s = db.stats();
    std::printf("prefetched=%llu used=%llu\n", static_cast<unsigned long long>(s.pages_prefetched),
                static_cast<unsigned long long>(s.prefetched_used));
    std::fflush(stdout);
    touch_file(dir + "/read");
    if (!wait_for_file(dir + "/go", 20000)) {
      std::fprintf(stderr, "never told to go on\n");
      return 1;
    }
    t->c[mine]->value = x + 1;
    tx.commit();
    std::printf("committed\n");
    return 0;
  } catch (const qs::conflict& e) {
    std::printf("conflict: %s\n", e.what());
    return 3;
  }
}

// Code that cannot throw, as a std::map iterator's increment is.
__attribute__((noinline)) std::int64_t sum_noexcept(Table* t) noexcept {
  std::int64_t sum = 0;
  for (int i = 0; i < counters; ++i) sum += t->c[i]->value;
  return sum;
}

int noexcept_walk(qs::database& db, const std::string& dir) {
  qs::transaction tx(db);
  Table* t = table(db);
  touch_file(dir + "/ready");
  if (!wait_for_file(dir + "/go", 20000)) return 1;
  std::printf("sum=%lld\n", static_cast<long long>(sum_noexcept(t)));
  return 0;
}

int hammer(qs::database& db, int n, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  long commits = 0;
  while (std::chrono::steady_clock::now() < end) {
    db.run([&] { table(db)->c[n]->value += 1; });
    ++commits;
  }
  std::printf("commits=%ld\n", commits);
  return 0;
}

int slow(qs::database& db, int n, int k, int attempts) {
  long runs = 0;
  try {
    for (int i = 0; i < k; ++i)
      db.run(
          [&] {
            ++runs;
            Counter* c = table(db)->c[n];
            std::int64_t v = c->value;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            c->value = v + 1;
          },
          attempts);
  } catch (const qs::conflict& e) {
    std::printf("conflict after %ld runs: %s\n", runs, e.what());
    return 3;
  }
  std::printf("committed=%d runs=%ld\n", k, runs);
  return 0;
}

int show(qs::database& db, int n) {
  std::int64_t v = 0;
  db.run([&] { v = table(db)->c[n]->value; });
  std::printf("value=%lld\n", static_cast<long long>(v));
  return 0;
}

int bump(qs::database& db, int n) {
  std::int64_t v = 0;
  db.run([&] { v = ++table(db)->c[n]->value; });
  std::printf("value=%lld\n", static_cast<long long>(v));
  return 0;
}

int all(qs::database& db, int txns, const std::string& go, bool whole) {
  int lost = 0;
  for (int k = 1; k <= txns; ++k) {
    for (int attempt = 0;; ++attempt) {
      try {
        db.run([&] {
          Table* t = table(db);
          std::int64_t next = t->c[0]->value + 1;
          for (int i = 0; i < counters; ++i) {
            t->c[i]->value = next;
            // Every word of every counter: a commit of 300 KiB of changes.
            if (whole)
              for (std::int64_t& w : t->c[i]->pad) w = next;
          }
        });
        break;
      } catch (const qs::connection_lost& e) {
        ++lost;
        std::printf("connection_lost: %s\n", e.what());
        std::fflush(stdout);
        if (attempt > 300) throw;
        if (!go.empty() && !wait_for_file(go, 30000)) throw;          // the test says when to go on
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server restarts
      }
    }
  }
  std::printf("done lost=%d\n", lost);
  return 0;
}

int same(qs::database& db) {
  int rc = 1;
  db.run([&] {
    Table* t = table(db);
    std::int64_t v = t->c[0]->value;
    for (int i = 1; i < counters; ++i)
      if (t->c[i]->value != v) {
        std::fprintf(stderr, "counter %d is %lld, counter 0 is %lld\n", i, static_cast<long long>(t->c[i]->value),
                     static_cast<long long>(v));
        rc = 1;
        return;
      }
    std::printf("all=%lld\n", static_cast<long long>(v));
    rc = 10 + static_cast<int>(v);
  });
  return rc;
}

int set(qs::database& db, int n, std::int64_t v) {
  try {
    qs::transaction tx(db);
    table(db)->c[n]->value = v;
    std::printf("committing\n");
    std::fflush(stdout);
    tx.commit();
    std::printf("committed\n");
    return 0;
  } catch (const qs::commit_unknown& e) {
    std::printf("commit_unknown: %s\n", e.what());
    return 4;
  } catch (const qs::connection_lost& e) {
    std::printf("connection_lost: %s\n", e.what());
    return 5;
  }
}

int index_restart(qs::database& db, const std::string& go, const std::string& dir) {
  counter_index first(db, "first"), second(db, "second");
  db.run([&] { first.insert(1, table(db)->c[0]); });
  touch_file(dir + "/ready");
  if (!wait_for_file(go, 30000)) return 1;
  for (int attempt = 0;; ++attempt) {
    try {
      db.run([&] { first.insert(2, table(db)->c[1]); });
      return 0;
    } catch (const qs::connection_lost& e) {
      std::printf("connection_lost: %s\n", e.what());
      if (attempt > 100) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

std::string keys_of(counter_index& ix) {
  std::string keys;
  ix.range(0, 1000, [&](int k, Counter* c) {
    keys += " " + std::to_string(k) + (c->value >= 0 ? "" : "?");  // the object is there too
    return true;
  });
  return keys;
}

int index_view(qs::database& db, const std::string& dir) {
  counter_index ix(db, "view");
  qs::transaction tx(db);
  std::printf("before:%s\n", keys_of(ix).c_str());
  touch_file(dir + "/began");
  if (!wait_for_file(dir + "/added", 20000)) return 1;
  std::printf("after another's commit:%s\n", keys_of(ix).c_str());
  ix.insert(5, table(db)->c[5]);
  std::printf("after its own insert:%s\n", keys_of(ix).c_str());
  tx.commit();
  return 0;
}

int index_add(qs::database& db, const std::string& dir) {
  counter_index ix(db, "view");
  if (!wait_for_file(dir + "/began", 20000)) return 1;
  db.run([&] { ix.insert(7, table(db)->c[7]); });
  touch_file(dir + "/added");
  return 0;
}

int index_keys(qs::database& db, const std::string& name) {
  counter_index ix(db, name);
  std::string keys;
  db.run([&] {
    keys.clear();
    ix.range(0, 1000, [&](int k, Counter*) {
      keys += " " + std::to_string(k);
      return true;
    });
  });
  std::printf("keys:%s\n", keys.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: qs_ps_worker URL MODE ...\n");
    return 2;
  }
  std::string url = argv[1], mode = argv[2];
  auto arg = [&](int i) { return i < argc ? std::string(argv[i]) : std::string(); };
  try {
    qs::options o = qs_test::small_options(256, qs_test::commits::durable);
    if (mode == "skew") {
      if (arg(6) != "serializable" && arg(6) != "snapshot") throw qs::invalid_argument("isolation " + arg(6));
      o.isolation_level = arg(6) == "snapshot" ? qs::isolation::snapshot : qs::isolation::serializable;
    }
    // The walk must meet the lost server at a fault: nothing of it read ahead.
    if (mode == "noexcept-walk") o.prefetch_pages = 0;
    auto db = qs::database::open(url, o);
    if (mode == "setup") return setup(db);
    if (mode == "incr")
      return incr(db, std::stoi(arg(3)), std::stoi(arg(4)), static_cast<unsigned>(std::stoul(arg(5))));
    if (mode == "check") return check(db, std::stoi(arg(3)), std::stoi(arg(4)));
    if (mode == "deadlock") return deadlock_role(db, std::stoi(arg(3)), std::stoi(arg(4)), arg(5), arg(6) == "delete");
    if (mode == "hold") return hold(db, std::stoi(arg(3)), arg(4), arg(5) == "index");
    if (mode == "idle") return idle(db, std::stoi(arg(3)), arg(4));
    if (mode == "once") return once(db, std::stoi(arg(3)), arg(4) == "index");
    if (mode == "bump") return bump(db, std::stoi(arg(3)));
    if (mode == "all") return all(db, std::stoi(arg(3)), arg(4), arg(5) == "whole");
    if (mode == "same") return same(db);
    if (mode == "set") return set(db, std::stoi(arg(3)), std::stoll(arg(4)));
    if (mode == "index-restart") return index_restart(db, arg(3), arg(4));
    if (mode == "index-keys") return index_keys(db, arg(3));
    if (mode == "skew") return skew(db, std::stoi(arg(3)), std::stoi(arg(4)), arg(5));
    if (mode == "blind") return blind(db, std::stoi(arg(3)), arg(4));
    if (mode == "show") return show(db, std::stoi(arg(3)));
    if (mode == "hammer") return hammer(db, std::stoi(arg(3)), std::stoi(arg(4)));
    if (mode == "slow") return slow(db, std::stoi(arg(3)), std::stoi(arg(4)), std::stoi(arg(5)));
    if (mode == "noexcept-walk") return noexcept_walk(db, arg(3));
    if (mode == "index-view") return index_view(db, arg(3));
    if (mode == "index-add") return index_add(db, arg(3));
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs_ps_worker %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
