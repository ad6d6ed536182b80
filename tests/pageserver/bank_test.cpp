// The bank: four client processes transfer money between the accounts of a
// std::map in persistent memory (qs_ps_bank, bank_worker.cpp), and the same
// balances in a qs::btree_map, journaling each transfer in a
// qs::btree_multimap they all append to, while an auditor process sums every
// balance both ways in read-only transactions; then a check replays the
// clients' transfers and checks both trees' invariants. Every process must exit normally with 0:
// no total the auditor sees may be wrong, none of its transactions may abort,
// and nothing may be lost or applied twice.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "support.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace qs_pstest;

namespace {

constexpr int clients = 4;
constexpr int transfers = 1000;

// Runs qs_ps_bank URL args... with the server's secret; stdout and stderr go
// to files named after `tag` in the server's directory.
process bank_process(const server_process& s, const std::vector<std::string>& args, const std::string& tag) {
  std::vector<std::string> argv{QS_PS_BANK, s.unix_url()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string dir = std::filesystem::path(s.secret_file()).parent_path();
  return spawn(argv, logged(dir, tag, {"QS_SECRET=" + s.secret()}));
}

std::string status_text(int st) {
  if (st == timed_out) return "still running at its time limit (killed)";
  if (st < 0) return "killed by signal " + std::to_string(-st) + " (" + ::strsignal(-st) + ")";
  return "exit status " + std::to_string(st);
}

std::string tail(const std::string& s, std::size_t n = 4000) {
  return s.size() <= n ? s : "[...]" + s.substr(s.size() - n);
}

// What a finished process did, for the failure report.
std::string describe(const std::string& name, int st, const process& p) {
  return name + ": " + status_text(st) + "\n--- stdout:\n" + tail(p.out()) + "--- stderr:\n" + tail(p.err());
}

// Waits for `p` until `deadline` (at least 1 s).
int wait_until(process& p, std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return p.wait(std::max(1000, static_cast<int>(left.count())));
}

// The number after `key=` in `out`, or -1.
long field(const std::string& out, const std::string& key) {
  auto at = out.find(key + "=");
  return at == std::string::npos ? -1 : std::atol(out.c_str() + at + key.size() + 1);
}

}  // namespace

TEST_CASE_METHOD(server_fixture,
                 "bank: four clients transfer between std::map accounts while an auditor sums the balances", "[bank]") {
  {
    process setup = bank_process(s, {"setup"}, "setup");
    int st = setup.wait(60000);
    INFO(describe("setup", st, setup));
    REQUIRE(st == 0);
  }
  std::string done = dir.sub("transfers-done");
  auto start = std::chrono::steady_clock::now();
  std::vector<process> ps;
  for (int i = 0; i < clients; ++i)
    ps.push_back(
        bank_process(s, {"transfer", std::to_string(i), std::to_string(transfers)}, "client" + std::to_string(i)));
  process auditor = bank_process(s, {"audit", done}, "auditor");

  // The clients have 150 s together; then the auditor is told to stop, and
  // stops after its current audit (it gives up by itself after 240 s, when
  // the test would no longer wait for it).
  std::vector<int> st(clients);
  for (int i = 0; i < clients; ++i) st[i] = wait_until(ps[i], start + std::chrono::seconds(150));
  { std::ofstream(done.c_str()).put('\n'); }
  int auditor_st = auditor.wait(90000);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  process check = bank_process(s, {"check", std::to_string(clients), std::to_string(transfers)}, "check");
  int check_st = check.wait(60000);

  std::string summary = "after " + std::to_string(seconds) + " s:";
  for (int i = 0; i < clients; ++i) summary += " client" + std::to_string(i) + " " + status_text(st[i]) + ";";
  summary += " auditor " + status_text(auditor_st) + "; check " + status_text(check_st);
  INFO(summary);
  for (int i = 0; i < clients; ++i) {
    INFO(describe("client " + std::to_string(i), st[i], ps[i]));
    CHECK(st[i] == 0);
  }
  {
    INFO(describe("auditor", auditor_st, auditor));
    CHECK(auditor_st == 0);  // 3: a wrong total, 4: an abort, 5: both, 6: never told to stop
    if (auditor_st == 0) {
      CHECK(field(auditor.out(), "wrong") == 0);
      CHECK(field(auditor.out(), "aborted") == 0);
      CHECK(field(auditor.out(), "audits") >= 1);
    }
  }
  {
    INFO(describe("check", check_st, check));
    INFO("server log:\n" << tail(s.log()));
    CHECK(check_st == 0);
  }
}
