// core/indexes.hpp: qs::index's calls into the store, with its values turned
// into stored locations and back.
//
// qs::index keeps Berkeley DB B-trees (store.hpp) from byte-string keys to
// locations (location.hpp) of persistent objects, updated in the store
// transaction. The program hands over and gets back the bytes of a
// qs::ref<T> (an address, or an object identifier); the mode's references
// convert.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "mode/references.hpp"
#include "store/store.hpp"

#include <qs/index.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qs::detail {

class indexes {
 public:
  indexes(store& s, references& refs) : store_(s), refs_(refs) {}

  std::uint32_t open(const std::string& name, bool unique) { return store_.open_index(name, unique); }
  void insert(std::uint32_t ix, const std::string& name, std::string_view key, std::string_view ref_bytes);
  bool erase(std::uint32_t ix, std::string_view key, std::string_view ref_bytes);
  std::vector<index_entry> scan(std::uint32_t ix, std::string_view lo, std::string_view hi, std::size_t limit);

 private:
  store& store_;
  references& refs_;
};

}  // namespace qs::detail
