// test_options.hpp: how the tests and their worker programs open a database,
// embedded or through a page server: one helper, so that every test
// database is sized alike and a test says only what it changes.
//
// Header-only: worker programs that link nothing of the test support use
// it too.
//
// Thread-safety: functions returning values.
#pragma once

#include <qs/database.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace qs_test {

// Whether commits are durable: fast (atomic, but an operating-system crash
// may lose them) for most tests; durable for those about crashes, whose
// workers are killed.
enum class commits { fast, durable };

// A pool of `pool_pages`, a 1 GiB reservation, a 16 MiB store cache (for
// an embedded store).
inline qs::options small_options(std::uint32_t pool_pages = 64, commits c = commits::fast) {
  qs::options o;
  o.pool_pages = pool_pages;
  o.durable = c == commits::durable;
  o.reservation_bytes = std::uint64_t{1} << 30;
  o.store_cache_bytes = 16u << 20;
  return o;
}

// Whether an embedded database a test (or a program it starts) creates
// keeps its pages in a page file: QS_PAGE_FILE, which a ctest variant may
// set, or else qs::options::page_file's default.
inline bool page_file_layout() {
  const char* v = std::getenv("QS_PAGE_FILE");
  if (v && *v) return std::string_view(v) == "1";
  return qs::options{}.page_file;
}

}  // namespace qs_test
