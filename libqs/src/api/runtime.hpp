// api/runtime.hpp: the components of one open database, built and wired in one
// place.
//
// A runtime owns the state of an open database's page cache and every
// component over it, and constructs them in the one order their references
// allow:
//
//   schema_registry, page_table, transaction_log, buffer_pool
//     └─ page_access (mode, lower half) ─ page_words ─ pointer_check
//          └─ relocator ─ pager ─ object_allocator
//               └─ references (mode, upper half) ─ roots, indexes
//
// database_impl (the coordinator) holds one behind its lock; the unit tests
// of the components build one over an in-memory store, so that what they
// drive is wired exactly as a database is. The sequences that span
// components live beside it: transaction_engine (begin, commit, abort) and
// the coordinator's fault path.
//
// Invariants:
//  * every component refers only to members declared before it, and each
//    lives as long as the runtime;
//  * the store outlives the runtime (the caller owns it).
//
// Thread-safety: none of its own. The coordinator guards the whole runtime
// with its mutex; a test drives one from one thread.
#pragma once

#include "core/buffer_pool.hpp"
#include "core/indexes.hpp"
#include "core/object_allocator.hpp"
#include "core/page_table.hpp"
#include "core/page_words.hpp"
#include "core/pager.hpp"
#include "core/pointer_check.hpp"
#include "core/relocator.hpp"
#include "core/roots.hpp"
#include "core/schema_registry.hpp"
#include "core/transaction_log.hpp"
#include "mode/page_access.hpp"
#include "mode/references.hpp"
#include "store/store.hpp"

#include <qs/database.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace qs::detail {

class runtime {
 public:
  // Wires the components over `s`, the database's frames and pages of
  // `page_size` bytes, a pool of `pool_pages` pages, with `opts`' policies
  // (prefetch, relocation, schema evolution) and the database's home frames,
  // and reads the stored schema (schema_registry::load, which may throw).
  runtime(store& s, std::unique_ptr<frame_space> frames, std::uint32_t page_size, std::uint32_t pool_pages,
          const options& opts, const home_region& home);
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // Between transactions, when the reservation runs short: forget every
  // frame assignment (the pool is emptied).
  void reset_frames();

  store& storage;
  const std::uint32_t page_size;
  statistics stats;
  schema_registry schema;
  page_table table;
  transaction_log log;
  buffer_pool pool;
  page_access access;
  page_words words;
  pointer_check pointers;
  relocator relocate;
  pager pages;
  object_allocator allocator;
  references refs;
  roots named;
  indexes index;
};

}  // namespace qs::detail
