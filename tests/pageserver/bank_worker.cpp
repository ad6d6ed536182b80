// qs_ps_bank: a client process of the page-server bank test (bank_test.cpp).
// A Bank holds a std::map of accounts (int key, an Account with a long
// qs::allocator string name and a balance), allocated with qs::allocator,
// the same balances in a qs::btree_map (the ledger), and a qs::btree_multimap
// journal of every transfer (key: the transfer's number times the clients
// plus the client, so that the clients append to the same last leaf); each
// transfer client has a root counter of its committed transfers.
// Usage:
//   qs_ps_bank URL setup                     create the bank: accounts 0..99 of
//                                            1000 each, counters 0..3 at 0
//   qs_ps_bank URL transfer ID N             N transfers (db.run each) from the
//                                            sequence of client ID; each also adds 1
//                                            to counter ID
//   qs_ps_bank URL audit DONE                sum every balance in read-only
//                                            transactions (db.run) until file DONE
//                                            exists (120 s at most): exit 0 when every
//                                            total was right and no body ran twice;
//                                            3 on a wrong total, 4 on an abort (a body
//                                            run again, or db.run gave up), 5 on both,
//                                            6 when DONE never came
//   qs_ps_bank URL replica-audit DONE        audit with options::read_replica
//   qs_ps_bank URL replica-write             a write with options::read_replica: exit
//                                            0 when refused with invalid_argument
//   qs_ps_bank URL replica-hold SECONDS      with options::read_replica, a transaction
//                                            that sleeps SECONDS between its reads:
//                                            exit 0 when it fails naming
//                                            --replica-read-max
//   qs_ps_bank URL check CLIENTS N           replay the sequences of clients
//                                            0..CLIENTS-1: exit 0 when every balance,
//                                            name and counter is what they give, 1 if not
// Every wait is bounded. Output on stdout, errors on stderr.
#include "test_options.hpp"

#include <qs/btree.hpp>
#include <qs/qs.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace qs_psbank {

constexpr int accounts = 100;
constexpr std::int64_t initial_balance = 1000;
constexpr int max_clients = 4;

using pstring = std::basic_string<char, std::char_traits<char>, qs::allocator<char>>;

struct Account {
  pstring name;  // longer than the small-string buffer: its characters are a persistent allocation
  std::int64_t balance = 0;
};

using account_map = std::map<int, Account, std::less<int>, qs::allocator<std::pair<const int, Account>>>;

struct Bank {
  QS_PERSISTENT(Bank)
  account_map accounts;
  qs::btree_map<int, std::int64_t> ledger;
  qs::btree_multimap<std::int64_t, std::int64_t> journal;  // transfer key -> amount
};

}  // namespace qs_psbank

using namespace qs_psbank;

