// wire/connection.hpp: framed messages over a stream socket (TCP or Unix),
// and the addresses qs-pageserver listens on and clients connect to.
//
// A connection owns its descriptor. send() writes one whole frame; receive()
// reads one whole frame body, refusing a length above the limit before
// reading the body. Interrupted system calls are resumed; SIGPIPE is never
// raised (MSG_NOSIGNAL). Failures throw wire::io_error (the peer went away or
// the socket failed) or wire::protocol_error (an oversized frame).
//
// Thread-safety: a connection is used by one thread at a time, except
// shutdown(), which any thread may call to wake its reader.
#pragma once

#include "codec.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qs::wire {

class io_error : public qs::error {
 public:
  using qs::error::error;
};

class connection {
 public:
  explicit connection(int fd) : fd_(fd) {}
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void send(std::span<const std::byte> frame);
  // Reads one frame body into buf. False on end of stream before a frame
  // starts; io_error when it ends inside one.
  bool receive(std::vector<std::byte>& buf, std::uint32_t max);
  // Wakes a thread blocked in receive (it sees the end of the stream).
  void shutdown();
  int fd() const { return fd_; }

 private:
  int fd_;
};

// host:port, with host a name or address; throws invalid_argument.
struct tcp_address {
  std::string host;
  std::uint16_t port;
};
tcp_address parse_tcp_address(const std::string& s);

int connect_tcp(const tcp_address& a);
int connect_unix(const std::string& path);
int listen_tcp(const tcp_address& a);
int listen_unix(const std::string& path);

}  // namespace qs::wire
