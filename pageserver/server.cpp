// qs-pageserver's listeners, accept loop and connection threads (server.hpp).
#include "server.hpp"

#include "log.hpp"
#include "session.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace qs::server {
namespace {

std::string peer_name(int fd, bool tcp) {
  if (!tcp) return "unix socket";
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) return "tcp peer";
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (a.ss_family == AF_INET) {
    auto* s = reinterpret_cast<sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
    port = ntohs(s->sin_port);
  } else if (a.ss_family == AF_INET6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
    port = ntohs(s->sin6_port);
  }
  return std::string("tcp ") + host + ":" + std::to_string(port);
}

unsigned bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

void set_receive_timeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

server::server(const server_options& o) : o_(o) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw error(std::string("pipe: ") + std::strerror(errno));
  // The same lock file as the embedded store's: no embedded client opens
  // the directory while it is served, and no second server does.
  std::error_code ec;
  std::filesystem::create_directories(o_.dir, ec);
  std::string lock_path = o_.dir + "/qs.lock";
  lock_fd_ = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    throw database_in_use("database " + o_.dir + " is open in another process (" + lock_path + " is locked)");
  log_line(0, "opening the environment in " + o_.dir + " (running recovery)");
  env_ = std::make_unique<detail::bdb_env>(o_.dir, o_.cache_bytes);
  numbers_ = std::make_unique<page_numbers>(*env_);
  outcomes_ = std::make_unique<commit_outcomes>(*env_, o_.outcome_window_seconds);
  if (o_.unix_path) {
    unix_fd_ = wire::listen_unix(*o_.unix_path);
    log_line(0, "listening on unix socket " + *o_.unix_path);
  }
  if (o_.tcp) {
    tcp_fd_ = wire::listen_tcp(*o_.tcp);
    log_line(0, "listening on tcp " + o_.tcp->host + ":" + std::to_string(bound_port(tcp_fd_)) +
                    " (clients must present the shared secret)");
  }
  if (!o_.ready_file.empty()) {
    std::string tmp = o_.ready_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%u\n", tcp_fd_ >= 0 ? bound_port(tcp_fd_) : 0u);
      std::fclose(f);
      std::rename(tmp.c_str(), o_.ready_file.c_str());
    }
  }
}

server::~server() {
  reap(true);
  if (unix_fd_ >= 0) {
    ::close(unix_fd_);
    ::unlink(o_.unix_path->c_str());
  }
  if (tcp_fd_ >= 0) ::close(tcp_fd_);
  numbers_.reset();
  outcomes_.reset();
  env_.reset();  // checkpoints and closes
  ::close(wake_[0]);
  ::close(wake_[1]);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  log_line(0, "stopped");
}

void server::stop() noexcept {
  char b = 's';
  ssize_t n = ::write(wake_[1], &b, 1);
  (void)n;
}

int server::run() {
  for (;;) {
    pollfd fds[3];
    int n = 0;
    fds[n++] = {wake_[0], POLLIN, 0};
    int unix_at = -1, tcp_at = -1;
    if (unix_fd_ >= 0) {
      unix_at = n;
      fds[n++] = {unix_fd_, POLLIN, 0};
    }
    if (tcp_fd_ >= 0) {
      tcp_at = n;
      fds[n++] = {tcp_fd_, POLLIN, 0};
    }
    int rc = ::poll(fds, static_cast<nfds_t>(n), 1000);
    if (rc < 0) {
      if (errno == EINTR) continue;
      log_line(0, std::string("error: poll: ") + std::strerror(errno));
      return 1;
    }
    reap(false);
    if (fds[0].revents) {
      log_line(0, "stopping (signal)");
      return 0;
    }
    if (unix_at >= 0 && fds[unix_at].revents) accept_one(unix_fd_, false);
    if (tcp_at >= 0 && fds[tcp_at].revents) accept_one(tcp_fd_, true);
  }
}

void server::accept_one(int listen_fd, bool tcp) {
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
      log_line(0, std::string("error: accept: ") + std::strerror(errno));
    return;
  }
  std::lock_guard<std::mutex> g(clients_mutex_);
  std::uint64_t id = next_id_++;
  if (clients_.size() >= o_.max_connections) {
    log_line(id, "error: refused " + peer_name(fd, tcp) + ": " + std::to_string(o_.max_connections) +
                     " connections are open already");
    ::close(fd);
    return;
  }
  if (tcp) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof one);
  }
  auto c = std::make_unique<client>();
  c->id = id;
  c->conn = std::make_unique<wire::connection>(fd);
  c->tcp = tcp;
  log_line(id, "connection from " + peer_name(fd, tcp));
  client* raw = c.get();
  clients_.push_back(std::move(c));
  raw->thread = std::thread([this, raw] { serve(raw); });
}

void server::serve(client* c) {
  session s({env_.get(), numbers_.get(), outcomes_.get(), c->tcp, o_.secret}, c->id);
  std::vector<std::byte> buf;
  std::string reason = "closed by the client";
  // A client has a little time to say hello; after that it may think as long
  // as it likes.
  set_receive_timeout(c->conn->fd(), 10);
  bool greeted = false;
  try {
    for (;;) {
      bool got;
      try {
        // Before hello, only a small frame: an unauthenticated peer cannot
        // make the server allocate a large buffer.
        got = c->conn->receive(buf, greeted ? wire::max_message : 4096);
      } catch (const wire::protocol_error& e) {
        // An oversized or empty frame: answer, then close.
        log_line(c->id, std::string("error: protocol: ") + e.what() + "; closing the connection");
        wire::writer out;
        std::string text = std::string("protocol error: ") + e.what();
        wire::encode(wire::error_response{wire::error_code::protocol, text}, out);
        try {
          c->conn->send(out.finish());
        } catch (...) {
        }
        reason = "protocol error";
        break;
      }
      if (!got) break;
      wire::writer out;
      bool close = false;
      s.handle(buf, out, close);
      c->conn->send(out.finish());
      if (!greeted && !close) {
        greeted = true;
        set_receive_timeout(c->conn->fd(), 0);
      }
      if (close) {
        reason = "closed by the server";
        break;
      }
    }
  } catch (const std::exception& e) {
    log_line(c->id, std::string("error: ") + e.what());
    reason = "connection failed";
  }
  if (s.in_transaction()) reason += "; its open transaction is aborted";
  log_line(c->id, "connection " + reason);
  c->conn->shutdown();  // the peer sees the end now; the descriptor closes when the thread is reaped
  c->done = true;
}

void server::reap(bool all) {
  std::list<std::unique_ptr<client>> finished;
  {
    std::lock_guard<std::mutex> g(clients_mutex_);
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (all && !(*it)->done) (*it)->conn->shutdown();
      if (all || (*it)->done) {
        finished.push_back(std::move(*it));
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : finished)
    if (c->thread.joinable()) c->thread.join();
}

}  // namespace qs::server
