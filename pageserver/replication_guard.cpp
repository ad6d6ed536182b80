// The handshake in front of Berkeley DB's replication connections
// (replication_guard.hpp).
#include "replication_guard.hpp"

#include "log.hpp"
#include "shared_secret.hpp"

#include <qs/wire/connection.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string_view>

namespace qs::server {
namespace {

using group_id = std::array<std::uint8_t, 16>;

constexpr char magic[8] = {'q', 's', 'r', 'e', 'p', 'l', '0', '1'};
constexpr std::size_t max_secret = 1024;

enum answer : std::uint8_t { accepted = 0, wrong_secret = 1, other_group = 2, not_a_hello = 3 };

using connect_fn = int (*)(int, const sockaddr*, socklen_t);
using accept_fn = int (*)(int, sockaddr*, socklen_t*);

connect_fn real_connect() {
  static connect_fn f = reinterpret_cast<connect_fn>(::dlsym(RTLD_NEXT, "connect"));
  return f;
}

accept_fn real_accept() {
  static accept_fn f = reinterpret_cast<accept_fn>(::dlsym(RTLD_NEXT, "accept"));
  return f;
}

struct guard {
  std::mutex m;
  std::string dir, secret, refusal;
  unsigned port = 0;
  bool have_group = false;
  group_id group{};
  // What each peer last said (connect), and when each address and reason
  // was last logged (accept).
  std::map<std::string, std::string> peer_said;
  std::map<std::string, std::chrono::steady_clock::time_point> logged;
};

std::atomic<bool> armed{false};

guard& state() {
  static guard g;
  return g;
}

std::string hex(const group_id& g) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : g) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

bool parse_hex(std::string_view s, group_id& g) {
  if (s.size() != 32) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < 16; ++i) {
    int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    g[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

std::string group_file(const guard& g) { return g.dir + "/replication-group"; }

// Stores the identity durably (a new file renamed over, then the directory
// synced); the caller holds the lock.
void store_group(guard& g, const group_id& id) {
  const std::string path = group_file(g), tmp = path + ".tmp";
  const std::string text = hex(id) + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (ok) {
    int d = ::open(g.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
      ::fsync(d);
      ::close(d);
    }
  }
  if (!ok) log_line(0, "error: replication: cannot store the group identity in " + path + ": " + std::strerror(errno));
  g.group = id;
  g.have_group = true;
}

// This site's identity, or none; takes `theirs` when it has none.
void take_group(guard& g, const group_id& theirs) {
  if (g.have_group || theirs == group_id{}) return;
  store_group(g, theirs);
  log_line(0, "replication: this site joins the group " + hex(theirs));
}

bool is_tcp(int fd) {
  int type = 0, domain = 0;
  socklen_t n = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n) != 0 || type != SOCK_STREAM) return false;
  n = sizeof domain;
  return ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &n) == 0 && (domain == AF_INET || domain == AF_INET6);
}

using deadline = std::chrono::steady_clock::time_point;

