// inspect/btree_nodes.hpp: qs::btree's nodes as the stored schema shows them,
// for verify and dump, which know no program's types.
//
// A node type is known by its name (qs::detail::btree_leaf<...> or
// qs::detail::btree_inner<...>, qs/btree.hpp) and its members: a
// btree_head first (count at offset 0, two bytes), then `keys`, then `vals`
// (a leaf) or `kids` (an inner node, one more than keys). A leaf's slots
// are in segments of equal size, and its `fill` (two bytes a segment) says
// how many entries each holds, at its start, in key order. The slots past
// the count (an inner node) or past a segment's fill (a leaf) are dead:
// erase and split leave there what was there, so their words are not
// pointers.
//
// Thread-safety: values and pure functions; a btree_nodes cache is used by
// one thread at a time.
#pragma once

#include "core/schema_registry.hpp"
#include "store/store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs::detail {

struct btree_node_shape {
  bool leaf = false;
  const member_info* keys = nullptr;  // the keys' first member (an array, or keys[0]'s first)
  std::uint32_t keys_offset = 0, key_size = 0, key_slots = 0;
  std::uint32_t second_offset = 0, second_size = 0, second_slots = 0;  // vals or kids
  std::uint32_t fill_offset = 0, segments = 1;                         // a leaf's fill counts, one a segment

  // The dead byte ranges (from the node's start) of a node whose bytes are
  // `node`; nullopt when its count, or a leaf's fills, say more than the
  // node holds, or the fills do not add up to the count (the text says
  // which, into `why`).
  std::optional<std::vector<byte_range>> dead(const std::byte* node, std::string* why = nullptr) const;
  // The slot of entry i (key order, below the count) of a node whose dead()
  // is not nullopt.
  std::uint32_t slot(const std::byte* node, std::uint32_t i) const;
};

class btree_nodes {
 public:
  // The node shape of a type, or nullopt when it is no qs::btree node.
  const std::optional<btree_node_shape>& of(const type_layout& l);

 private:
  std::unordered_map<const type_layout*, std::optional<btree_node_shape>> cache_;
};

}  // namespace qs::detail
