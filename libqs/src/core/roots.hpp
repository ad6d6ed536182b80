// core/roots.hpp: named roots, the entry points of a database's object graph.
//
// A root is a persistent cell found by name. Its record ("r:" + name,
// keys.hpp) holds the cell's location (location.hpp) followed by the
// mangled name of the C++ type it holds; a program asking for the root with
// another type is refused with qs::root_type_mismatch. A cell is created
// zeroed, by the allocator, the first time a transaction asks for it.
//
// Invariants:
//  * The cache holds the records read or written in this process; abort
//    and a fresh frame assignment empty it.
//  * Every cell handed out in a transaction is reported to the mode
//    (references::root_cell_used), so that software mode can log it.
//
// Depends on: store, references, object_allocator, transaction_log.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/object_allocator.hpp"
#include "core/transaction_log.hpp"
#include "mode/references.hpp"
#include "store/store.hpp"

#include <qs/schema.hpp>

#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>

namespace qs::detail {

class roots {
 public:
  roots(store& s, references& refs, object_allocator& allocator, transaction_log& log)
      : store_(s), refs_(refs), allocator_(allocator), log_(log) {}

  // The cell of root `name`, holding a `t` of `size` bytes (descriptor d),
  // created when absent.
  void* cell(std::string_view name, const type_descriptor* d, std::size_t size, const std::type_info& t);
  bool exists(std::string_view name);
  // Makes the existing object at `cell` the cell of root `name`, holding a
  // `type` (a mangled name, as std::type_info gives it): how a loaded dump
  // names its roots. Inside a transaction.
  void adopt(std::string_view name, void* cell, const std::string& type);
  // One-time relocation moved the runs of cells: their records name where
  // they are now.
  void update_records();
  void forget() { cache_.clear(); }

 private:
  struct entry {
    std::string location;
    std::string type;
  };

  store& store_;
  references& refs_;
  object_allocator& allocator_;
  transaction_log& log_;
  std::unordered_map<std::string, entry> cache_;
};

}  // namespace qs::detail
