// proxy.hpp: a loopback TCP proxy between clients and qs-pageserver that
// loses a commit, or the answer to one, when told to.
//
// The proxy listens on a free loopback port and forwards each connection to
// the server's TCP port frame by frame (the u32 length prefix of
// qs/wire/codec.hpp). It reads each request's type from the first byte of its
// body and, the protocol answering every request with exactly one response,
// knows which response answers which request. Armed with a cut, it ends the
// connection of the next commit (both ways, as a network failure would):
// before_commit drops the commit request without passing it on, so the
// server never commits; after_commit passes the request on, lets the server
// answer, and drops the answer, so the server has committed and the client
// cannot know. While refusing, it accepts each new connection and closes it
// at once: a server that cannot be reached.
//
// It forwards whole frames, and writes them blocking: meant for tests, whose
// frames are small and whose clients wait for each answer.
//
// Thread-safety: the proxy runs on a thread of its own; every member may be
// called from any thread.
#pragma once

#include <qs/wire/messages.hpp>

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

namespace qs_pstest {

class proxy {
 public:
  enum class cut { none, before_commit, after_commit };

  explicit proxy(int server_port);
  ~proxy();
  proxy(const proxy&) = delete;
  proxy& operator=(const proxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "qs://127.0.0.1:" + std::to_string(port_); }
  // The next commit of any connection is cut so; then, with then_refuse,
  // the proxy refuses connections.
  void arm(cut c, bool then_refuse = false);
  void refuse(bool on) { refusing_ = on; }
  // Connections cut so far.
  int cuts() const { return cuts_; }
  // Requests of this type passed to the server so far.
  int requests(qs::wire::msg type) const { return seen_[static_cast<std::uint8_t>(type)]; }

 private:
  void run();

  int server_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int stop_[2] = {-1, -1};
  std::mutex mutex_;
  cut armed_ = cut::none;
  bool then_refuse_ = false;
  std::atomic<bool> refusing_{false};
  std::atomic<int> cuts_{0};
  std::array<std::atomic<int>, 256> seen_{};
  std::thread thread_;
};

}  // namespace qs_pstest