namespace {

std::string account_name(int i) {
  char b[64];
  std::snprintf(b, sizeof b, "account-%07d-held-at-the-test-bank", i);
  return b;
}

std::string counter_root(int client) { return "transfers-" + std::to_string(client); }

Bank* bank(qs::database& db) {
  Bank* b = db.root<Bank*>("bank");
  if (!b) throw qs::error("no bank: run setup first");
  return b;
}

struct transfer_step {
  int from, to;
  std::int64_t amount;
};

// Client `client`'s transfers: the same for the client and for check.
std::vector<transfer_step> sequence(int client, int n) {
  std::minstd_rand rng(static_cast<unsigned>(7919 * (client + 1)));
  std::vector<transfer_step> steps;
  for (int k = 0; k < n; ++k) {
    transfer_step t;
    t.from = static_cast<int>(rng() % accounts);
    t.to = static_cast<int>(rng() % (accounts - 1));
    if (t.to >= t.from) ++t.to;  // never from == to
    t.amount = 1 + static_cast<std::int64_t>(rng() % 50);
    steps.push_back(t);
  }
  return steps;
}

int setup(qs::database& db) {
  db.run([&] {
    auto& root = db.root<Bank*>("bank");
    if (root) return;
    Bank* b = new (db) Bank{};
    for (int i = 0; i < accounts; ++i) {
      Account& a = b->accounts[i];
      a.name = account_name(i).c_str();
      a.balance = initial_balance;
      b->ledger.insert(i, initial_balance);
    }
    for (int c = 0; c < max_clients; ++c) db.root<std::int64_t>(counter_root(c)) = 0;
    root = b;
  });
  std::printf("accounts=%d\n", accounts);
  return 0;
}

int transfer(qs::database& db, int client, int n) {
  std::vector<transfer_step> steps = sequence(client, n);
  int runs = 0;
  for (int k = 0; k < n; ++k) {
    const transfer_step& t = steps[k];
    db.run([&] {
      ++runs;
      std::string note = "transfer " + std::to_string(k) + " of client " + std::to_string(client);
      Bank* b = bank(db);
      auto account = [&](int id) -> Account& {
        auto it = b->accounts.find(id);
        if (it == b->accounts.end()) throw qs::error(note + ": no account " + std::to_string(id));
        return it->second;
      };
      Account& from = account(t.from);
      Account& to = account(t.to);
      from.balance -= t.amount;
      to.balance += t.amount;
      b->ledger[t.from] -= t.amount;
      b->ledger[t.to] += t.amount;
      b->journal.insert(std::int64_t{k} * max_clients + client, t.amount);
      ++db.root<std::int64_t>(counter_root(client));
    });
  }
  std::printf("committed=%d runs=%d\n", n, runs);
  return 0;
}

int audit(qs::database& db, const std::string& done) {
  const std::int64_t expected = std::int64_t{accounts} * initial_balance;
  auto start = std::chrono::steady_clock::now();
  long runs = 0, completed = 0, wrong = 0, gave_up = 0;
  bool timed_out = false;
  do {
    // Past what the test gives the clients (150 s) and then the auditor
    // (90 s): the test is gone, or will not wait for it.
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(240)) {
      timed_out = true;
      break;
    }
    long before = runs;
    try {
      db.run([&] {
        ++runs;
        std::string note = "audit " + std::to_string(completed);
        std::int64_t total = 0, ledger_total = 0;
        int n = 0;
        for (const auto& [id, account] : bank(db)->accounts) {
          total += account.balance;
          ++n;
        }
        for (auto [id, balance] : std::as_const(bank(db)->ledger)) ledger_total += balance;
        if (ledger_total != total) total = -1;  // the two copies disagree: wrong
        if (total != expected || n != accounts) {
          ++wrong;
          if (wrong <= 10)
            std::printf("%s (run %ld): %d accounts, total %lld, expected %d and %lld\n", note.c_str(), runs, n,
                        static_cast<long long>(total), accounts, static_cast<long long>(expected));
        }
      });
      ++completed;
      if (runs - before > 1)
        std::printf("audit %ld: its body ran %ld times (aborted and retried)\n", completed, runs - before);
    } catch (const qs::deadlock& e) {
      ++gave_up;
      std::printf("audit %ld: db.run gave up after %ld runs: %s\n", completed + 1, runs - before, e.what());
    }
    std::fflush(stdout);
  } while (!std::filesystem::exists(done));
  bool aborted = runs != completed;
  std::printf("audits=%ld runs=%ld wrong=%ld aborted=%ld gave_up=%ld%s\n", completed, runs, wrong, runs - completed,
              gave_up, timed_out ? " timed_out" : "");
  if (wrong && aborted) return 5;
  if (wrong) return 3;
  if (aborted) return 4;
  if (timed_out) return 6;
  return 0;
}

