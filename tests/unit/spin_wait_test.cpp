// Unit tests of the poll before a receive sleeps (qs/wire/spin_wait.hpp) and
// of a connection that uses it (qs/wire/connection.hpp): what comes is
// taken, nothing is lost while polling, and the spin stops being tried once
// the peer keeps answering later than the budget, until waits turn short
// again.
#include <catch2/catch.hpp>

#include <qs/wire/connection.hpp>
#include <qs/wire/spin_wait.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

using qs::wire::spin_wait;
using namespace std::chrono_literals;

namespace {

// A connected pair of Unix stream sockets, closed at the end.
struct socket_pair {
  int fd[2] = {-1, -1};
  socket_pair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) == 0); }
  ~socket_pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void put(char c) { REQUIRE(::write(fd[1], &c, 1) == 1); }
  char take() {
    char c = 0;
    REQUIRE(::read(fd[0], &c, 1) == 1);
    return c;
  }
};

spin_wait::clock::time_point never() { return spin_wait::clock::time_point::max(); }

}  // namespace

TEST_CASE("spin_wait: input already there is found, and none is made up") {
  socket_pair s;
  spin_wait w(50us);
  CHECK_FALSE(w.spin(s.fd[0], never()));
  s.put('a');
  CHECK(w.spin(s.fd[0], never()));
  CHECK(s.take() == 'a');
}

TEST_CASE("spin_wait: a budget of zero never polls") {
  socket_pair s;
  spin_wait w(0us);
  s.put('a');
  CHECK_FALSE(w.spin(s.fd[0], never()));
}

TEST_CASE("spin_wait: input that comes while it polls is found") {
  socket_pair s;
  spin_wait w(10s);  // bounded by the deadline below, never reached when the byte comes
  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    s.put('b');
  });
  const bool came = w.spin(s.fd[0], spin_wait::clock::now() + 10s);
  writer.join();
  CHECK(came);
  CHECK(s.take() == 'b');
}

TEST_CASE("spin_wait: a peer slower than the budget stops the spinning until waits turn short again") {
  socket_pair s;
  spin_wait w(100us);
  // Spins that run out lower the credit faster than hits raise it: after
  // enough of them, a wait does not poll at all, even with input there.
  int misses = 0;
  while (misses < 100) {
    if (!w.spin(s.fd[0], never())) ++misses;
    s.put('x');
    if (!w.spin(s.fd[0], never())) break;  // no spin tried: input was there
    s.take();
  }
  REQUIRE(misses < 100);
  s.take();
  s.put('y');
  CHECK_FALSE(w.spin(s.fd[0], never()));
  // A sleep the budget would have covered: the spin is worth trying again.
  w.slept(10us);
  CHECK(w.spin(s.fd[0], never()));
  CHECK(s.take() == 'y');
}

TEST_CASE("spin_wait: sleeps longer than the budget do not bring the spinning back") {
  socket_pair s;
  spin_wait w(100us);
  for (int i = 0; i < 10; ++i) CHECK_FALSE(w.spin(s.fd[0], never()));  // nothing comes: the credit runs out
  // The credit is spent: no spin is tried, however long the sleeps were.
  for (int i = 0; i < 20; ++i) w.slept(1s);
  s.put('z');
  CHECK_FALSE(w.spin(s.fd[0], never()));
  CHECK(s.take() == 'z');
}

TEST_CASE("connection: frames sent while the receiver polls, and after it sleeps, all arrive in order") {
  socket_pair s;
  qs::wire::connection in(s.fd[0]);
  s.fd[0] = -1;  // the connection closes it
  in.set_spin(200us);
  std::thread writer([&] {
    qs::wire::connection out(::dup(s.fd[1]));
    for (int i = 0; i < 200; ++i) {
      // Some at once, some after the receiver's spin has run out.
      if (i % 50 == 49) std::this_thread::sleep_for(5ms);
      const std::byte frame[5] = {std::byte{1}, std::byte{0}, std::byte{0}, std::byte{0}, static_cast<std::byte>(i)};
      out.send(frame);
    }
  });
  std::vector<std::byte> buf;
  for (int i = 0; i < 200; ++i) {
    REQUIRE(in.receive(buf, 16));
    REQUIRE(buf.size() == 1);
    CHECK(buf[0] == static_cast<std::byte>(i));
  }
  writer.join();
}
