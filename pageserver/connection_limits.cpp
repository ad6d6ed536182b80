// The handshake and session pools of qs-pageserver's connections
// (connection_limits.hpp).
#include "connection_limits.hpp"

#include <qs/base/error.hpp>

namespace qs::server {

connection_limits::connection_limits(unsigned max_sessions, unsigned max_handshakes)
    : max_sessions_(max_sessions), max_handshakes_(max_handshakes) {
  if (max_sessions == 0 || max_handshakes == 0)
    throw invalid_argument("the connection limits (--max-connections, --max-handshakes) must be at least 1");
}

std::optional<std::uint64_t> connection_limits::arrive(std::uint64_t id, std::function<void()> evict) {
  std::lock_guard<std::mutex> g(mutex_);
  std::optional<std::uint64_t> out;
  if (handshakes_.size() >= max_handshakes_) {
    auto oldest = handshakes_.begin();
    out = oldest->first;
    evicted_.insert(oldest->first);
    if (oldest->second) oldest->second();
    handshakes_.erase(oldest);
  }
  handshakes_.emplace(id, std::move(evict));
  return out;
}

bool connection_limits::admit(std::uint64_t id, std::string& refusal) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = handshakes_.find(id);
  if (it == handshakes_.end()) {
    refusal = eviction();
    return false;
  }
  handshakes_.erase(it);
  if (sessions_.size() >= max_sessions_) {
    refusal = "the server has " + std::to_string(max_sessions_) +
              " sessions open, its limit (qs-pageserver --max-connections); try again later";
    return false;
  }
  sessions_.insert(id);
  return true;
}

bool connection_limits::evicted(std::uint64_t id, std::string& why) const {
  std::lock_guard<std::mutex> g(mutex_);
  if (evicted_.count(id) == 0) return false;
  why = eviction();
  return true;
}

std::string connection_limits::eviction() const {
  return "the server closed this connection before its hello: " + std::to_string(max_handshakes_) +
         " newer connections were waiting to log in (qs-pageserver --max-handshakes)";
}

void connection_limits::leave(std::uint64_t id) {
  std::lock_guard<std::mutex> g(mutex_);
  handshakes_.erase(id);
  sessions_.erase(id);
  evicted_.erase(id);
}

unsigned connection_limits::handshakes() const {
  std::lock_guard<std::mutex> g(mutex_);
  return static_cast<unsigned>(handshakes_.size());
}

unsigned connection_limits::sessions() const {
  std::lock_guard<std::mutex> g(mutex_);
  return static_cast<unsigned>(sessions_.size());
}

}  // namespace qs::server
