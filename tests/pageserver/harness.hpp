// harness.hpp: real qs-pageserver processes and client processes for the
// page-server tests.
//
// A server_process runs qs-pageserver on a Unix socket and a loopback TCP port
// (a free one, read from --ready-file) in a directory of a test_dir. It is
// killed when the object goes out of scope, whatever the test's outcome.
// Every wait is bounded; a child that outlives its time is killed and
// reported as status `timed_out`.
#pragma once

#include <string>
#include <vector>

namespace qs_pstest {

constexpr int timed_out = -1000;

struct process {
  process() = default;
  process(process&& o) noexcept : pid(o.pid), out_path(std::move(o.out_path)), err_path(std::move(o.err_path)) {
    o.pid = -1;
  }
  process& operator=(process&& o) noexcept {
    if (this != &o) {
      kill9();
      pid = o.pid;
      out_path = std::move(o.out_path);
      err_path = std::move(o.err_path);
      o.pid = -1;
    }
    return *this;
  }
  process(const process&) = delete;
  int pid = -1;
  std::string out_path, err_path;
  // Waits at most timeout_ms; returns the exit status, -signal, or timed_out
  // (after killing the process).
  int wait(int timeout_ms);
  void kill9();
  std::string out() const;
  std::string err() const;
  bool running() const;  // false once it has exited, reaped or not
  ~process();
};

// Starts `argv` with extra environment entries; stdout and stderr go to files
// under `dir`. With pause_fd >= 0 that descriptor is the child's descriptor 100.
process spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& dir,
              const std::string& tag, int pause_fd = -1);

class server_process {
 public:
  // dir: a directory of its own (database in dir/db, socket dir/sock).
  explicit server_process(const std::string& dir);
  ~server_process();
  // Starts the server and waits until it listens. With pause_at set, the
  // server stops at that pause point; wait_paused() returns once it has.
  // `args` are more options for this start.
  void start(const std::string& pause_at = "", const std::vector<std::string>& args = {});
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

// Runs the client worker (qs_ps_worker URL args...) with QS_SECRET set.
// Waits up to 20 s for a file a worker creates; whether it came.
bool wait_for_file(const std::string& path);
process worker(const server_process& s, const std::string& url, const std::vector<std::string>& args,
               const std::string& tag);
// Runs a worker to the end (at most timeout_ms) and returns its status.
int run_worker(const server_process& s, const std::string& url, const std::vector<std::string>& args,
               const std::string& tag, int timeout_ms = 60000);

}  // namespace qs_pstest
