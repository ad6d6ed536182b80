// The adaptive poll before a receive sleeps (see spin_wait.hpp).
#include <qs/wire/spin_wait.hpp>

#include <poll.h>
#include <sched.h>

#include <algorithm>

namespace qs::wire {

bool spin_wait::spin(int fd, clock::time_point until) {
  if (budget_.count() <= 0 || credit_ <= 0) return false;
  const clock::time_point end = std::min(until, clock::now() + budget_);
  do {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      credit_ = std::min(max_credit, credit_ + 1);
      return true;
    }
    ::sched_yield();
  } while (clock::now() < end);
  credit_ = std::max(0, credit_ - 2);
  return false;
}

void spin_wait::slept(clock::duration d) {
  if (d <= budget_) credit_ = std::min(max_credit, credit_ + 1);
}

}  // namespace qs::wire
