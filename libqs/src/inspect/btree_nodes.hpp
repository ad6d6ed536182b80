// inspect/btree_nodes.hpp: qs::btree's nodes as the stored schema shows them,
// for verify and dump, which know no program's types.
//
// A node type is known by its name (qs::detail::btree_leaf<...> or
// qs::detail::btree_inner<...>, qs/btree.hpp) and its members: a
// btree_head first (count at offset 0, two bytes), then `keys`, then `vals`
// (a leaf) or `kids` (an inner node, one more than keys). The slots past
// the count are dead: erase and split leave there what was there, so their
// words are not pointers.
//
// Thread-safety: values and pure functions; a btree_nodes cache is used by
// one thread at a time.
#pragma once

#include "core/schema_registry.hpp"
#include "store/store.hpp"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace qs::detail {

struct btree_node_shape {
  bool leaf = false;
  const member_info* keys = nullptr;  // the keys' first member (an array, or keys[0]'s first)
  std::uint32_t keys_offset = 0, key_size = 0, key_slots = 0;
  std::uint32_t second_offset = 0, second_size = 0, second_slots = 0;  // vals or kids

  // The live entries the count says, and the dead byte ranges (from the
  // node's start) past them; nullopt when the count is more than the node
  // holds.
  std::optional<std::vector<byte_range>> dead(std::uint16_t count) const;
};

class btree_nodes {
 public:
  // The node shape of a type, or nullopt when it is no qs::btree node.
  const std::optional<btree_node_shape>& of(const type_layout& l);

 private:
  std::unordered_map<const type_layout*, std::optional<btree_node_shape>> cache_;
};

}  // namespace qs::detail
