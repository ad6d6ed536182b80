// The tests' child processes (process.hpp).
#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace qs_test {
namespace {

int status_of(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st); }

}  // namespace

process::process(process&& o) noexcept
    : pid(o.pid), out_path(std::move(o.out_path)), err_path(std::move(o.err_path)), ended_(o.ended_) {
  o.pid = -1;
}

process& process::operator=(process&& o) noexcept {
  if (this != &o) {
    kill9();
    pid = o.pid;
    out_path = std::move(o.out_path);
    err_path = std::move(o.err_path);
    ended_ = o.ended_;
    o.pid = -1;
  }
  return *this;
}

process::~process() { kill9(); }

int process::wait(int timeout_ms) {
  if (pid <= 0) return ended_ ? *ended_ : timed_out;
  for (int waited = 0;; waited += 5) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      pid = -1;
      ended_ = status_of(st);
      return *ended_;
    }
    if (waited >= timeout_ms) {
      kill9();
      ended_ = timed_out;
      return timed_out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void process::kill9() {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  pid = -1;
  ended_ = status_of(st);
}

void process::signal(int sig) {
  if (pid > 0) ::kill(pid, sig);
}

bool process::running() const {
  if (pid <= 0) return false;
  // An exited child that is not reaped yet still takes signals: ask waitid,
  // leaving it to wait() to reap.
  siginfo_t si{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return si.si_pid != pid;
}

std::string process::out() const { return out_path.empty() ? std::string() : read_file(out_path); }
std::string process::err() const { return err_path.empty() ? std::string() : read_file(err_path); }

process spawn(const std::vector<std::string>& argv, const spawn_options& o) {
  if (argv.empty()) throw std::runtime_error("spawn: no program");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "QS_PAUSE_", 9) != 0 && std::strncmp(*e, "QS_SECRET=", 10) != 0) env_strings.push_back(*e);
  env_strings.insert(env_strings.end(), o.env.begin(), o.env.end());
  // The child reports that it has paused on descriptor 100.
  constexpr int child_pause_fd = 100;
  int pause_pipe[2] = {-1, -1};
  int pause_fd = o.pause_fd;
  if (!o.pause_at.empty()) {
    if (::pipe2(pause_pipe, O_CLOEXEC) != 0) throw std::runtime_error("spawn: pipe failed");
    pause_fd = pause_pipe[1];
    env_strings.push_back("QS_PAUSE_AT=" + o.pause_at);
    env_strings.push_back("QS_PAUSE_FD=" + std::to_string(child_pause_fd));
  }
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> copy(argv);
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);

  process p;
  p.out_path = o.out_path;
  p.err_path = o.err_path;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!o.out_path.empty())
    posix_spawn_file_actions_addopen(&fa, 1, o.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!o.err_path.empty())
    posix_spawn_file_actions_addopen(&fa, 2, o.err_path.c_str(),
                                     O_WRONLY | O_CREAT | (o.append_err ? O_APPEND : O_TRUNC), 0600);
  if (pause_fd >= 0) posix_spawn_file_actions_adddup2(&fa, pause_fd, child_pause_fd);  // clears close-on-exec
  int rc = posix_spawn(&p.pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (pause_pipe[1] >= 0) ::close(pause_pipe[1]);
  if (rc != 0) {
    if (pause_pipe[0] >= 0) ::close(pause_pipe[0]);
    p.pid = -1;
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  if (pause_pipe[0] >= 0) {
    char b;
    ssize_t n = ::read(pause_pipe[0], &b, 1);  // returns when the child pauses, or 0 when it exits
    static_cast<void>(n);
    ::close(pause_pipe[0]);
  }
  return p;
}

forked run_forked(const std::function<void()>& f) {
  int err[2];
  if (::pipe(err) != 0) throw std::runtime_error("run_forked: pipe failed");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("run_forked: fork failed");
  if (pid == 0) {
    ::dup2(err[1], 2);
    ::close(err[0]);
    ::close(err[1]);
    f();
    ::_exit(0);
  }
  ::close(err[1]);
  forked r{0, {}};
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) r.err.append(buf, static_cast<std::size_t>(n));
  ::close(err[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.status = status_of(st);
  return r;
}

std::string read_file(const std::string& path) {
  std::string s;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    std::fclose(f);
  }
  return s;
}

}  // namespace qs_test
