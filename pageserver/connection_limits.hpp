// connection_limits.hpp: how many connections qs-pageserver serves at once,
// in two pools that cannot crowd each other out: connections still in their
// handshake (anyone who reaches the port may open one) and logged-in
// sessions (clients that presented the secret, or came through the Unix
// socket).
//
// A connection starts in the handshake pool. When that pool is full, its
// oldest connection is evicted to make room: its `evict` function is called
// (the server ends its receiving side) and its hello, if one comes, is
// refused. So connections that never finish their hello cannot keep a client
// out: they can only delay it when they arrive max_handshakes at a time
// between the client's connect and its hello. A hello moves the connection
// to the session pool when there is room, and is refused when there is not.
// Refusals come with a text naming the option that sets the limit.
//
// Invariants: at most max_handshakes connections are in the handshake pool
// and at most max_sessions in the session pool; a connection is in one pool
// at most, and never returns to the handshake pool.
//
// Thread-safety: every member may be called from any thread. `evict` is
// called with the limits' mutex held, from the thread of a later arrive();
// it must not call back.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace qs::server {

class connection_limits {
 public:
  connection_limits(unsigned max_sessions, unsigned max_handshakes);

  // Connection `id` (ids increase with arrival) starts its handshake.
  // Returns the id of the connection evicted to make room, if one was.
  std::optional<std::uint64_t> arrive(std::uint64_t id, std::function<void()> evict);
  // The connection's hello succeeded: true when it has a session's place;
  // false with the reason when it must be refused (evicted, or the sessions
  // are full).
  bool admit(std::uint64_t id, std::string& refusal);
  // Whether the connection was evicted from the handshake pool; `why` then
  // says so, for the peer.
  bool evicted(std::uint64_t id, std::string& why) const;
  // The connection is closed.
  void leave(std::uint64_t id);

  unsigned handshakes() const;
  unsigned sessions() const;

 private:
  const unsigned max_sessions_, max_handshakes_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::function<void()>> handshakes_;  // oldest first
  std::set<std::uint64_t> sessions_;
  std::set<std::uint64_t> evicted_;
  std::string eviction() const;
};

}  // namespace qs::server
