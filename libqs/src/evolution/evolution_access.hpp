// evolution/evolution_access.hpp: schema evolution's view of an open database: the
// types whose stored layout differs, what each page holds, and the
// references kept outside pages (named roots, qs::index entries).
//
// A facade over the database's runtime (runtime.hpp): each call takes the
// database's lock for its own duration (database_impl::with_runtime), so
// the conversion pass (schema_evolution.hpp) runs like a program, in a
// transaction, touching objects through their frames between calls. The
// coordinator knows nothing of evolution beyond lending its runtime.
//
// Invariants: the calls that read or rewrite pages, roots or entries
// (objects_on_page, pointer_words_on_page, move_roots, move_index_entries,
// adopt_type) need the calling thread's open transaction, and refuse
// without one (qs::no_transaction).
//
// Thread-safety: the lock makes each call safe from any thread; the pass
// that uses one (and its cache of pointees) runs on one thread.
#pragma once

#include "api/database_impl.hpp"
#include "core/schema_registry.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qs::detail {

class evolution_access {
 public:
  explicit evolution_access(database_impl& db) : db_(db) {}

  struct object_span {
    std::byte* address;
    std::uint32_t type;
    std::uint64_t bytes;
  };
  struct pointer_word {
    std::byte* address;
    std::string_view pointee;  // what its member points to, or empty (pointees_of)
  };

  // Why this database cannot be converted here, or empty.
  std::string refused();
  std::vector<schema_registry::pending_change> pending_changes();
  type_layout stored_layout(std::uint32_t index);
  // The program's layout of a type by name, or the stored one, or empty.
  std::vector<member_info> members_of(const std::string& type);
  std::uint32_t adopt_type(const schema_registry::pending_change& p);
  // One more than the highest page number handed out.
  std::uint64_t page_limit();
  // The numbers of the stored pages in [first, last), in order.
  std::vector<std::uint64_t> stored_pages(std::uint64_t first, std::uint64_t last);
  // Brings page `page` in and lists its objects (a large object on its first
  // page only), or the addresses of its pointer words (not vptrs). False
  // when the database has no such page.
  bool objects_on_page(std::uint64_t page, std::vector<object_span>& out);
  bool pointer_words_on_page(std::uint64_t page, std::vector<pointer_word>& out);
  // Rewrites named roots and qs::index entries that locate an object that
  // `forward` moves; returns how many changed.
  std::uint64_t move_roots(const std::function<void*(void*)>& forward);
  std::uint64_t move_index_entries(const std::function<void*(void*)>& forward);

 private:
  database_impl& db_;
  // Each layout's pointees (evolution_plan.hpp's pointees_of), by type name.
  std::unordered_map<std::string, std::vector<std::string>> pointees_;
};

}  // namespace qs::detail
