// worker_options.hpp: how the page-server tests' client processes
// (qs_ps_worker, qs_ps_bank) open their database: a small pool, durable
// commits, a 1 GiB reservation.
//
// Thread-safety: a function returning a value.
#pragma once

#include <qs/database.hpp>

#include <cstdint>

namespace qs_pstest {

inline qs::options client_options() {
  qs::options o;
  o.pool_pages = 256;
  o.durable = true;
  o.reservation_bytes = std::uint64_t{1} << 30;
  return o;
}

}  // namespace qs_pstest
