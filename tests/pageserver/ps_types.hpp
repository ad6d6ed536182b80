// ps_types.hpp: the persistent types of the page-server tests.
//
// A Table of 64 Counters, each Counter alone on its page (it takes more than
// half of an 8 KiB page), so that which pages two clients touch is exactly
// which counters they touch.
#pragma once

#include <qs/qs.hpp>

#include <cstdint>

namespace qs_pstest {

constexpr int counters = 64;

struct Counter {
  QS_PERSISTENT(Counter)
  std::int64_t value;
  std::int64_t pad[600];
};

struct Table {
  QS_PERSISTENT(Table)
  std::int64_t n;
  Counter* c[counters];
};

// Pointers to many Counters on pages apart from one another: its page's
// mapping object has an entry for each, several KiB in all.
constexpr int fan_size = 900;
struct Fan {
  QS_PERSISTENT(Fan)
  Counter* c[fan_size];
};

}  // namespace qs_pstest
