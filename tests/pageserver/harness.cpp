// Server and client processes for the page-server tests (harness.hpp).
#include "harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace qs_pstest {
spawn_options logged(const std::string& dir, const std::string& tag, std::vector<std::string> env) {
  spawn_options o;
  o.env = std::move(env);
  o.out_path = dir + "/" + tag + ".out";
  o.err_path = dir + "/" + tag + ".err";
  o.append_err = true;
  return o;
}

server_process::server_process(const std::string& dir) : dir_(dir) {
  std::filesystem::create_directories(dir);
  set_secret(secret_);
}

void server_process::set_secret(const std::string& secret) {
  secret_ = secret;
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

void server_process::start(const std::string& pause_at, const std::vector<std::string>& args, int ready_ms) {
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
  spawn_options o = logged(dir_, "server", env);
  o.pause_fd = fds[1];
  proc_ = spawn(argv, o);
  ++starts_;
  if (fds[1] >= 0) {
    ::close(fds[1]);
    if (pause_read_ >= 0) ::close(pause_read_);
    pause_read_ = fds[0];
  }
  for (int waited = 0; waited < ready_ms; waited += 10) {
    if (std::filesystem::exists(ready)) {
      std::ifstream in(ready);
      in >> port_;
      return;
    }
    if (!proc_.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("qs-pageserver was not ready within " + std::to_string(ready_ms) + " ms: " + proc_.err());
}

bool server_process::wait_paused(int timeout_ms) {
  if (pause_read_ < 0) return false;
  pollfd p{pause_read_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  char b;
  return ::read(pause_read_, &b, 1) == 1;
}

void server_process::kill9() { proc_.kill9(); }

void server_process::signal(int sig) { proc_.signal(sig); }

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
  return spawn(argv, logged(dir, tag, {"QS_SECRET=" + s.secret()}));
}

int run_worker(const server_process& s, const std::string& url, const std::vector<std::string>& args,
               const std::string& tag, int timeout_ms) {
  process p = worker(s, url, args, tag);
  return p.wait(timeout_ms);
}

qs::options client_options(const server_process& s) {
  qs::options o = qs_test::small_options(64, qs_test::commits::durable);
  o.server_secret = s.secret();
  return o;
}

bool wait_for_file(const std::string& path) {
  for (int i = 0; i < 2000 && !std::filesystem::exists(path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return std::filesystem::exists(path);
}

bool logs_within(const server_process& s, const std::string& text, int ms) {
  for (int waited = 0; waited < ms; waited += 50) {
    if (s.log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace qs_pstest
