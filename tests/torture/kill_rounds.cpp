// The crash torture's driver (kill_rounds.hpp).
#include "kill_rounds.hpp"

#include "harness.hpp"
#include "replication_group.hpp"
#include "small_fs.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace qs_torture {
namespace {

using qs_pstest::process;
using qs_pstest::server_process;
using qs_pstest::timed_out;

namespace fs = std::filesystem;

constexpr std::array writer_pauses{"torture.mid", "torture.end", "commit.half_written", "commit.before_store_commit",
                                   "commit.after_store_commit"};
// The embedded databases laid out with a page file (the default; not with
// QS_PAGE_FILE=0): the page file's points too.
constexpr std::array page_file_writer_pauses{"torture.mid",
                                             "torture.end",
                                             "commit.half_written",
                                             "commit.before_store_commit",
                                             "commit.after_store_commit",
                                             "page_file.committed",
                                             "page_file.half_applied",
                                             "page_file.checkpoint_synced"};
constexpr std::array server_pauses{"server.write.applied", "server.commit.half_applied", "server.commit.before_commit",
                                   "server.commit.after_commit"};
constexpr int pause_wait_ms = 30000;
constexpr int check_wait_ms = 300000;
// Kind d: how long a writer may take to fill the disk before it is killed.
constexpr int disk_full_wait_ms = 3000;

// A failed round: what the driver prints before it stops.
class round_failed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct kill_choice {
  std::string pause;  // "name:N", or empty for a delay
  int delay_ms = 0;
  std::string describe() const { return pause.empty() ? "after " + std::to_string(delay_ms) + " ms" : "at " + pause; }
  std::string how() const { return pause.empty() ? "delay" : pause.substr(0, pause.rfind(':')); }
};

struct kind_stats {
  int rounds = 0;
  int kills = 0;
  int recovery_kills = 0;
  std::map<std::string, int> how;
  int pauses_missed = 0;       // the victim never reached its pause point
  int one_more = 0;            // rounds whose database held a commit nobody reported
  int disk_full = 0;           // kind d: writers that ended on the full disk
  std::int64_t committed = 0;  // transactions in the database at the end
  double seconds = 0;
};

// The highest "committed K" line of a writer's output, and its "lost" lines.
std::int64_t last_committed(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  std::int64_t k = 0;
  while (std::getline(in, line))
    if (line.rfind("committed ", 0) == 0) k = std::max<std::int64_t>(k, std::atoll(line.c_str() + 10));
  return k;
}

int losses(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.rfind("lost ", 0) == 0;
  return n;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text << "\n";
  }
  fs::rename(tmp, path);
}

// A victim started with a pause point: the process and the read end of the
// pipe it writes to when it stops there.
struct victim {
  process proc;
  int pause_fd = -1;
  victim() = default;
  victim(victim&& o) noexcept : proc(std::move(o.proc)), pause_fd(o.pause_fd) { o.pause_fd = -1; }
  ~victim() {
    if (pause_fd >= 0) ::close(pause_fd);
  }
  // Waits until it stops at its pause point (true), or exits, or time runs out.
  bool wait_paused(int ms) {
    if (pause_fd < 0) return false;
    pollfd p{pause_fd, POLLIN, 0};
    char b;
    return ::poll(&p, 1, ms) == 1 && ::read(pause_fd, &b, 1) == 1;
  }
};

// Processes that spin on the processor until this object goes (or the
// torture dies: they never outlive it).
class busy_load {
 public:
  explicit busy_load(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t parent = ::getpid();
      const pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error("cannot start a busy process");
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(0);
        volatile std::uint64_t spin = 0;
        for (;;) spin = spin + 1;
      }
      pids_.push_back(pid);
    }
  }
  ~busy_load() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  busy_load(const busy_load&) = delete;
  busy_load& operator=(const busy_load&) = delete;

 private:
  std::vector<pid_t> pids_;
};

class torture {
 public:
  explicit torture(const torture_config& c) : c_(c), rng_(c.seed) {}

