// harness.hpp: real qs-pageserver processes and client processes for the
// page-server tests.
//
// A server_process runs qs-pageserver on a Unix socket and a loopback TCP port
// (a free one, read from --ready-file) in a directory of a test_dir. It is
// killed when the object goes out of scope, whatever the test's outcome.
// The processes are process.hpp's: every wait is bounded, and a child that
// outlives its time is killed and reported as status `timed_out`.
#pragma once

#include "process.hpp"
#include "temp_dir.hpp"
#include "test_options.hpp"

#include <string>
#include <vector>

namespace qs_pstest {

using qs_test::process;
using qs_test::spawn;
using qs_test::spawn_options;
using qs_test::timed_out;

// Options that send a child's output to files under `dir` named by `tag`
// (tag.out, and tag.err appended to), with extra environment entries.
spawn_options logged(const std::string& dir, const std::string& tag, std::vector<std::string> env = {});

class server_process {
 public:
  // dir: a directory of its own (database in dir/db, socket dir/sock).
  explicit server_process(const std::string& dir);
  ~server_process();
  // Starts the server and waits until it listens. With pause_at set, the
  // server stops at that pause point; wait_paused() returns once it has.
  // `args` are more options for this start. `ready_ms`: how long it may
  // take to be ready (a replication site is ready once it has caught up
  // with its group, which may first have to elect a master).
  void start(const std::string& pause_at = "", const std::vector<std::string>& args = {}, int ready_ms = 15000);
  // Options added to the command line of every later start (limits, say).
  void set_options(std::vector<std::string> options) { options_ = std::move(options); }
  bool wait_paused(int timeout_ms);
  void kill9();
  // SIGTERM, then the exit status.
  int terminate();
  // Sends the server `sig` (SIGUSR1: it logs its commit counters).
  void signal(int sig);
  bool running() const { return proc_.running(); }
  std::string unix_url() const { return "qs+unix://" + dir_ + "/sock"; }
  std::string tcp_url() const { return "qs://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  const std::string& secret() const { return secret_; }
  // Another secret for this server's later starts (its file rewritten).
  void set_secret(const std::string& secret);
  std::string secret_file() const { return dir_ + "/secret"; }
  std::string log() const { return proc_.err(); }

 private:
  std::string dir_;
  std::string secret_ = "s3cret-for-tests";
  int port_ = 0;
  int pause_read_ = -1;
  int starts_ = 0;
  std::vector<std::string> options_;
  process proc_;
};

// How a test opens a database served by s (test_options.hpp): a pool of 64
// pages, durable commits, the server's secret.
qs::options client_options(const server_process& s);

// The page-server tests' fixture (TEST_CASE_METHOD): a test directory, and
// a qs-pageserver started in its folder s.
struct server_fixture {
  qs_test::temp_dir dir;
  server_process s{dir.sub("s")};
  server_fixture() { s.start(); }
};

// Runs the client worker (qs_ps_worker URL args...) with QS_SECRET set.
// Waits up to 20 s for a file a worker creates; whether it came.
bool wait_for_file(const std::string& path);
// Whether `s`'s log says `text` within `ms`.
bool logs_within(const server_process& s, const std::string& text, int ms = 15000);
process worker(const server_process& s, const std::string& url, const std::vector<std::string>& args,
               const std::string& tag);
// Runs a worker to the end (at most timeout_ms) and returns its status.
int run_worker(const server_process& s, const std::string& url, const std::vector<std::string>& args,
               const std::string& tag, int timeout_ms = 60000);

}  // namespace qs_pstest
