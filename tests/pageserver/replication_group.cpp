// A replication group for tests (replication_group.hpp).
#include "replication_group.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace qs_pstest {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("free_port: cannot bind a loopback socket");
  }
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

void replication_group::add() {
  const int i = static_cast<int>(sites.size());
  sites.push_back(std::make_unique<server_process>(dir + "/site" + std::to_string(i)));
  // Each site its own port: the kernel may hand out a port it gave a
  // site before, since nothing listens on it until that site starts.
  int port = free_port();
  while (std::find(repl_ports.begin(), repl_ports.end(), port) != repl_ports.end()) port = free_port();
  repl_ports.push_back(port);
  tcp_ports.push_back(0);
}

std::vector<std::string> replication_group::options(int i) const {
  std::vector<std::string> o{"--repl", "127.0.0.1:" + std::to_string(repl_ports[static_cast<std::size_t>(i)])};
  for (std::size_t j = 0; j < sites.size(); ++j)
    if (static_cast<int>(j) != i) o.insert(o.end(), {"--repl-peer", "127.0.0.1:" + std::to_string(repl_ports[j])});
  o.insert(o.end(), extra.begin(), extra.end());
  return o;
}

void replication_group::start(int i) {
  configure(i);
  // Ready once caught up: a site restarted after a kill may first wait for
  // the others' election (seconds; more under a sanitizer beside other
  // tests).
  try {
    sites[static_cast<std::size_t>(i)]->start("", {}, 60000);
  } catch (const std::exception& e) {
    // Why it never caught up is in the other sites' logs (an election).
    throw std::runtime_error(std::string(e.what()) + "\nthe group's sites:\n" + logs());
  }
  tcp_ports[static_cast<std::size_t>(i)] = sites[static_cast<std::size_t>(i)]->port();
}

std::string replication_group::url(int n) const {
  std::string u = "qs://";
  for (int i = 0; i < n; ++i)
    u += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(tcp_ports[static_cast<std::size_t>(i)]);
  return u;
}

int replication_group::master() const {
  for (std::size_t i = 0; i < sites.size(); ++i) {
    if (!sites[i]->running()) continue;
    const std::string log = sites[i]->log();
    auto m = log.rfind("replication: this site is the master");
    auto r = log.rfind("replication: this site is a replica");
    auto started = log.rfind("opening the environment");
    if (m != std::string::npos && m > started && (r == std::string::npos || r < m)) return static_cast<int>(i);
  }
  return -1;
}

int replication_group::wait_master(int timeout_ms) const {
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    int m = master();
    if (m >= 0) return m;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

std::string replication_group::logs() const {
  std::string out;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const std::string log = sites[i]->log();
    out +=
        "--- site " + std::to_string(i) + ":\n" + (log.size() <= 3000 ? log : "[...]" + log.substr(log.size() - 3000));
  }
  return out;
}

}  // namespace qs_pstest