  int run() {
    work_ = c_.dir;
    if (work_.empty()) {
      work_ = qs_test::make_temp_dir("qs-torture");
    }
    fs::create_directories(work_);
    std::printf("qs_torture: seed %llu, %d rounds of kind%s %s, in %s", static_cast<unsigned long long>(c_.seed),
                c_.rounds, c_.kinds.size() > 1 ? "s" : "", c_.kinds.c_str(), work_.c_str());
    if (c_.load > 0) std::printf(", %d busy process%s beside it", c_.load, c_.load > 1 ? "es" : "");
    std::printf("\n");
    std::fflush(stdout);
    busy_load load(c_.load);
    int rc = 0;
    for (char kind : c_.kinds) {
      kind_stats& st = stats_[kind];
      rng_.seed(c_.seed ^ (static_cast<std::uint64_t>(kind) << 56));  // a kind replays alone (--kinds)
      auto t0 = std::chrono::steady_clock::now();
      try {
        if (kind == 'a') run_embedded(st);
        else if (kind == 'b') run_client_through_server(st);
        else if (kind == 'c') run_server(st);
        else if (kind == 'd') run_disk_full(st);
        else if (kind == 'e') run_replicated(st);
        else throw std::runtime_error(std::string("unknown kind ") + kind + " (a, b, c, d or e)");
      } catch (const std::exception& e) {
        std::printf("FAILED: kind %c, round %d: %s\n", kind, st.rounds, e.what());
        std::printf("replay: scripts/torture %d --seed %llu --kinds %c%s (work directory kept: %s)\n", c_.rounds,
                    static_cast<unsigned long long>(c_.seed), kind,
                    c_.load > 0 ? (" --load " + std::to_string(c_.load)).c_str() : "", work_.c_str());
        rc = 1;
      }
      st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      report(kind, st);
      if (rc) break;
    }
    if (rc == 0 && !c_.keep && c_.dir.empty()) fs::remove_all(work_);
    return rc;
  }

