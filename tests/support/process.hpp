// process.hpp: the child processes of the tests: workers, servers and
// programs started with spawn(), and code run in a forked child with
// run_forked(). One spawner for every test program, the crash tests', the
// page-server tests' and the torture's.
//
// Invariants:
//  * a process is killed (SIGKILL) and reaped when its object goes out of
//    scope, whatever the test's outcome;
//  * every wait is bounded: a child that outlives its time is killed and
//    reported as status `timed_out`;
//  * the test's own QS_PAUSE_* and QS_SECRET settings never reach a child;
//    a child gets them only through spawn_options.
//
// Thread-safety: a process object belongs to one thread; spawn may be
// called from several.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qs_test {

// What wait() returns for a child killed because it outlived its time.
constexpr int timed_out = -1000;
// How long wait() waits unless told: longer than any test's child runs.
constexpr int default_wait_ms = 300000;

class process {
 public:
  process() = default;
  process(process&& o) noexcept;
  process& operator=(process&& o) noexcept;
  process(const process&) = delete;
  process& operator=(const process&) = delete;
  ~process();

  // Waits at most timeout_ms; returns the exit status, -signal, or timed_out
  // (after killing the process). Once the child is reaped, returns how it
  // ended again.
  int wait(int timeout_ms = default_wait_ms);
  // SIGKILL, and reaps it: wait() then returns -SIGKILL.
  void kill9();
  // Sends it `sig`, while it runs.
  void signal(int sig);
  // False once it has exited, reaped or not.
  bool running() const;
  // What it wrote to the files spawn_options named (empty if none).
  std::string out() const;
  std::string err() const;

  int pid = -1;  // -1 once reaped
  std::string out_path, err_path;

 private:
  std::optional<int> ended_;
};

struct spawn_options {
  // More environment entries, "NAME=value".
  std::vector<std::string> env;
  // Standard output and error go to these files (else they are the test's).
  std::string out_path, err_path;
  // Whether err_path is appended to (a server restarted keeps one log),
  // rather than truncated.
  bool append_err = false;
  // The child stops at this pause point (QS_PAUSE_AT), and spawn returns
  // once it has, or once it has exited.
  std::string pause_at;
  // Or: the caller's descriptor that becomes the child's descriptor 100,
  // on which a pausing child reports (QS_PAUSE_FD is the caller's to set).
  int pause_fd = -1;
};

// Starts argv[0] (a path) with argv; throws std::runtime_error if it cannot.
process spawn(const std::vector<std::string>& argv, const spawn_options& o = {});

// Runs f in a forked child, its standard error captured, and returns how it
// ended: the exit status (0 once f returns) or -signal, and what it wrote
// to standard error.
struct forked {
  int status;
  std::string err;
};
forked run_forked(const std::function<void()>& f);

// The whole content of a file (empty when it cannot be read).
std::string read_file(const std::string& path);

}  // namespace qs_test
