// qs/prefault.hpp: persistent memory brought in before a system call
// touches it.
//
// The kernel's own accesses to user memory (write() reading a buffer,
// read() filling one, and every other system call that takes a buffer)
// raise no SIGSEGV: on a persistent page that is not resident, or not yet
// writable, the call fails with EFAULT instead of faulting the page in. So
// a buffer in persistent memory is brought in first:
//
//   qs::prefault(doc->text, doc->length, qs::for_read);    // write() reads it
//   ::write(fd, doc->text, doc->length);
//   qs::prefault(page->bytes, n, qs::for_write);           // read() fills it
//   ::read(fd, page->bytes, n);
//
// for_write also makes the pages writable in the open transaction, so that
// what the call writes is logged at commit like any other change.
//
// Invariants: inside a transaction, after prefault the range is resident
// with the access asked for, until the transaction touches more pages than
// the buffer pool holds (make the call right after prefault). The range
// must fit in the pool. On memory that is not persistent it does nothing.
//
// Thread-safety: as any access to persistent memory: in the thread of the
// open transaction.
#pragma once

#include <cstddef>

namespace qs {

enum prefault_access { for_read, for_write };

// Faults every page of [p, p + n) in, with the access asked for.
void prefault(const void* p, std::size_t n, prefault_access access);

}  // namespace qs
