// qs::btree's node layouts, from the stored schema.
#include "inspect/btree_nodes.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace qs::detail {
namespace {

std::optional<btree_node_shape> shape_of(const type_layout& l) {
  btree_node_shape s;
  s.leaf = l.name.rfind("qs::detail::btree_leaf<", 0) == 0;
  if (!s.leaf && l.name.rfind("qs::detail::btree_inner<", 0) != 0) return std::nullopt;
  const std::string second_name = s.leaf ? "vals" : "kids";
  const member_info *count = nullptr, *second = nullptr, *fill = nullptr;
  for (const member_info& m : l.members) {
    if (m.path == "btree_head::count" && m.offset == 0 && m.size == 2) count = &m;
    if (m.path == "fill" && m.k == member_kind::array && m.element_size == 2) fill = &m;
    if (!s.keys && (m.path == "keys" || m.path.rfind("keys[0]", 0) == 0)) s.keys = &m;
    if (!second && (m.path == second_name || m.path.rfind(second_name + "[0]", 0) == 0)) second = &m;
  }
  if (!count || !s.keys || !second || (s.leaf && (!fill || fill->count == 0))) return std::nullopt;
  // An array of structs is flattened element by element (keys[0].x, ...,
  // keys[1].x, ...): its extent runs over every member of its name, and its
  // slots are one more than the highest index.
  auto extent = [&](const member_info& first, const std::string& name) {
    std::uint32_t end = first.offset + first.size;
    for (const member_info& m : l.members)
      if (m.path == name || m.path.rfind(name + "[", 0) == 0 || m.path.rfind(name + ".", 0) == 0)
        end = std::max(end, m.offset + m.size);
    return end;
  };
  auto slots = [&](const member_info& first, const std::string& name) {
    if (first.path == name) return first.k == member_kind::array ? first.count : 1u;
    std::uint32_t most = 0;
    for (const member_info& m : l.members)
      if (m.path.rfind(name + "[", 0) == 0)
        most = std::max(most, static_cast<std::uint32_t>(std::strtoul(m.path.c_str() + name.size() + 1, nullptr, 10)));
    return most + 1;
  };
  s.key_slots = slots(*s.keys, "keys");
  s.second_slots = slots(*second, second_name);
  if (s.second_slots != (s.leaf ? s.key_slots : s.key_slots + 1) || (s.leaf && s.key_slots % fill->count != 0))
    return std::nullopt;  // not laid out as btree.hpp does
  if (s.leaf) {
    s.fill_offset = fill->offset;
    s.segments = fill->count;
  }
  s.keys_offset = s.keys->offset;
  s.key_size = (extent(*s.keys, "keys") - s.keys_offset) / s.key_slots;
  s.second_offset = second->offset;
  s.second_size = (extent(*second, second_name) - s.second_offset) / s.second_slots;
  return s;
}

}  // namespace

std::optional<std::vector<byte_range>> btree_node_shape::dead(const std::byte* node, std::string* why) const {
  std::uint16_t count;
  std::memcpy(&count, node, 2);
  auto refuse = [&](std::string text) -> std::optional<std::vector<byte_range>> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  if (count > key_slots)
    return refuse("a count of " + std::to_string(count) + " entries in a node of " + std::to_string(key_slots));
  if (!leaf) {
    const std::uint32_t live2 = count ? count + 1u : 0u;
    return std::vector<byte_range>{{keys_offset + count * key_size, (key_slots - count) * key_size},
                                   {second_offset + live2 * second_size, (second_slots - live2) * second_size}};
  }
  const std::uint32_t per = key_slots / segments;
  std::vector<byte_range> out;
  std::uint32_t sum = 0;
  for (std::uint32_t s = 0; s < segments; ++s) {
    std::uint16_t f;
    std::memcpy(&f, node + fill_offset + 2 * s, 2);
    if (f > per)
      return refuse("a fill of " + std::to_string(f) + " entries in segment " + std::to_string(s) + " of " +
                    std::to_string(per) + " slots");
    sum += f;
    out.push_back({keys_offset + (s * per + f) * key_size, (per - f) * key_size});
    out.push_back({second_offset + (s * per + f) * second_size, (per - f) * second_size});
  }
  if (sum != count)
    return refuse("a count of " + std::to_string(count) + " entries where its segments hold " + std::to_string(sum));
  return out;
}

std::uint32_t btree_node_shape::slot(const std::byte* node, std::uint32_t i) const {
  if (!leaf) return i;
  const std::uint32_t per = key_slots / segments;
  for (std::uint32_t s = 0, before = 0; s < segments; ++s) {
    std::uint16_t f;
    std::memcpy(&f, node + fill_offset + 2 * s, 2);
    if (i < before + f) return s * per + (i - before);
    before += f;
  }
  return key_slots;  // (not reached when dead() accepted the node)
}

const std::optional<btree_node_shape>& btree_nodes::of(const type_layout& l) {
  auto [it, fresh] = cache_.try_emplace(&l);
  if (fresh) it->second = shape_of(l);
  return it->second;
}

}  // namespace qs::detail
