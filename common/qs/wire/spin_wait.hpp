// qs/wire/spin_wait.hpp: a short, adaptive poll for a socket's next bytes
// before the receiving thread goes to sleep on it.
//
// A request and its answer cross between two processes (a qs client and
// qs-pageserver) thousands of times a second during a traversal. When the
// waiting thread sleeps, the answer must wake it: on a virtual machine
// whose other processor has gone idle, that wake-up costs 50 to 100 us,
// more than the server takes to read a page. So before it sleeps, a
// receive polls the socket for up to `budget`, yielding the processor
// between polls (a peer on the same processor runs then, and a peer on
// another answers into a thread that is still awake).
//
// Spinning is adaptive, so that a connection whose peer answers slowly (a
// program thinking between transactions, a server reading from disk) does
// not burn a processor for nothing: a credit, raised by each wait the
// budget would have covered and lowered faster by each spin that ran out,
// must be positive for a wait to spin. A budget of zero never spins.
//
// Invariants: 0 <= credit_ <= max_credit; spin() returns within budget
// (or by `until`, when sooner).
//
// Thread-safety: one per connection, used by the connection's one reading
// thread at a time.
#pragma once

#include <chrono>

namespace qs::wire {

class spin_wait {
 public:
  using clock = std::chrono::steady_clock;
  // What clients and qs-pageserver spin for by default.
  static constexpr std::chrono::microseconds default_budget{500};

  explicit spin_wait(std::chrono::microseconds budget = default_budget) : budget_(budget) {}
  void set_budget(std::chrono::microseconds budget) { budget_ = budget; }

  // Polls fd for input (or its end, or an error) for up to the budget, or
  // until `until` if sooner, when the credit allows; true when it came.
  // False: nothing came, or no spin was tried; the caller sleeps then.
  bool spin(int fd, clock::time_point until);
  // The caller slept `d` for the input: a wait the budget would have
  // covered raises the credit.
  void slept(clock::duration d);

 private:
  static constexpr int max_credit = 8;
  std::chrono::microseconds budget_;
  int credit_ = max_credit;
};

}  // namespace qs::wire
