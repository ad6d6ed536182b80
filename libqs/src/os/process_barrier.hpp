// os/process_barrier.hpp: a memory barrier run on every thread of the
// process at once (Linux membarrier), so that one side of a handshake
// between threads can go without a fence of its own.
//
// A thread that only stores and loads plain values (with no fence between
// them: a compiler barrier is enough) and a thread that calls
// process_barrier() between its own store and load behave towards each
// other as if both had fenced: at least one of them sees the other's
// store. The cheap side pays nothing; the heavy side pays a system call
// that interrupts every core running a thread of the process (tens of
// microseconds on a paravirtualized machine), so it suits handshakes the
// heavy side starts rarely (os/biased_mutex.hpp).
//
// Invariants: process_barrier_available() is decided once per process
// (the first call registers the process with the kernel) and never
// changes after; process_barrier() is called only where it said true.
//
// Thread-safety: both may be called from any thread.
#pragma once

namespace qs::detail {

// Whether this kernel offers the expedited private barrier (Linux 4.14),
// and the process is registered for it.
bool process_barrier_available() noexcept;
// Every thread of the process has passed a full memory barrier when this
// returns. Only where process_barrier_available().
void process_barrier() noexcept;

}  // namespace qs::detail
