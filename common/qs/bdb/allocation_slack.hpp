// qs/bdb/allocation_slack.hpp: room after each of Berkeley DB's own small
// allocations, against an overflow of its election tally.
//
// Berkeley DB 5.3's elections count votes in an array sized for the
// number of sites it expects (__rep_tally): a vote from one voter more
// than that is written past the end of the array's heap block. valgrind
// shows it in a site that rejoins its group after its master was killed
// (an invalid write of 4 bytes, 0 and 4 bytes after a block of 24 from
// __rep_vote1, in __rep_elect_int); glibc later aborts on the damaged heap
// ("corrupted size vs. prev_size", "free(): invalid pointer") as the site
// starts or stops. Berkeley DB takes its memory through a function a
// program may replace (db_env_set_func_malloc, _realloc): install() makes
// every block under 4 KiB that it asks for 128 bytes longer, room for
// sixteen more voters, so that the overflow lands in the block's own
// slack. Blocks are ordinary malloc blocks (freed with free()).
//
// Thread-safety: install() any number of times from any thread; it takes
// effect for the whole process, before the next allocation.
#pragma once

namespace qs::detail {

// For replicated environments: call before the first one is created.
void install_allocation_slack();

}  // namespace qs::detail
