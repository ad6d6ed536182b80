// qs_torture: the crash torture of qs (scripts/torture). One program in three
// roles:
//   qs_torture run N [--seed S] [--kinds abcde] [--dir D] [--keep] [--verbose] [--load N]
//       N rounds of each kind of victim (kill_rounds.hpp); S defaults to a
//       fresh random seed, printed first; --load N runs N busy processes
//       beside them
//   qs_torture write TARGET PART SEED POOL RELOCATION [--go FILE] [--hold FILE] [--txns N] [--break partial|leak:K]
//       the writer (writer.hpp); TARGET a directory or a page server's URL
//   qs_torture check TARGET SEED FLOOR...
//       the checker (check.hpp), one FLOOR per partition: K, or K+N when N
//       writer processes were killed since K was known (default 1)
#include "check.hpp"
#include "kill_rounds.hpp"
#include "writer.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

int usage() {
  std::fprintf(
      stderr,
      "usage: qs_torture run N [--seed S] [--kinds abcde] [--dir D] [--keep] [--verbose] [--load N]\n"
      "       qs_torture write TARGET PART SEED POOL RELOCATION [--go FILE] [--hold FILE] [--txns N] [--break HOW:K]\n"
      "       qs_torture check TARGET SEED FLOOR...\n");
  return 2;
}

std::uint64_t number(const std::string& s) {
  std::size_t used = 0;
  unsigned long long v = std::stoull(s, &used);
  if (used != s.size()) throw std::invalid_argument("not a number: " + s);
  return v;
}

int run(const std::vector<std::string>& a) {
  qs_torture::torture_config c;
  c.self = std::filesystem::read_symlink("/proc/self/exe").string();
  c.rounds = static_cast<int>(number(a.at(0)));
  c.seed = std::random_device{}();
  c.seed = (c.seed << 32) ^ std::random_device{}();
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (a[i] == "--seed") c.seed = number(a.at(++i));
    else if (a[i] == "--kinds") c.kinds = a.at(++i);
    else if (a[i] == "--dir") c.dir = a.at(++i);
    else if (a[i] == "--keep") c.keep = true;
    else if (a[i] == "--verbose") c.verbose = true;
    else if (a[i] == "--load") {
      const std::uint64_t n = number(a.at(++i));
      if (n > 64) throw std::invalid_argument("--load takes 0 to 64 busy processes, not " + std::to_string(n));
      c.load = static_cast<int>(n);
    } else return usage();
  }
  return qs_torture::run_torture(c);
}

int write(const std::vector<std::string>& a) {
  // The writer never outlives the torture that started it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 1;
  qs_torture::writer_config c;
  c.target = a.at(0);
  c.part = static_cast<int>(number(a.at(1)));
  c.seed = number(a.at(2));
  c.options.pool_pages = static_cast<std::uint32_t>(number(a.at(3)));
  c.options.relocation = static_cast<int>(number(a.at(4)));
  for (std::size_t i = 5; i < a.size(); ++i) {
    if (a[i] == "--hold") {
      c.hold = a.at(++i);
    } else if (a[i] == "--go") {
      c.go = a.at(++i);
    } else if (a[i] == "--txns") {
      c.max_txns = static_cast<std::int64_t>(number(a.at(++i)));
    } else if (a[i] == "--break") {
      const std::string& b = a.at(++i);
      auto colon = b.find(':');
      if (colon == std::string::npos) return usage();
      c.break_how = b.substr(0, colon);
      c.break_at = static_cast<std::int64_t>(number(b.substr(colon + 1)));
      if (c.break_how != "partial" && c.break_how != "leak") return usage();
    } else {
      return usage();
    }
  }
  return qs_torture::run_writer(c);
}

int check(const std::vector<std::string>& a) {
  std::vector<qs_torture::committed_floor> floors;
  for (std::size_t i = 2; i < a.size(); ++i) {
    const std::string& f = a[i];
    const std::size_t plus = f.find('+');
    qs_torture::committed_floor fl;
    fl.k = static_cast<std::int64_t>(number(f.substr(0, plus)));
    if (plus != std::string::npos) fl.unreported = static_cast<std::int64_t>(number(f.substr(plus + 1)));
    floors.push_back(fl);
  }
  if (floors.empty()) return usage();
  return qs_torture::run_check(a.at(0), number(a.at(1)), floors);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  std::string role = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (role == "run") return run(args);
    if (role == "write") return write(args);
    if (role == "check") return check(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs_torture %s: %s\n", role.c_str(), e.what());
    return 2;
  }
  return usage();
}