int check(qs::database& db, int clients, int n) {
  std::vector<std::int64_t> expected(accounts, initial_balance);
  for (int c = 0; c < clients; ++c)
    for (const transfer_step& t : sequence(c, n)) {
      expected[t.from] -= t.amount;
      expected[t.to] += t.amount;
    }
  int rc = 0, reported = 0;
  auto report = [&](const std::string& what) {
    rc = 1;
    if (++reported <= 20) std::fprintf(stderr, "%s\n", what.c_str());
  };
  db.run([&] {
    rc = 0;
    reported = 0;
    Bank* b = bank(db);
    if (b->accounts.size() != static_cast<std::size_t>(accounts))
      report("the bank has " + std::to_string(b->accounts.size()) + " accounts");
    std::int64_t total = 0;
    for (int i = 0; i < accounts; ++i) {
      auto it = b->accounts.find(i);
      if (it == b->accounts.end()) {
        report("account " + std::to_string(i) + " is missing");
        continue;
      }
      const Account& a = it->second;
      total += a.balance;
      if (a.name.c_str() != account_name(i))
        report("account " + std::to_string(i) + " is named \"" + std::string(a.name.c_str()) + "\"");
      if (a.balance != expected[i])
        report("account " + std::to_string(i) + " has " + std::to_string(a.balance) + ", expected " +
               std::to_string(expected[i]));
    }
    const auto& ledger = std::as_const(b->ledger);
    const auto& journal = std::as_const(b->journal);
    try {
      ledger.check();
      journal.check();
    } catch (const qs::corrupt_btree& e) {
      report(e.what());
    }
    for (int i = 0; i < accounts; ++i)
      if (!ledger.contains(i) || ledger.at(i) != expected[i])
        report("the ledger's account " + std::to_string(i) + " is not " + std::to_string(expected[i]));
    if (journal.size() != static_cast<std::size_t>(clients) * static_cast<std::size_t>(n))
      report("the journal has " + std::to_string(journal.size()) + " transfers");
    for (int c = 0; c < clients; ++c) {
      std::vector<transfer_step> steps = sequence(c, n);
      for (int k = 0; k < n; ++k) {
        auto it = journal.find(std::int64_t{k} * max_clients + c);
        if (it == journal.end() || it->second != steps[static_cast<std::size_t>(k)].amount ||
            journal.count(std::int64_t{k} * max_clients + c) != 1)
          report("the journal's transfer " + std::to_string(k) + " of client " + std::to_string(c) + " is wrong");
      }
    }
    for (int c = 0; c < clients; ++c) {
      std::int64_t v = db.root<std::int64_t>(counter_root(c));
      if (v != n)
        report("client " + std::to_string(c) + " committed " + std::to_string(v) + " transfers, expected " +
               std::to_string(n));
    }
    std::printf("total=%lld\n", static_cast<long long>(total));
  });
  if (rc == 0) std::printf("every balance and counter is right\n");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: qs_ps_bank URL MODE ...\n");
    return 2;
  }
  std::string url = argv[1], mode = argv[2];
  auto arg = [&](int i) { return i < argc ? std::string(argv[i]) : std::string(); };
  try {
    qs::options o = qs_test::small_options(256, qs_test::commits::durable);
    // Read-only handles, which replicas serve as well as the master.
    o.read_replica = mode == "replica-audit" || mode == "replica-write" || mode == "replica-hold";
    auto db = qs::database::open(url, o);
    if (mode == "setup") return setup(db);
    if (mode == "transfer") {
      int client = std::stoi(arg(3));
      if (client < 0 || client >= max_clients) throw qs::error("client ids are 0.." + std::to_string(max_clients - 1));
      return transfer(db, client, std::stoi(arg(4)));
    }
    if (mode == "audit") return audit(db, arg(3));
    if (mode == "replica-write") {
      try {
        db.run([&] { bank(db)->accounts.begin()->second.balance += 1; });
      } catch (const qs::invalid_argument& e) {
        std::printf("refused: %s\n", e.what());
        return 0;
      }
      std::printf("a read_replica handle committed a write\n");
      return 1;
    }
    if (mode == "replica-hold") {
      // One transaction that keeps its reads longer than the replica's
      // --replica-read-max: it must fail, naming the option.
      try {
        db.run([&] {
          std::int64_t total = 0;
          for (const auto& [id, account] : bank(db)->accounts) total += account.balance;
          std::this_thread::sleep_for(std::chrono::seconds(std::stoi(arg(3))));
          for (const auto& [id, account] : bank(db)->accounts) total += account.balance;
          std::printf("total twice %lld\n", static_cast<long long>(total));
        });
      } catch (const qs::error& e) {
        std::printf("failed: %s\n", e.what());
        return std::string(e.what()).find("--replica-read-max") != std::string::npos ? 0 : 1;
      }
      std::printf("a transaction kept its reads past --replica-read-max\n");
      return 1;
    }
    if (mode == "replica-audit") {
      // As audit: every total right, and no audit run again (a replica's
      // reads are never the deadlock victim of its apply).
      int st = audit(db, arg(3));
      std::printf("replica_lag_ms=%llu\n", static_cast<unsigned long long>(db.stats().replica_lag_ms));
      return st;
    }
    if (mode == "check") return check(db, std::stoi(arg(3)), std::stoi(arg(4)));
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs_ps_bank %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
