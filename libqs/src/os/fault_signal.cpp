#include "os/fault_signal.hpp"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <qs/database.hpp>
#include <qs/error.hpp>

#include <sys/mman.h>

#include <cxxabi.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

namespace qs::detail {
namespace {

struct range {
  std::atomic<const void*> begin{nullptr};
  std::atomic<const void*> end{nullptr};
  std::atomic<fault_target*> target{nullptr};
};

constexpr int max_ranges = 64;
range ranges[max_ranges];
std::mutex install_mutex;
bool installed = false;
// The handlers installed before qs's: [0] SIGSEGV (frames protected with
// mprotect), [1] SIGBUS (userfaultfd's faults, os/frames.hpp).
struct sigaction previous[2];
struct sigaction& previous_for(int sig) {
  return previous[sig == SIGBUS ? 1 : 0];
}
thread_local bool in_fault = false;
// The last exception a fault raised on this thread: std::terminate is told
// apart from other terminations by it (on_terminate).
thread_local std::exception_ptr raised_by_fault;
std::terminate_handler previous_terminate = nullptr;

void say(const char* s) noexcept {
  ssize_t r = ::write(2, s, std::strlen(s));
  (void)r;
}

fault_target* find_target(const void* a) noexcept {
  for (auto& r : ranges) {
    fault_target* t = r.target.load(std::memory_order_acquire);
    if (t && a >= r.begin.load(std::memory_order_relaxed) && a < r.end.load(std::memory_order_relaxed)) return t;
  }
  return nullptr;
}

// A SIGSEGV or SIGBUS that no fault of ours caused gets what it would get
// without qs: the handler installed before qs's, or the default action.
void chain(int sig, siginfo_t* info, void* ctx) {
  // Sent by kill(), raise() or sigqueue(), not by a faulting instruction.
  bool sent = info->si_code <= 0;
  const struct sigaction& before = previous_for(sig);
  const char* name = sig == SIGBUS ? "SIGBUS" : "SIGSEGV";
  if (before.sa_flags & SA_SIGINFO) {
    if (before.sa_sigaction) {
      before.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (before.sa_handler == SIG_IGN && sent) {
    return;  // ignored, as it would be without qs
  } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    before.sa_handler(sig);
    return;
  }
  // The default action (a fault cannot be ignored): say where it happened,
  // then end the process with the signal as the default action does. qs's
  // handler is never left uninstalled in a process that goes on.
  char buf[160];
  if (sent)
    std::snprintf(buf, sizeof buf, "qs: %s sent to the process (by pid %d)\n", name, static_cast<int>(info->si_pid));
  else
    std::snprintf(buf, sizeof buf, "qs: %s at address %p (not persistent memory)\n",
                  sig == SIGBUS ? "bus error" : "segmentation fault", info->si_addr);
  say(buf);
  print_backtrace();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  if (!sent) return;  // the faulting instruction runs again, under SIG_DFL
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
  ::raise(sig);
  std::abort();  // not reached
}

void handler(int sig, siginfo_t* info, void* ctx) {
  void* addr = info->si_addr;
  fault_target* t = find_target(addr);
  if (!t || info->si_code <= 0) {
    chain(sig, info, ctx);
    return;
  }
  if (in_fault) invalid_persistent_pointer(addr, "fault while a fault was being handled (qs runtime bug)");
  auto* uc = static_cast<ucontext_t*>(ctx);
  bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
  in_fault = true;
  try {
    t->on_fault(addr, write, reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]));
  } catch (...) {
    in_fault = false;
    // The exception leaves through the faulting instruction, not through
    // sigreturn: put back the signal mask of the code that faulted. (Ours
    // blocks nothing more, but a wrapper may have: ThreadSanitizer runs the
    // handler with every signal blocked.)
    pthread_sigmask(SIG_SETMASK, &uc->uc_sigmask, nullptr);
    raised_by_fault = std::current_exception();
    throw;
  }
  in_fault = false;
}

// An exception a fault raised met code that cannot throw (a noexcept
// function, a destructor) on its way out, or nothing caught it: before the
// usual termination, say which error it was and the rule it falls under.
[[noreturn]] void on_terminate() {
  std::exception_ptr e = std::current_exception();
  if (e && e == raised_by_fault) {
    std::string what = "(unknown)";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    std::string line = "qs: the process ends: a page fault raised \"" + what +
                       "\" inside code that cannot throw (a noexcept function or a destructor) or that "
                       "nothing caught. Errors raised in faults are I/O, corruption, a lost page server "
                       "or a programming error, never a conflict; the transaction was failed first, so nothing "
                       "of it was committed (docs/api.md, \"Errors in faults\")\n";
    say(line.c_str());
  }
  if (previous_terminate) previous_terminate();
  std::abort();
}

void install() {
  previous_terminate = std::set_terminate(on_terminate);
  struct sigaction sa {};
  sa.sa_sigaction = handler;
  // SA_NODEFER: a fault inside the handler reaches it again and is
  // reported, instead of killing the process silently. SA_ONSTACK: on the
  // thread's alternate stack when it has one (a stack overflow is reported
  // too).
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &previous[0]) != 0 || sigaction(SIGBUS, &sa, &previous[1]) != 0) {
    say("qs: cannot install the SIGSEGV and SIGBUS handlers\n");
    std::abort();
  }
}

}  // namespace

