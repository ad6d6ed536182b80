// Framed messages over stream sockets, and socket set-up (qs/wire/connection.hpp).
#include <qs/wire/connection.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
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

void connection::shutdown_receive() { ::shutdown(fd_, SHUT_RD); }

void connection::send(std::span<const std::byte> frame) {
  const std::byte* p = frame.data();
  std::size_t left = frame.size();
  while (left > 0) {
    ssize_t n = ::send(fd_, p, left, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN)  // (and EWOULDBLOCK, the same on Linux)
        throw timeout_error("send: the peer took no data within the send timeout", true);
      throw io_error(sys("send"));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::size_t connection::try_send(std::span<const std::byte> bytes) {
  for (;;) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return 0;
    throw io_error(sys("send"));
  }
}

std::optional<std::uint8_t> connection::ready_frame_type() {
  int avail = 0;
  if (::ioctl(fd_, FIONREAD, &avail) != 0 || avail < 5) return std::nullopt;
  std::uint8_t head[5];
  if (::recv(fd_, head, 5, MSG_PEEK | MSG_DONTWAIT) != 5) return std::nullopt;
  std::uint64_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint64_t{head[i]} << (8 * i);
  if (n == 0 || static_cast<std::uint64_t>(avail) < 4 + n) return std::nullopt;
  return head[4];
}

bool connection::receive(std::vector<std::byte>& buf, std::uint32_t max) {
  receive_limits l;
  l.max = max;
  return receive(buf, l) == received::frame;
}

namespace {

using clock = receive_limits::clock;

// Waits until fd is readable (or has an error or hang-up for recv to report)
// or `until` passes; false when it passed. A time already past still looks
// once.
bool sleep_until_readable(int fd, clock::time_point until) {
  for (;;) {
    int ms = -1;
    if (until != clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(until - clock::now()).count();
      ms = static_cast<int>(std::clamp<decltype(left)>(left, 0, INT_MAX));
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, ms);
    if (r > 0) return true;
    if (r == 0 && ms == 0) return false;
    if (r < 0 && errno != EINTR) throw io_error(sys("poll"));
  }
}

}  // namespace

bool connection::wait_readable(clock::time_point until) {
  if (spin_.spin(fd_, until)) return true;
  const clock::time_point t0 = clock::now();
  const bool came = sleep_until_readable(fd_, until);
  if (came) spin_.slept(clock::now() - t0);
  return came;
}

received connection::receive(std::vector<std::byte>& buf, const receive_limits& l) {
  clock::time_point until = std::min(l.deadline, l.quiet_deadline);
  bool started = false;
  auto wait = [&] {
    if (!wait_readable(until))
      throw timeout_error(
          started ? "a message did not arrive whole in the time allowed" : "no message came in the time allowed",
          started);
  };
  // Reads n bytes by `until`. False on end of stream before the frame's first byte.
  auto read_all = [&](std::byte* p, std::size_t n) -> bool {
    std::size_t got = 0;
    while (got < n) {
      // A frame's first bytes are usually still to come (the peer is
      // thinking): wait before reading them. Later bytes have usually come
      // with them: read first.
      if (!started) wait();
      ssize_t r = ::recv(fd_, p + got, n - got, MSG_DONTWAIT);
      if (r < 0 && errno == EAGAIN) {
        wait();
        continue;
      }
      if (r < 0) {
        if (errno == EINTR) continue;
        // A peer that closed with bytes of ours unread (an invalidation the
        // server pushed to a client that was leaving) resets the
        // connection: between frames, that is its end.
        if (errno == ECONNRESET && !started) return false;
        throw io_error(sys("receive"));
      }
      if (r == 0) {
        if (!started) return false;
        throw io_error("the connection ended inside a message");
      }
      if (!started) {
        started = true;
        until = l.deadline;
        if (l.frame_time != clock::duration::zero()) until = std::min(until, clock::now() + l.frame_time);
      }
      got += static_cast<std::size_t>(r);
    }
    return true;
  };
  std::byte len[4];
  if (!read_all(len, 4)) return received::end;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint32_t{static_cast<std::uint8_t>(len[i])} << (8 * i);
  if (n == 0) throw protocol_error("an empty message");
  if (n > l.max)
    throw protocol_error("a message of " + std::to_string(n) + " bytes, more than the limit of " +
                         std::to_string(l.max));
  if (!l.admit || l.admit(n)) {
    buf.resize(n);
    read_all(buf.data(), n);
    return received::frame;
  }
  // Read and dropped through a small buffer; its first byte is kept.
  std::byte chunk[16384];
  for (std::uint32_t left = n; left > 0;) {
    std::uint32_t k = std::min<std::uint32_t>(left, sizeof chunk);
    read_all(chunk, k);
    if (left == n) buf.assign(chunk, chunk + 1);
    left -= k;
  }
  return received::dropped;
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
    enable_keepalive(fd);
    return {};
  });
}

void enable_keepalive(int fd) {
  int one = 1, idle = 60, interval = 10, count = 6;
  unsigned user_timeout_ms = static_cast<unsigned>((idle + interval * count) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  // Data sent and never acknowledged (no keepalive probe goes out then)
  // fails the connection after as long.
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

void set_send_timeout(int fd, std::chrono::milliseconds t) {
  timeval tv{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>(t.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
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

std::string address_text(const ::sockaddr* a) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (a->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(a);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (a->sa_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(a);
    ::inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

unsigned bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

}  // namespace qs::wire
