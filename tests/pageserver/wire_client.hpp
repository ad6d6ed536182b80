// wire_client.hpp: a connection to a qs-pageserver's TCP port that speaks
// the wire protocol by hand, for the page-server tests that send what a
// runtime never would (or not yet, or too slowly).
//
// Thread-safety: one thread per client.
#pragma once

#include <catch2/catch.hpp>

#include <qs/error.hpp>
#include <qs/wire/connection.hpp>
#include <qs/wire/messages.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace qs_pstest {

// A connection to the server's TCP port that speaks the wire protocol by hand.
struct wire_client {
  int fd;
  std::vector<std::byte> in;
  explicit wire_client(int port) : fd(qs::wire::connect_tcp({"127.0.0.1", static_cast<std::uint16_t>(port)})) {}
  ~wire_client() { ::close(fd); }
  wire_client(const wire_client&) = delete;
  void send_bytes(const void* p, std::size_t n) { (void)!::send(fd, p, n, MSG_NOSIGNAL); }
  static std::vector<std::byte> frame(const qs::wire::request& r) {
    qs::wire::writer w;
    qs::wire::encode(r, w);
    auto& f = w.finish();
    return {f.begin(), f.end()};
  }
  void send(const qs::wire::request& r) {
    auto f = frame(r);
    send_bytes(f.data(), f.size());
  }
  // The next response (its first byte within 10 s).
  qs::wire::response receive() {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) throw qs::error("no response in 10 s");
    qs::wire::connection c(::dup(fd));
    if (!c.receive(in, qs::wire::max_message)) throw qs::error("the server closed the connection");
    return qs::wire::parse_response(in);
  }
  void log_in(const std::string& secret) {
    send(qs::wire::hello_request{qs::wire::magic, qs::wire::version, secret});
    REQUIRE(std::holds_alternative<qs::wire::hello_ok_response>(receive()));
  }
  // Nothing to read and no end of stream: the server keeps the connection.
  bool open() {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }
  // Reads until the server closes the connection (at most max_ms); returns
  // what came, and "<still open>" after it when the connection stayed open.
  std::string drain(int max_ms = 10000) {
    std::string got;
    for (int i = 0; i < max_ms / 10; ++i) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10) != 1) continue;
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return got;
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got + "<still open>";
  }
};

}  // namespace qs_pstest