void ensure_alternate_stack() noexcept {
  thread_local bool done = false;
  if (done) return;
  done = true;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return;  // the program's own
  // Never freed: it must outlive every signal the thread may take. One per
  // thread that uses qs.
  std::size_t bytes = std::max<std::size_t>(SIGSTKSZ, 64 * 1024);
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;
  stack_t st{};
  st.ss_sp = mem;
  st.ss_size = bytes;
  if (sigaltstack(&st, nullptr) != 0) ::munmap(mem, bytes);
}

void register_fault_range(const void* begin, const void* end, fault_target* target) {
  ensure_alternate_stack();
  std::lock_guard<std::mutex> g(install_mutex);
  if (!installed) {
    install();
    installed = true;
  }
  for (auto& r : ranges) {
    if (r.target.load() == nullptr) {
      r.begin.store(begin);
      r.end.store(end);
      r.target.store(target, std::memory_order_release);
      return;
    }
  }
  say("qs: too many databases open in one process\n");
  std::abort();
}

void unregister_fault_range(fault_target* target) {
  std::lock_guard<std::mutex> g(install_mutex);
  for (auto& r : ranges)
    if (r.target.load() == target) r.target.store(nullptr, std::memory_order_release);
}

namespace {

// The target of the detection measurement: makes its page writable.
struct probe final : fault_target {
  void* page;
  std::size_t bytes;
  void on_fault(void*, bool, const void*) override { ::mprotect(page, bytes, PROT_READ | PROT_WRITE); }
};

}  // namespace

}  // namespace qs::detail

// qs built with a sanitizer (QS_SANITIZE, cmake/QsSanitize.cmake): what its
// runtime must be told for qs's handler to work, as the defaults of the
// program (weak: a program that defines its own wins, and the *_OPTIONS
// environment variables still add to them).
#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer has its own SIGSEGV handler. qs's sigaction replaces it
// only with allow_user_segv_handler=1 (the default of GCC 12's and recent
// clang's runtimes; older ones ignored the call). AddressSanitizer's handler
// is then the one qs hands foreign faults to, and still reports them.
extern "C" const char* __asan_default_options();
extern "C" __attribute__((weak, visibility("default"))) const char* __asan_default_options() {
  return "allow_user_segv_handler=1";
}
#endif
#if defined(__SANITIZE_THREAD__)
// A page fault is synchronous: it interrupts the faulting instruction, never
// malloc or a lock of the runtime's, so the handler may allocate, lock and
// read the store. ThreadSanitizer reports every such call in a signal
// handler ("signal-unsafe call inside of a signal") unless told not to. (An
// exception thrown out of the handler also leaves ThreadSanitizer counting
// the thread as inside a handler, which only matters to that report.)
extern "C" const char* __tsan_default_options();
extern "C" __attribute__((weak, visibility("default"))) const char* __tsan_default_options() {
  return "report_signal_unsafe=0";
}
#endif

namespace qs {

double measure_fault_detection_ns(int faults) {
  using clock = std::chrono::steady_clock;
  std::size_t bytes = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* page = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw error("qs: mmap of a probe page failed");
  detail::probe target;
  target.page = page;
  target.bytes = bytes;
  detail::register_fault_range(page, static_cast<char*>(page) + bytes, &target);
  auto* cell = static_cast<volatile int*>(page);
  *cell = 0;
  // Both loops protect and unprotect the page once per round; only the
  // first takes a fault to do the second.
  auto t0 = clock::now();
  for (int i = 0; i < faults; ++i) {
    ::mprotect(page, bytes, PROT_NONE);
    *cell = i;  // faults; the handler makes the page writable
  }
  auto t1 = clock::now();
  for (int i = 0; i < faults; ++i) {
    ::mprotect(page, bytes, PROT_NONE);
    ::mprotect(page, bytes, PROT_READ | PROT_WRITE);
    *cell = i;
  }
  auto t2 = clock::now();
  detail::unregister_fault_range(&target);
  ::munmap(page, bytes);
  double with = std::chrono::duration<double, std::nano>(t1 - t0).count();
  double without = std::chrono::duration<double, std::nano>(t2 - t1).count();
  return std::max(0.0, (with - without) / faults);
}

}  // namespace qs

namespace qs::detail {

void print_backtrace() noexcept {
  unw_context_t uc;
  unw_cursor_t cur;
  if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0) {
    say("qs: (no backtrace)\n");
    return;
  }
  say("qs: backtrace:\n");
  for (int depth = 0; depth < 64 && unw_step(&cur) > 0; ++depth) {
    unw_word_t ip = 0, off = 0;
    unw_get_reg(&cur, UNW_REG_IP, &ip);
    char name[512];
    char line[768];
    if (unw_get_proc_name(&cur, name, sizeof name, &off) == 0) {
      int status = 0;
      char* dem = abi::__cxa_demangle(name, nullptr, nullptr, &status);
      std::snprintf(line, sizeof line, "  #%-2d %#lx %s+%#lx\n", depth, static_cast<unsigned long>(ip),
                    status == 0 && dem ? dem : name, static_cast<unsigned long>(off));
      std::free(dem);
    } else {
      std::snprintf(line, sizeof line, "  #%-2d %#lx ?\n", depth, static_cast<unsigned long>(ip));
    }
    say(line);
  }
}

void invalid_persistent_pointer(const void* address, const char* why) noexcept {
  char buf[256];
  std::snprintf(buf, sizeof buf, "qs: invalid persistent pointer %p: %s\n", address, why);
  say(buf);
  print_backtrace();
  std::abort();
}

}  // namespace qs::detail