 private:
  // --- choices (all from the seed) ---
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int percent) { return uniform(0, 99) < percent; }

  template <std::size_t n>
  kill_choice choose_kill(const std::array<const char*, n>& pauses, int max_pass) {
    kill_choice k;
    if (chance(40)) {
      k.pause = std::string(pauses[static_cast<std::size_t>(uniform(0, static_cast<int>(n) - 1))]) + ":" +
                std::to_string(uniform(1, max_pass));
    } else {
      k.delay_ms = chance(50) ? uniform(0, 80) : uniform(80, 700);
    }
    return k;
  }

  // `embedded`: the writer opens a database directory (a client of a page
  // server reaches none of the page file's points).
  kill_choice choose_writer_kill(bool embedded) {
    return embedded && qs_test::page_file_layout() ? choose_kill(page_file_writer_pauses, 4)
                                                   : choose_kill(writer_pauses, 4);
  }

  // pool, relocation
  std::pair<int, int> choose_options() { return {chance(70) ? 16 : 256, chance(50) ? 0 : uniform(1, 2)}; }

  // --- processes ---
  victim start_writer(const std::string& dir, const std::string& tag, const std::string& target, int part,
                      std::pair<int, int> options, const std::string& pause, const std::string& go = "",
                      const std::string& hold = "") {
    std::vector<std::string> argv{c_.self,
                                  "write",
                                  target,
                                  std::to_string(part),
                                  std::to_string(c_.seed),
                                  std::to_string(options.first),
                                  std::to_string(options.second)};
    if (!go.empty()) argv.insert(argv.end(), {"--go", go});
    if (!hold.empty()) argv.insert(argv.end(), {"--hold", hold});
    std::vector<std::string> env{"QS_SECRET=" + secret_};
    victim v;
    int fds[2] = {-1, -1};
    if (!pause.empty()) {
      if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
      env.push_back("QS_PAUSE_AT=" + pause);
      env.push_back("QS_PAUSE_FD=100");
    }
    qs_pstest::spawn_options o = qs_pstest::logged(dir, tag, env);
    o.pause_fd = fds[1];
    v.proc = qs_pstest::spawn(argv, o);
    if (fds[1] >= 0) ::close(fds[1]);
    v.pause_fd = fds[0];
    return v;
  }

  // Kills the victim as `k` says; returns whether it reached its pause point.
  bool kill_victim(victim& v, const kill_choice& k, const std::string& what) {
    bool paused = false;
    if (!k.pause.empty()) paused = v.wait_paused(pause_wait_ms);
    else sleep_ms(k.delay_ms);
    int st = v.proc.wait(0);  // kills it when it is still running
    if (st != timed_out)
      throw round_failed(what + " ended by itself (status " + std::to_string(st) + ") before the kill " + k.describe() +
                         ": " + v.proc.err());
    return paused;
  }

  // `unreported`: writer processes killed since the floors were known (each
  // may have committed once more without saying so).
  std::vector<std::int64_t> check(const std::string& dir, const std::string& target,
                                  const std::vector<std::int64_t>& floors, int unreported = 1) {
    std::vector<std::string> argv{c_.self, "check", target, std::to_string(c_.seed)};
    for (std::int64_t f : floors)
      argv.push_back(std::to_string(f) + (unreported != 1 ? "+" + std::to_string(unreported) : ""));
    process p = qs_pstest::spawn(argv, qs_pstest::logged(dir, "check", {"QS_SECRET=" + secret_}));
    int st = p.wait(check_wait_ms);
    std::string out = p.out();
    if (st != 0) {
      std::string floors_text;
      for (std::int64_t f : floors) floors_text += " " + std::to_string(f);
      throw round_failed("the check (writers reported" + floors_text + ") " +
                         (st == timed_out ? "timed out" : "exited with status " + std::to_string(st)) + ":\n" + out +
                         p.err());
    }
    std::vector<std::int64_t> holds(floors.size(), 0);
    std::istringstream in(out);
    std::string word;
    while (in >> word)
      if (word == "holds") {
        std::size_t part;
        std::int64_t k;
        in >> part >> k;
        if (part < holds.size()) holds[part] = k;
      }
    return holds;
  }

  // What the checker says of the database after a writer failed: the other
  // writers stopped, the server restarted when it is down.
  std::string after_failure(server_process& server, const std::string& dir, std::vector<victim>& writers,
                            std::vector<std::int64_t> floors) {
    try {
      for (std::size_t p = 0; p < writers.size(); ++p) {
        writers[p].proc.kill9();
        floors[p] = std::max(floors[p], last_committed(writers[p].proc.out()));
      }
      if (!server.running()) server.start();
      check(dir, server.unix_url(), floors);
      return "\nthe database itself passes the check";
    } catch (const std::exception& e) {
      return std::string("\nand then ") + e.what();
    }
  }

  void log_round(char kind, int r, const std::string& text) {
    if (c_.verbose || (r + 1) % 100 == 0) {
      std::printf("  %c round %d: %s\n", kind, r + 1, text.c_str());
      std::fflush(stdout);
    }
  }

  void count_kill(kind_stats& st, const kill_choice& k, bool paused) {
    ++st.kills;
    ++st.how[k.how()];
    if (!k.pause.empty() && !paused) ++st.pauses_missed;
  }

  // --- a: an embedded writer ---
  void run_embedded(kind_stats& st) {
    const std::string dir = work_ + "/a", db = dir + "/db";
    fs::create_directories(dir);
    std::int64_t floor = 0;
    for (int r = 0; r < c_.rounds; ++r, ++st.rounds) {
      kill_choice k = choose_writer_kill(true);
      auto options = choose_options();
      victim v = start_writer(dir, "writer", db, 0, options, k.pause);
      bool paused = kill_victim(v, k, "the writer");
      count_kill(st, k, paused);
      std::int64_t reported = std::max(floor, last_committed(v.proc.out()));
      std::string text = "writer killed " + k.describe();
      int killed = 1;
      if (chance(25)) {  // the next process to open the directory is killed too, as it recovers
        kill_choice rk{"", uniform(0, 25)};
        victim w = start_writer(dir, "recovering", db, 0, choose_options(), "");
        kill_victim(w, rk, "the recovering writer");
        ++st.recovery_kills;
        ++killed;  // it may have committed before it was killed, and not said so
        reported = std::max(reported, last_committed(w.proc.out()));
        text += ", then again " + rk.describe();
      }
      std::int64_t holds = check(dir, db, {reported}, killed)[0];
      if (holds > reported) ++st.one_more;
      floor = holds;
      log_round('a', r, text + "; holds " + std::to_string(holds));
    }
    st.committed = floor;
  }

  // --- d: an embedded writer on a small file system that fills ---
  // Each round leaves a random amount of room (a ballast file takes the
  // rest), then lets the writer run until the disk is full and it fails
  // (qs::write_failed), or kills it at a random moment; with the ballast
  // gone, every transaction it said committed must be there, and the
  // database must open.
  void run_disk_full(kind_stats& st) {
    qs_test::small_fs disk(qs_test::small_fs::kind::tmpfs, std::uint64_t{160} << 20);
    if (!disk.usable()) {
      std::printf("kind d skipped: %s\n", disk.why_not().c_str());
      return;
    }
    const std::string dir = work_ + "/d", db = disk.path() + "/db";
    fs::create_directories(dir);
    std::int64_t floor = 0;
    for (int r = 0; r < c_.rounds; ++r, ++st.rounds) {
      disk.drain();
      // The database grows every round: once it leaves less room than the
      // ballast may take, the disk grows, so that draining the ballast
      // always gives the check room again (with none, the open says to
      // make room, and recovery waits for it).
      if (disk.free_bytes() < (std::uint64_t{24} << 20)) disk.grow(std::uint64_t{64} << 20);
      disk.fill_to(static_cast<std::uint64_t>(uniform(0, 12 << 10)) << 10);
      const bool kill_early = chance(30);
      victim v = start_writer(dir, "writer", db, 0, choose_options(), "");
      int status = kill_early ? (sleep_ms(uniform(0, 700)), v.proc.wait(0)) : v.proc.wait(disk_full_wait_ms);
      std::string text;
      if (status == timed_out) {
        ++st.kills;
        ++st.how[kill_early ? "delay" : "never full"];
        text = kill_early ? "writer killed" : "writer killed (the disk did not fill)";
      } else {
        // Ended by itself: only by the full disk, saying so.
        const std::string err = v.proc.err();
        if (status != 1 || err.find("make room") == std::string::npos)
          throw round_failed("the writer ended with status " + std::to_string(status) +
                             " and not for a full disk: " + err);
        ++st.disk_full;
        text = "writer stopped by the full disk";
      }
      std::int64_t reported = std::max(floor, last_committed(v.proc.out()));
      disk.drain();
      std::int64_t holds = check(dir, db, {reported}, 1)[0];
      if (holds > reported) ++st.one_more;
      floor = holds;
      log_round('d', r, text + "; holds " + std::to_string(holds));
    }
    st.committed = floor;
  }

  // --- b: a writer through a page server ---
  void run_client_through_server(kind_stats& st) {
    const std::string dir = work_ + "/b";
    server_process server(dir);
    secret_ = server.secret();
    server.start();
    std::int64_t floor = 0;
    for (int r = 0; r < c_.rounds; ++r, ++st.rounds) {
      kill_choice k = choose_writer_kill(false);
      std::string url = chance(50) ? server.unix_url() : server.tcp_url();
      victim v = start_writer(dir, "writer", url, 0, choose_options(), k.pause);
      bool paused = kill_victim(v, k, "the writer");
      count_kill(st, k, paused);
      std::int64_t reported = std::max(floor, last_committed(v.proc.out()));
      std::int64_t holds = check(dir, server.unix_url(), {reported})[0];
      if (holds > reported) ++st.one_more;
      floor = holds;
      if (!server.running()) throw round_failed("the page server died: " + server.log());
      log_round('b', r, "writer killed " + k.describe() + "; holds " + std::to_string(holds));
    }
    st.committed = floor;
    server.terminate();
  }

  // --- c: the page server, under three writers ---
  void run_server(kind_stats& st) {
    constexpr int writers = 3;
    const std::string dir = work_ + "/c", go = dir + "/go";
    server_process server(dir);
    secret_ = server.secret();
    write_atomically(go, "0");
    kill_choice k = choose_kill(server_pauses, 8);
    server.start(k.pause);
    std::vector<victim> w;
    std::vector<std::int64_t> floors(writers, 0);
    const std::array<std::pair<int, int>, writers> options{{{16, 0}, {256, 1}, {16, 2}}};
    for (int p = 0; p < writers; ++p)
      w.push_back(start_writer(dir, "writer" + std::to_string(p), p == 1 ? server.tcp_url() : server.unix_url(), p,
                               options[static_cast<std::size_t>(p)], "", go));
    for (int r = 0; r < c_.rounds; ++r, ++st.rounds) {
      bool paused = false;
      if (!k.pause.empty()) paused = server.wait_paused(pause_wait_ms);
      else sleep_ms(k.delay_ms);
      server.kill9();
      count_kill(st, k, paused);
      std::string text = "server killed " + k.describe();
      // Every writer notices before the server comes back.
      for (int p = 0; p < writers; ++p) {
        for (int waited = 0; losses(w[static_cast<std::size_t>(p)].proc.out()) < r + 1; waited += 5) {
          if (!w[static_cast<std::size_t>(p)].proc.running())
            throw round_failed("writer " + std::to_string(p) + " ended: " + w[static_cast<std::size_t>(p)].proc.err() +
                               after_failure(server, dir, w, floors));
          if (waited > 120000) throw round_failed("writer " + std::to_string(p) + " never noticed the kill");
          sleep_ms(5);
        }
        floors[static_cast<std::size_t>(p)] =
            std::max(floors[static_cast<std::size_t>(p)], last_committed(w[static_cast<std::size_t>(p)].proc.out()));
      }
      if (chance(25)) {  // a server killed as it recovers
        process q =
            qs_pstest::spawn({QS_PAGESERVER, "--dir", dir + "/db", "--unix", dir + "/sock", "--tcp",
                              "127.0.0.1:" + std::to_string(server.port()), "--secret-file", server.secret_file()},
                             qs_pstest::logged(dir, "recovering"));
        kill_choice rk{"", uniform(0, 30)};
        sleep_ms(rk.delay_ms);
        q.kill9();
        ++st.recovery_kills;
        text += ", then again " + rk.describe();
      }
      // The check runs on a server with no pause point: when no writer has
      // created the database yet (the server was killed first), the
      // checker's open creates it, a commit that would stop at the pause
      // point with no one to kill the server. The writers wait for `go`
      // before they reconnect: the restart with the next round's pause
      // point is nothing to them.
      k = choose_kill(server_pauses, 8);
      server.start();
      std::vector<std::int64_t> holds = check(dir, server.unix_url(), floors);
      if (!k.pause.empty()) {
        server.kill9();
        server.start(k.pause);
      }
      for (int p = 0; p < writers; ++p) {
        if (holds[static_cast<std::size_t>(p)] > floors[static_cast<std::size_t>(p)]) ++st.one_more;
        floors[static_cast<std::size_t>(p)] = holds[static_cast<std::size_t>(p)];
      }
      write_atomically(go, std::to_string(r + 1));
      log_round('c', r,
                text + "; holds " + std::to_string(holds[0]) + " " + std::to_string(holds[1]) + " " +
                    std::to_string(holds[2]));
    }
    for (std::int64_t f : floors) st.committed += f;
    for (victim& v : w) v.proc.kill9();
    server.kill9();
  }

  // --- e: the sites of a replication group, under three writers ---
  // Three sites (--repl-ack quorum) and three writers through the
  // three-site URL, which follow the master (a lost connection or an
  // unknown commit is said, and the writer goes on at once). Each round
  // kills a site with SIGKILL after a random delay, the master in three
  // rounds of four and a replica in the rest, in a quarter of them kills it
  // again as it recovers, restarts it (it rejoins and catches up), and
  // checks through the group, while the writers go on: every commit a
  // writer reported before the check is at the master, nothing partial.
  // At the end the writers are killed and the sites stopped, and each
  // site's directory is checked as an embedded database: each holds every
  // reported commit, and all hold the same.
  void run_replicated(kind_stats& st) {
    constexpr int writers = 3;
    const std::string dir = work_ + "/e", go = dir + "/go", hold = dir + "/hold";
    fs::create_directories(dir);
    qs_pstest::replication_group g(dir);
    for (int i = 0; i < 3; ++i) g.add();
    secret_ = g.sites[0]->secret();
    g.start(0);  // creates the group
    if (g.wait_master() != 0) throw round_failed("the first site did not become the master:\n" + g.logs());
    g.start(1);
    g.start(2);
    write_atomically(go, "1000000000");  // the group serves on: a writer never waits
    const std::string url = g.url(3);
    std::vector<victim> w;
    std::vector<std::int64_t> floors(writers, 0);
    const std::array<std::pair<int, int>, writers> options{{{16, 0}, {256, 1}, {16, 2}}};
    for (int p = 0; p < writers; ++p)
      w.push_back(
          start_writer(dir, "writer" + std::to_string(p), url, p, options[static_cast<std::size_t>(p)], "", go, hold));
    auto writers_alive = [&](const std::string& when) {
      for (int p = 0; p < writers; ++p)
        if (!w[static_cast<std::size_t>(p)].proc.running())
          throw round_failed("writer " + std::to_string(p) + " ended " + when + ": " +
                             w[static_cast<std::size_t>(p)].proc.err() + "\n" + g.logs());
    };
    for (int r = 0; r < c_.rounds; ++r, ++st.rounds) {
      kill_choice k{"", uniform(100, 1500)};
      sleep_ms(k.delay_ms);
      const int m = g.wait_master();
      if (m < 0) throw round_failed("no site is the master:\n" + g.logs());
      const bool master = chance(75);
      const int site = master ? m : (m + uniform(1, 2)) % 3;
      g.sites[static_cast<std::size_t>(site)]->kill9();
      ++st.kills;
      ++st.how[master ? "master" : "replica"];
      std::string text = std::string(master ? "the master" : "a replica") + " killed " + k.describe();
      if (chance(25)) {  // killed again as it recovers
        std::vector<std::string> argv{QS_PAGESERVER,
                                      "--dir",
                                      g.db(site),
                                      "--tcp",
                                      "127.0.0.1:" + std::to_string(g.tcp_ports[static_cast<std::size_t>(site)]),
                                      "--secret-file",
                                      g.sites[static_cast<std::size_t>(site)]->secret_file()};
        for (const std::string& o : g.options(site)) argv.push_back(o);
        process q = qs_pstest::spawn(argv, qs_pstest::logged(dir, "recovering"));
        kill_choice rk{"", uniform(0, 30)};
        sleep_ms(rk.delay_ms);
        q.kill9();
        ++st.recovery_kills;
        text += ", then again " + rk.describe();
      }
      try {
        g.start(site);  // rejoins, and is ready once it has caught up
      } catch (const std::exception& e) {
        throw round_failed(std::string("the killed site did not come back: ") + e.what() + "\n" + g.logs());
      }
      if (g.wait_master() < 0) throw round_failed("no site is the master after the restart:\n" + g.logs());
      // The writers stop between transactions for the check (it reads a
      // database nobody writes); each may have committed once more than it
      // said (a commit whose outcome it could not learn).
      write_atomically(hold, std::to_string(r + 1));
      const std::string held = "held " + std::to_string(r + 1);
      for (int p = 0; p < writers; ++p)
        for (int waited = 0; w[static_cast<std::size_t>(p)].proc.out().find(held) == std::string::npos; waited += 5) {
          writers_alive("during the round");
          if (waited > 120000)
            throw round_failed("writer " + std::to_string(p) + " did not stop for the check within 120 s:\n" +
                               g.logs());
          sleep_ms(5);
        }
      for (int p = 0; p < writers; ++p)
        floors[static_cast<std::size_t>(p)] =
            std::max(floors[static_cast<std::size_t>(p)], last_committed(w[static_cast<std::size_t>(p)].proc.out()));
      std::vector<std::int64_t> holds = check(dir, url, floors);
      for (int p = 0; p < writers; ++p) {
        if (holds[static_cast<std::size_t>(p)] > floors[static_cast<std::size_t>(p)]) ++st.one_more;
        floors[static_cast<std::size_t>(p)] = holds[static_cast<std::size_t>(p)];
      }
      fs::remove(hold);
      log_round('e', r,
                text + "; holds " + std::to_string(holds[0]) + " " + std::to_string(holds[1]) + " " +
                    std::to_string(holds[2]));
    }
    for (int p = 0; p < writers; ++p) {
      w[static_cast<std::size_t>(p)].proc.kill9();
      floors[static_cast<std::size_t>(p)] =
          std::max(floors[static_cast<std::size_t>(p)], last_committed(w[static_cast<std::size_t>(p)].proc.out()));
    }
    sleep_ms(500);  // a commit a killed writer sent ends at the master
    // Every site applies what the master has; then the replicas stop, and
    // the master last.
    std::vector<std::int64_t> at_master = check(dir, url, floors, 1);
    sleep_ms(1500);
    const int m = g.master();
    for (int i = 0; i < 3; ++i)
      if (i != m && g.sites[static_cast<std::size_t>(i)]->terminate() != 0)
        throw round_failed("site " + std::to_string(i) + " did not stop cleanly:\n" + g.logs());
    if (m >= 0 && g.sites[static_cast<std::size_t>(m)]->terminate() != 0)
      throw round_failed("the master did not stop cleanly:\n" + g.logs());
    for (int i = 0; i < 3; ++i) {
      std::vector<std::int64_t> holds = check(dir, g.db(i), floors, 1);
      if (holds != at_master)
        throw round_failed("site " + std::to_string(i) + " holds " + std::to_string(holds[0]) + " " +
                           std::to_string(holds[1]) + " " + std::to_string(holds[2]) + ", the master held " +
                           std::to_string(at_master[0]) + " " + std::to_string(at_master[1]) + " " +
                           std::to_string(at_master[2]));
    }
    for (std::int64_t f : at_master) st.committed += f;
  }

  void report(char kind, const kind_stats& st) {
    static const std::map<char, const char*> names{{'a', "embedded writer"},
                                                   {'b', "writer through qs-pageserver"},
                                                   {'c', "qs-pageserver under 3 writers"},
                                                   {'d', "embedded writer on a disk that fills"},
                                                   {'e', "sites of a replication group under 3 writers"}};
    auto name = names.find(kind);
    std::printf("kind %c (%s): %d rounds in %.1f s, %d kills (", kind, name == names.end() ? "?" : name->second,
                st.rounds, st.seconds, st.kills);
    bool first = true;
    for (auto& [how, n] : st.how) {
      std::printf("%s%s %d", first ? "" : ", ", how.c_str(), n);
      first = false;
    }
    std::printf(
        ") and %d more while recovering; %d writers stopped by a full disk; %lld transactions committed and "
        "checked; %d rounds held one more than reported; %d pause points not reached\n",
        st.recovery_kills, st.disk_full, static_cast<long long>(st.committed), st.one_more, st.pauses_missed);
    std::fflush(stdout);
  }

  const torture_config& c_;
  std::mt19937_64 rng_;
  std::string work_;
  std::string secret_;
  std::map<char, kind_stats> stats_;
};

}  // namespace

int run_torture(const torture_config& c) { return torture(c).run(); }

}  // namespace qs_torture
