// Framed messages over stream sockets, and socket set-up (wire/connection.hpp).
#include "connection.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace qs::wire {
namespace {

std::string sys(const std::string& what) { return what + ": " + std::strerror(errno); }

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path)
    throw invalid_argument("Unix socket path '" + path + "' is empty or longer than " +
                           std::to_string(sizeof a.sun_path - 1) + " bytes");
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

}  // namespace

connection::~connection() {
  if (fd_ >= 0) ::close(fd_);
}

void connection::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

void connection::send(std::span<const std::byte> frame) {
  const std::byte* p = frame.data();
  std::size_t left = frame.size();
  while (left > 0) {
    ssize_t n = ::send(fd_, p, left, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw io_error(sys("send"));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

bool connection::receive(std::vector<std::byte>& buf, std::uint32_t max) {
  auto read_all = [&](std::byte* p, std::size_t n, bool at_start) -> bool {
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::recv(fd_, p + got, n - got, 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        throw io_error(sys("receive"));
      }
      if (r == 0) {
        if (at_start && got == 0) return false;
        throw io_error("the connection ended inside a message");
      }
      got += static_cast<std::size_t>(r);
    }
    return true;
  };
  std::byte len[4];
  if (!read_all(len, 4, true)) return false;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint32_t{static_cast<std::uint8_t>(len[i])} << (8 * i);
  if (n == 0) throw protocol_error("an empty message");
  if (n > max)
    throw protocol_error("a message of " + std::to_string(n) + " bytes, more than the limit of " + std::to_string(max));
  buf.resize(n);
  read_all(buf.data(), n, false);
  return true;
}

tcp_address parse_tcp_address(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    throw invalid_argument("'" + s + "' is not host:port");
  std::string host = s.substr(0, colon), port = s.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned long p = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || p > 65535) throw invalid_argument("'" + s + "': bad port");
    p = p * 10 + static_cast<unsigned long>(c - '0');
  }
  if (p > 65535) throw invalid_argument("'" + s + "': bad port");  // 0: any free port (listening)
  return {host, static_cast<std::uint16_t>(p)};
}

namespace {

addrinfo* resolve(const tcp_address& a, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(a.host.c_str(), std::to_string(a.port).c_str(), &hints, &res);
  if (rc != 0) throw io_error("cannot resolve " + a.host + ": " + gai_strerror(rc));
  return res;
}

// A socket on the first of a's addresses for which `use` succeeds (it
// returns an error text, empty on success); every other socket is closed.
template <class Use>
int first_address(const tcp_address& a, bool passive, const char* doing, Use use) {
  addrinfo* res = resolve(a, passive);
  std::string last = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = sys("socket");
      continue;
    }
    last = use(fd, ai);
    if (last.empty()) {
      ::freeaddrinfo(res);
      return fd;
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  throw io_error(std::string("cannot ") + doing + " " + a.host + ":" + std::to_string(a.port) + ": " + last);
}

}  // namespace

int connect_tcp(const tcp_address& a) {
  return first_address(a, false, "connect to", [](int fd, addrinfo* ai) -> std::string {
    int rc;
    do rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) return sys("connect");
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return {};
  });
}

int connect_unix(const std::string& path) {
  sockaddr_un a = unix_address(path);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw io_error(sys("socket"));
  int rc;
  do rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    std::string e = sys("cannot connect to " + path);
    ::close(fd);
    throw io_error(e);
  }
  return fd;
}

int listen_tcp(const tcp_address& a) {
  return first_address(a, true, "listen on", [](int fd, addrinfo* ai) -> std::string {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) return sys("bind");
    return {};
  });
}

int listen_unix(const std::string& path) {
  sockaddr_un a = unix_address(path);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw io_error(sys("socket"));
  // A socket file left by a server that died is replaced; a live one is not.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (probe >= 0) ::close(probe);
    if (live) {
      ::close(fd);
      throw io_error("another server is listening on " + path);
    }
    ::unlink(path.c_str());
  }
  // Only the owner may connect: the socket is created with mode 0600.
  mode_t old = ::umask(0177);
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::umask(old);
  if (rc != 0 || ::listen(fd, 64) != 0) {
    std::string e = sys("cannot listen on " + path);
    ::close(fd);
    throw io_error(e);
  }
  return fd;
}

}  // namespace qs::wire
