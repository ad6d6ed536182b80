// A loopback proxy that loses commits or their answers on demand (proxy.hpp).
#include "proxy.hpp"

#include <qs/wire/connection.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <list>
#include <stdexcept>
#include <vector>

namespace qs_pstest {
namespace {

// One client connection and its connection to the server.
struct link {
  int client = -1, server = -1;
  std::string from_client, from_server;  // bytes read, not yet forwarded
  std::deque<std::uint8_t> asked;        // types of the requests waiting for an answer
  bool open = true;
  void close() {
    if (!open) return;
    ::shutdown(client, SHUT_RDWR);
    ::shutdown(server, SHUT_RDWR);
    ::close(client);
    ::close(server);
    open = false;
  }
};

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Appends what fd has to `buf`; false at the end of the stream or on an error.
bool read_some(int fd, std::string& buf) {
  char tmp[65536];
  for (;;) {
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
    return true;
  }
}

// The first whole frame of buf (length prefix and body), or an empty view.
std::string_view whole_frame(const std::string& buf) {
  if (buf.size() < 4) return {};
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint32_t{static_cast<unsigned char>(buf[i])} << (8 * i);
  if (buf.size() < 4 + std::size_t{n}) return {};
  return std::string_view(buf).substr(0, 4 + std::size_t{n});
}

std::uint8_t type_of(std::string_view frame) { return frame.size() > 4 ? static_cast<std::uint8_t>(frame[4]) : 0; }

}  // namespace

proxy::proxy(int server_port) : server_port_(server_port) {
  listen_fd_ = qs::wire::listen_tcp({"127.0.0.1", 0});
  sockaddr_in a{};
  socklen_t n = sizeof a;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &n) != 0) throw std::runtime_error("getsockname");
  port_ = ntohs(a.sin_port);
  if (::pipe2(stop_, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  thread_ = std::thread([this] { run(); });
}

proxy::~proxy() {
  (void)!::write(stop_[1], "s", 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(stop_[0]);
  ::close(stop_[1]);
}

void proxy::arm(cut c, bool then_refuse) {
  std::lock_guard<std::mutex> g(mutex_);
  armed_ = c;
  then_refuse_ = then_refuse;
}

void proxy::run() {
  std::list<link> links;
  // Whether the commit frame at hand is to be cut at this point; disarms.
  auto take_cut = [&](cut at) {
    std::lock_guard<std::mutex> g(mutex_);
    if (armed_ != at) return false;
    armed_ = cut::none;
    if (then_refuse_) refusing_ = true;
    ++cuts_;
    return true;
  };
  const auto commit = static_cast<std::uint8_t>(qs::wire::msg::commit);
  for (;;) {
    std::vector<pollfd> fds{{stop_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (link& l : links) {
      fds.push_back({l.client, POLLIN, 0});
      fds.push_back({l.server, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("poll");
    }
    if (fds[0].revents) break;
    // The links fds describes: one accepted now has no entry in it yet.
    const std::size_t polled = links.size();
    if (fds[1].revents) {
      int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        if (refusing_) {
          ::close(c);
        } else {
          link l;
          l.client = c;
          try {
            l.server = qs::wire::connect_tcp({"127.0.0.1", static_cast<std::uint16_t>(server_port_)});
            links.push_back(std::move(l));
          } catch (const std::exception&) {
            ::close(c);
          }
        }
      }
    }
    std::size_t i = 2, k = 0;
    for (link& l : links) {
      if (k++ == polled) break;
      short from_client = fds[i++].revents, from_server = fds[i++].revents;
      if (from_client) {
        if (!read_some(l.client, l.from_client)) l.close();
        for (std::string_view f; l.open && !(f = whole_frame(l.from_client)).empty();) {
          std::uint8_t type = type_of(f);
          if (type == commit && take_cut(cut::before_commit)) {
            l.close();
            break;
          }
          ++seen_[type];
          l.asked.push_back(type);
          if (!send_all(l.server, f)) l.close();
          l.from_client.erase(0, f.size());
        }
      }
      if (from_server && l.open) {
        if (!read_some(l.server, l.from_server)) l.close();
        for (std::string_view f; l.open && !(f = whole_frame(l.from_server)).empty();) {
          std::uint8_t answered = 0;
          if (!l.asked.empty()) {
            answered = l.asked.front();
            l.asked.pop_front();
          }
          if (answered == commit && take_cut(cut::after_commit)) {
            l.close();
            break;
          }
          if (!send_all(l.client, f)) l.close();
          l.from_server.erase(0, f.size());
        }
      }
    }
    links.remove_if([](const link& l) { return !l.open; });
  }
  for (link& l : links) l.close();
}

}  // namespace qs_pstest