int ms_left(deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::steady_clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

bool send_all(int fd, const void* p, std::size_t n, deadline d) {
  auto* b = static_cast<const char*>(p);
  while (n) {
    pollfd pf{fd, POLLOUT, 0};
    if (::poll(&pf, 1, ms_left(d)) != 1) return false;
    ssize_t got = ::send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return false;
    b += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

// Reads exactly n bytes by the deadline; `got` says how many came.
bool recv_all(int fd, void* p, std::size_t n, deadline d, std::size_t* got_total = nullptr) {
  auto* b = static_cast<char*>(p);
  std::size_t done = 0;
  while (done < n) {
    pollfd pf{fd, POLLIN, 0};
    if (::poll(&pf, 1, ms_left(d)) != 1) break;
    ssize_t got = ::recv(fd, b + done, n - done, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  if (got_total) *got_total = done;
  return done == n;
}

// The hello: magic, group identity (zeros: none yet), secret length (two
// bytes, little-endian), secret. The answer: magic, one of `answer`, the
// answering site's group identity.
constexpr std::size_t hello_head = sizeof magic + 16 + 2;
constexpr std::size_t answer_size = sizeof magic + 1 + 16;

// The connecting side, on a connected blocking socket; "" when accepted,
// else why not.
std::string say_hello(int fd) {
  guard& g = state();
  std::string hello(magic, sizeof magic);
  {
    std::lock_guard<std::mutex> l(g.m);
    group_id mine = g.have_group ? g.group : group_id{};
    hello.append(reinterpret_cast<const char*>(mine.data()), mine.size());
    const std::size_t n = g.secret.size();
    hello += static_cast<char>(n & 0xff);
    hello += static_cast<char>(n >> 8);
    hello += g.secret;
  }
  const deadline d = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  if (!send_all(fd, hello.data(), hello.size(), d)) return "it closed the connection before the hello";
  char a[answer_size];
  if (!recv_all(fd, a, sizeof a, d))
    return "no qs replication answer within 2 s (not a qs-pageserver replication port, or one without its guard)";
  if (std::memcmp(a, magic, sizeof magic) != 0) return "its answer is not a qs replication answer";
  group_id theirs;
  std::memcpy(theirs.data(), a + sizeof magic + 1, theirs.size());
  std::lock_guard<std::mutex> l(g.m);
  switch (static_cast<std::uint8_t>(a[sizeof magic])) {
    case accepted: take_group(g, theirs); return {};
    case wrong_secret: return "this site's shared secret is wrong (every site of a group needs the same --secret-file)";
    case other_group:
      return "it belongs to another replication group (another database): its group is " + hex(theirs) +
             ", this site's " + (g.have_group ? hex(g.group) : std::string("none"));
    default: return "it did not take this site's hello";
  }
}

// The accepting side; true when the hello passes. `why` says what was wrong.
bool check_hello(int fd, std::string& why) {
  guard& g = state();
  const deadline d = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  char head[hello_head];
  std::size_t got = 0;
  answer verdict = accepted;
  group_id theirs{};
  if (!recv_all(fd, head, sizeof head, d, &got)) {
    why = got == 0 ? "" : "an incomplete hello";  // nothing sent: a probe that only connects
    return false;
  }
  std::memcpy(theirs.data(), head + sizeof magic, theirs.size());
  const std::size_t n = static_cast<std::uint8_t>(head[hello_head - 2]) |
                        static_cast<std::size_t>(static_cast<std::uint8_t>(head[hello_head - 1])) << 8;
  std::string secret(n <= max_secret ? n : 0, '\0');
  if (std::memcmp(head, magic, sizeof magic) != 0 || n > max_secret) {
    verdict = not_a_hello;
    why = "what it sent is not a qs replication hello";
  } else if (!recv_all(fd, secret.data(), n, d)) {
    why = "an incomplete hello";
    return false;
  }
  group_id mine{};
  {
    std::lock_guard<std::mutex> l(g.m);
    if (verdict == accepted && !same_secret(secret, g.secret)) {
      verdict = wrong_secret;
      why = "it presented a wrong shared secret";
    } else if (verdict == accepted && g.have_group && theirs != group_id{} && theirs != g.group) {
      verdict = other_group;
      why = "it belongs to another replication group (another database): its group is " + hex(theirs) +
            ", this site's " + hex(g.group);
    } else if (verdict == accepted) {
      take_group(g, theirs);
    }
    mine = g.have_group ? g.group : group_id{};
  }
  char a[answer_size];
  std::memcpy(a, magic, sizeof magic);
  a[sizeof magic] = static_cast<char>(verdict);
  std::memcpy(a + sizeof magic + 1, mine.data(), mine.size());
  if (!send_all(fd, a, sizeof a, d) && verdict == accepted) {
    why = "it closed the connection during the hello";
    return false;
  }
  return verdict == accepted;
}

// Logs what a peer said when it differs from what it said last.
void peer_says(const std::string& peer, const std::string& what) {
  guard& g = state();
  std::lock_guard<std::mutex> l(g.m);
  std::string& last = g.peer_said[peer];
  if (last == what) return;
  last = what;
  log_line(
      0, what.empty() ? "replication: peer " + peer + " accepted this site" : "replication: peer " + peer + " " + what);
}

}  // namespace

void arm_replication_guard(const std::string& dir, unsigned port, const std::string& secret) {
  guard& g = state();
  {
    std::lock_guard<std::mutex> l(g.m);
    g.dir = dir;
    g.port = port;
    g.secret = secret;
    std::ifstream in(group_file(g));
    std::string text;
    if (in >> text) {
      if (parse_hex(text, g.group)) g.have_group = true;
      else
        log_line(0, "error: replication: " + group_file(g) +
                        " does not hold a group identity (32 hexadecimal digits); this site takes the identity of the "
                        "first site it meets");
    }
  }
  (void)real_connect();
  (void)real_accept();
  armed.store(true, std::memory_order_release);
}

void create_replication_group() {
  guard& g = state();
  std::lock_guard<std::mutex> l(g.m);
  if (g.have_group) return;
  group_id id;
  if (::getrandom(id.data(), id.size(), 0) != static_cast<ssize_t>(id.size())) {
    log_line(0, std::string("error: replication: getrandom: ") + std::strerror(errno));
    return;
  }
  store_group(g, id);
  log_line(0, "replication: this site creates the group " + hex(id));
}

std::string replication_refusal() {
  guard& g = state();
  std::lock_guard<std::mutex> l(g.m);
  return g.refusal;
}

}  // namespace qs::server

using namespace qs::server;

// The executable's connect() and accept() (replication_guard.hpp).
extern "C" int connect(int fd, const sockaddr* addr, socklen_t len) {
  const int rc = real_connect()(fd, addr, len);
  if (!armed.load(std::memory_order_acquire) || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
    return rc;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK) || !is_tcp(fd)) return rc;
  const std::string peer = qs::wire::address_text(addr);
  if (rc != 0) {
    const int e = errno;
    peer_says(peer, std::string("does not answer (") + std::strerror(e) + "); Berkeley DB tries again every second");
    errno = e;
    return rc;
  }
  std::string why = say_hello(fd);
  if (why.empty()) {
    peer_says(peer, "");
    return 0;
  }
  peer_says(peer, "refused this site: " + why);
  {
    guard& g = state();
    std::lock_guard<std::mutex> l(g.m);
    g.refusal = "peer " + peer + " refused this site: " + why;
  }
  errno = ECONNREFUSED;
  return -1;
}

extern "C" int accept(int fd, sockaddr* addr, socklen_t* len) {
  sockaddr_storage from{};
  socklen_t from_len = sizeof from;
  const int s = real_accept()(fd, reinterpret_cast<sockaddr*>(&from), &from_len);
  if (s >= 0 && addr && len) {
    std::memcpy(addr, &from, std::min<std::size_t>(*len, from_len));
    *len = from_len;
  }
  if (s < 0 || !armed.load(std::memory_order_acquire)) return s;
  guard& g = state();
  unsigned port;
  {
    std::lock_guard<std::mutex> l(g.m);
    port = g.port;
  }
  if (qs::wire::bound_port(fd) != port) return s;
  std::string why;
  if (check_hello(s, why)) return s;
  ::close(s);
  if (!why.empty()) {
    const std::string who = qs::wire::address_text(reinterpret_cast<sockaddr*>(&from));
    const std::string host = who.substr(0, who.rfind(':'));
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> l(g.m);
    auto& last = g.logged[host + " " + why];
    if (last == std::chrono::steady_clock::time_point{} || now - last >= std::chrono::minutes(1)) {
      last = now;
      log_line(0, "replication: refused a connection from " + who + ": " + why);
    }
  }
  errno = ECONNABORTED;
  return -1;
}
