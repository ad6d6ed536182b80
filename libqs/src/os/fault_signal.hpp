// os/fault_signal.hpp: the SIGSEGV and SIGBUS handler that faults persistent
// pages in.
//
// Frames protected with mprotect fault with SIGSEGV; frames under
// userfaultfd with SIGBUS (os/frames.hpp). Both carry the faulting address
// and the x86-64 page-fault error code.
//
// One process-wide handler serves every open database. Each database
// registers the address range of its reservation with a fault_target; a fault
// inside a registered range is handed to that target with the faulting
// address, whether it was a write (bit 1 of the x86-64 page-fault error
// code) and the address of the instruction that faulted. A fault anywhere
// else goes to the handler that was installed before qs's (or, if that was
// the default action, is reported with a backtrace and then kills the
// process with SIGSEGV as usual).
//
// A target may throw from on_fault: the exception leaves the handler and
// unwinds through the faulting instruction (the program is compiled with
// -fnon-call-exceptions). The signal mask of the code that faulted is put
// back before it leaves. Where it meets code that cannot throw (a noexcept
// function) the C++ runtime calls std::terminate: the terminate handler
// installed with the signal handlers (chained to the one before it) first
// says that the error came from a fault, which error, and the rule
// (qs/error.hpp).
//
// A SIGSEGV or SIGBUS that no fault in a registered range caused (another
// address, or one sent with kill or raise) gets what it would get without
// qs: the previous handler, or the default action, which ends the process.
//
// Invariants:
//  * The handler is installed when the first range is registered and stays
//    for as long as the process runs.
//  * A fault taken while the same thread is already inside on_fault is a
//    runtime bug: it is reported with a backtrace and the process aborts
//    (the handler runs with SA_NODEFER, on the thread's alternate stack).
#pragma once

#include <cstddef>

namespace qs::detail {

class fault_target {
 public:
  virtual void on_fault(void* address, bool write, const void* code) = 0;

 protected:
  ~fault_target() = default;
};

void register_fault_range(const void* begin, const void* end, fault_target* target);
// Gives the calling thread an alternate signal stack, unless it has one, so
// that a fault on an exhausted stack can still be reported. Called by every
// thread that begins a transaction.
void ensure_alternate_stack() noexcept;
void unregister_fault_range(fault_target* target);

// Writes a backtrace of the calling thread to stderr.
void print_backtrace() noexcept;
// Reports a touch of persistent address space that belongs to no object and
// aborts the process.
[[noreturn]] void invalid_persistent_pointer(const void* address, const char* why) noexcept;

}  // namespace qs::detail
