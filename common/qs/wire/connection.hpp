// qs/wire/connection.hpp: framed messages over a stream socket (TCP or Unix),
// and the addresses qs-pageserver listens on and clients connect to.
//
// A connection owns its descriptor. send() writes one whole frame; receive()
// reads one whole frame body, refusing a length above the limit before
// reading the body. Interrupted system calls are resumed; SIGPIPE is never
// raised (MSG_NOSIGNAL). Failures throw wire::io_error (the peer went away or
// the socket failed), wire::timeout_error (a frame that did not arrive in the
// time receive_limits allow, or a send that made no progress within the
// socket's send timeout) or wire::protocol_error (an oversized frame).
//
// receive_limits give a frame a deadline for all its bytes, however they are
// spread out (a peer cannot keep a connection alive by trickling), and let the
// receiver decide, from the length, whether to make room for the body: a body
// it refuses is read and dropped, so that the stream stays in step.
//
// Before receive() sleeps for bytes that have not come, it polls for them
// briefly (spin_wait.hpp): an answer that comes within the spin is taken
// without the cost of waking a sleeping thread. set_spin(0) never spins.
//
// Thread-safety: a connection is used by one thread at a time, except
// shutdown(), which any thread may call to wake its reader.
#pragma once

#include <qs/wire/codec.hpp>
#include <qs/wire/spin_wait.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

struct sockaddr;

namespace qs::wire {

class io_error : public qs::error {
 public:
  using qs::error::error;
};

// A frame, or its start, that did not come in the time allowed, or a send
// the peer took nothing of for the socket's send timeout.
class timeout_error : public io_error {
 public:
  timeout_error(const std::string& what, bool inside_frame) : io_error(what), inside_frame_(inside_frame) {}
  // Whether some of the frame had come: the peer is sending, slowly.
  bool inside_frame() const noexcept { return inside_frame_; }

 private:
  bool inside_frame_;
};

struct receive_limits {
  using clock = std::chrono::steady_clock;
  // The largest body accepted (a larger length is a protocol_error).
  std::uint32_t max = 0;
  // The whole frame must have come by then.
  clock::time_point deadline = clock::time_point::max();
  // The frame's first byte must have come by then: a limit on how long the
  // peer stays quiet, which a frame already arriving does not meet.
  clock::time_point quiet_deadline = clock::time_point::max();
  // Once its first byte has come, the rest of the frame must come within
  // this (zero: no limit but the deadline).
  clock::duration frame_time{};
  // Called with the body's length before room is made for it; false drops
  // the body. Empty: every body is taken.
  std::function<bool(std::uint32_t)> admit;
};

enum class received {
  end,      // the stream ended before a frame started
  frame,    // buf holds the body
  dropped,  // admit refused the body: it was read and dropped; buf holds its first byte
};

class connection {
 public:
  explicit connection(int fd) : fd_(fd) {}
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void send(std::span<const std::byte> frame);
  // Writes what the socket takes now of `bytes`, without waiting; returns
  // how many it took (0 when its buffer is full). io_error when it failed.
  std::size_t try_send(std::span<const std::byte> bytes);
  // When a whole frame has arrived, so that receive() returns it without
  // waiting: the first byte of its body (its message type); nothing while
  // none has, or only part of one.
  std::optional<std::uint8_t> ready_frame_type();
  // Reads one frame body into buf. False on end of stream before a frame
  // starts; io_error when it ends inside one.
  bool receive(std::vector<std::byte>& buf, std::uint32_t max);
  received receive(std::vector<std::byte>& buf, const receive_limits& limits);
  // Wakes a thread blocked in receive (it sees the end of the stream).
  void shutdown();
  // Ends the receiving side only: a blocked receive sees the end of the
  // stream, and a last frame can still be sent.
  void shutdown_receive();
  int fd() const { return fd_; }
  // How long a receive polls for bytes before it sleeps (zero: never).
  void set_spin(std::chrono::microseconds budget) { spin_.set_budget(budget); }

 private:
  // Waits until fd_ is readable or `until` passes (false then): a spin,
  // then a sleep.
  bool wait_readable(receive_limits::clock::time_point until);

  int fd_;
  spin_wait spin_;
};

// host:port, with host a name or address; throws invalid_argument.
struct tcp_address {
  std::string host;
  std::uint16_t port;
};
tcp_address parse_tcp_address(const std::string& s);

// Connected with TCP_NODELAY and keepalive (enable_keepalive).
int connect_tcp(const tcp_address& a);
int connect_unix(const std::string& path);
int listen_tcp(const tcp_address& a);
int listen_unix(const std::string& path);

// An IPv4 or IPv6 socket address as "host:port" ("?:0" for another family).
std::string address_text(const ::sockaddr* a);
// The local port a TCP socket is bound to; 0 when it has none.
unsigned bound_port(int fd);

// TCP keepalive on a connected socket: after 60 s without traffic the kernel
// probes the peer every 10 s, and after 6 unanswered probes (or data unacknowledged
// for as long) the connection fails with ETIMEDOUT, so that a peer whose host
// vanished is noticed in about two minutes. Failures are ignored (the
// connection works without).
void enable_keepalive(int fd);
// A send() that moves no byte for `t` fails (timeout_error); zero: never.
void set_send_timeout(int fd, std::chrono::milliseconds t);

}  // namespace qs::wire
