// buffer_budget.hpp: how many bytes of message buffers all of qs-pageserver's
// connections may hold at once (--buffer-mb).
//
// A message may be up to 64 MiB (wire::max_message), in either direction, so
// without a bound a few hundred connections could make the server hold many
// GiB. Each request gets a `grant`: its first `allowance` bytes (1 MiB) are
// the connection's own, enough for every message but large writes, commits
// and scan answers; bytes beyond come from the one budget shared by all
// connections, and go back to it when the request's answer has been sent. So
// the server's message buffers never exceed the budget plus about 2 MiB per
// connection (the allowance, and a metadata value or a page with its mapping
// object in the answer).
//
// A request that needs more than is free waits for other connections to give
// bytes back, at most `patience`; then (or at once, when it needs more than
// the whole budget) it is refused and the caller answers with an error.
//
// Invariant: in_use() <= limit().
// Thread-safety: buffer_budget is thread-safe; a grant belongs to one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace qs::server {

class buffer_budget {
 public:
  static constexpr std::uint64_t allowance = 1u << 20;

  explicit buffer_budget(std::uint64_t limit) : limit_(limit) {}
  std::uint64_t limit() const { return limit_; }
  std::uint64_t in_use() const;

  // The bytes one request holds beyond its allowance.
  class grant {
   public:
    explicit grant(buffer_budget& b) : budget_(b) {}
    ~grant() { release(); }
    grant(const grant&) = delete;
    grant& operator=(const grant&) = delete;
    // Counts n more bytes for the request; false (nothing taken) when they
    // cannot be had within `patience`. `refusal` then says why, naming the
    // option.
    bool add(std::uint64_t n, std::chrono::milliseconds patience, std::string& refusal);
    // Gives everything back: the request is done.
    void release();
    std::uint64_t bytes() const { return used_; }

   private:
    buffer_budget& budget_;
    std::uint64_t used_ = 0;   // bytes counted for the request
    std::uint64_t taken_ = 0;  // of which from the budget: used_ - allowance, rounded up to 1 MiB
  };

 private:
  bool take(std::uint64_t n, std::chrono::milliseconds patience);
  void give_back(std::uint64_t n);

  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::uint64_t in_use_ = 0;
};

}  // namespace qs::server
