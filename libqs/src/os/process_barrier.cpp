#include "os/process_barrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace qs::detail {
namespace {

long membarrier(int cmd) { return ::syscall(SYS_membarrier, cmd, 0U, 0); }

bool offered() noexcept {
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  return cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
}

// The process registered for the expedited barrier (a child made by
// fork() is a process of its own, and registers again).
std::atomic<pid_t> registered{0};

bool register_process() noexcept {
  const pid_t self = ::getpid();
  if (registered.load() == self) return true;
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return false;
  registered.store(self);
  return true;
}

}  // namespace

bool process_barrier_available() noexcept {
  static const bool kernel_offers = offered();
  return kernel_offers && register_process();
}

void process_barrier() noexcept {
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // Not registered: a child of fork() using a lock its parent made.
  if (register_process() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // With no barrier the handshake would be unsafe.
  std::abort();
}

}  // namespace qs::detail
