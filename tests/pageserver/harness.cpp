// Server and client processes for the page-server tests (harness.hpp).
#include "harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace qs_pstest {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

int process::wait(int timeout_ms) {
  if (pid <= 0) return timed_out;
  for (int waited = 0;; waited += 5) {
    int st = 0;
    int r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      pid = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    }
    if (waited >= timeout_ms) {
      kill9();
      return timed_out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void process::kill9() {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int st;
  ::waitpid(pid, &st, 0);
  pid = -1;
}

bool process::running() const {
  if (pid <= 0) return false;
  // An exited child that is not reaped yet still takes signals: ask waitid,
  // leaving it to wait() to reap.
  siginfo_t si{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return si.si_pid != pid;
}
std::string process::out() const { return slurp(out_path); }
std::string process::err() const { return slurp(err_path); }
process::~process() { kill9(); }

process spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& dir,
              const std::string& tag, int pause_fd) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "QS_PAUSE_", 9) != 0 && std::strncmp(*e, "QS_SECRET=", 10) != 0) env_strings.push_back(*e);
  for (auto& e : env) env_strings.push_back(e);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> copy(argv);
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  process p;
  p.out_path = dir + "/" + tag + ".out";
  p.err_path = dir + "/" + tag + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, p.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, p.err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (pause_fd >= 0) posix_spawn_file_actions_adddup2(&fa, pause_fd, 100);
  int rc = posix_spawn(&p.pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  return p;
}

server_process::server_process(const std::string& dir) : dir_(dir) {
  std::filesystem::create_directories(dir);
  std::string path = secret_file();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path);
  std::string line = secret_ + "\n";
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) throw std::runtime_error("write");
  ::close(fd);
}

server_process::~server_process() {
  proc_.kill9();
  if (pause_read_ >= 0) ::close(pause_read_);
}

void server_process::start(const std::string& pause_at, const std::vector<std::string>& args) {
  std::string ready = dir_ + "/ready";
  std::filesystem::remove(ready);
  std::vector<std::string> env;
  int fds[2] = {-1, -1};
  if (!pause_at.empty()) {
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    env.push_back("QS_PAUSE_AT=" + pause_at);
    env.push_back("QS_PAUSE_FD=100");
  }
  // Reuse the port of an earlier start, so that clients find the server again.
  std::string tcp = "127.0.0.1:" + std::to_string(port_);
  std::vector<std::string> argv{QS_PAGESERVER, "--dir", dir_ + "/db", "--unix", dir_ + "/sock", "--tcp", tcp};
  argv.insert(argv.end(), {"--secret-file", secret_file(), "--ready-file", ready});
  argv.insert(argv.end(), options_.begin(), options_.end());
  argv.insert(argv.end(), args.begin(), args.end());
  proc_ = spawn(argv, env, dir_, "server", fds[1]);
  ++starts_;
  if (fds[1] >= 0) {
    ::close(fds[1]);
    if (pause_read_ >= 0) ::close(pause_read_);
    pause_read_ = fds[0];
  }
  for (int i = 0; i < 1500; ++i) {  // 15 s at most
    if (std::filesystem::exists(ready)) {
      std::ifstream in(ready);
      in >> port_;
      return;
    }
    if (!proc_.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("qs-pageserver did not start: " + proc_.err());
}

bool server_process::wait_paused(int timeout_ms) {
  if (pause_read_ < 0) return false;
  pollfd p{pause_read_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  char b;
  return ::read(pause_read_, &b, 1) == 1;
}

void server_process::kill9() { proc_.kill9(); }

void server_process::signal(int sig) {
  if (proc_.pid > 0) ::kill(proc_.pid, sig);
}

int server_process::terminate() {
  if (proc_.pid <= 0) return timed_out;
  ::kill(proc_.pid, SIGTERM);
  return proc_.wait(15000);
}

process worker(const server_process& s, const std::string& url, const std::vector<std::string>& args,
               const std::string& tag) {
  std::vector<std::string> argv{QS_PS_WORKER, url};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string dir = std::filesystem::path(s.secret_file()).parent_path();
  return spawn(argv, {"QS_SECRET=" + s.secret()}, dir, tag);
}

int run_worker(const server_process& s, const std::string& url, const std::vector<std::string>& args,
               const std::string& tag, int timeout_ms) {
  process p = worker(s, url, args, tag);
  return p.wait(timeout_ms);
}

bool wait_for_file(const std::string& path) {
  for (int i = 0; i < 2000 && !std::filesystem::exists(path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return std::filesystem::exists(path);
}

}  // namespace qs_pstest
