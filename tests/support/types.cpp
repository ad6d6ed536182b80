#include "types.hpp"

#include <cstddef>

namespace qs_test {
namespace {

constexpr std::uint32_t node_pointers[] = {offsetof(Node, next)};
const qs::member_record node_members[] = {
    {qs::member_kind::number, qs::number_kind::sint, 0, 8, 1, 8, 0, 0, "value", "long", ""},
    {qs::member_kind::pointer, qs::number_kind::none, 8, 8, 1, 8, 0, 0, "next", "qs_test::Node*", "qs_test::Node"},
};
const qs::type_descriptor node_desc{
    "qs_test::Node", sizeof(Node), alignof(Node), node_pointers, 1, nullptr, 0, node_members, 2};
constexpr std::uint32_t pair_pointers[] = {offsetof(Pair, left), offsetof(Pair, right)};
const qs::member_record pair_members[] = {
    {qs::member_kind::pointer, qs::number_kind::none, 0, 8, 1, 8, 0, 0, "left", "qs_test::Pair*", "qs_test::Pair"},
    {qs::member_kind::number, qs::number_kind::uint, 8, 8, 1, 8, 0, 0, "key", "unsigned long", ""},
    {qs::member_kind::pointer, qs::number_kind::none, 16, 8, 1, 8, 0, 0, "right", "qs_test::Pair*", "qs_test::Pair"},
};
const qs::type_descriptor pair_desc{
    "qs_test::Pair", sizeof(Pair), alignof(Pair), pair_pointers, 2, nullptr, 0, pair_members, 3};
constexpr std::uint32_t blob_pointers[] = {offsetof(Blob, self)};
const qs::member_record blob_members[] = {
    {qs::member_kind::array, qs::number_kind::uint, 0, 320000, 40000, 8, 0, 0, "words", "unsigned long[40000]",
     "unsigned long"},
    {qs::member_kind::pointer, qs::number_kind::none, 320000, 8, 1, 8, 0, 0, "self", "qs_test::Blob*", "qs_test::Blob"},
};
const qs::type_descriptor blob_desc{
    "qs_test::Blob", sizeof(Blob), alignof(Blob), blob_pointers, 1, nullptr, 0, blob_members, 2};
constexpr std::uint32_t slab_pointers[] = {offsetof(Slab, next)};
const qs::member_record slab_members[] = {
    {qs::member_kind::pointer, qs::number_kind::none, 0, 8, 1, 8, 0, 0, "next", "qs_test::Slab*", "qs_test::Slab"},
    {qs::member_kind::number, qs::number_kind::uint, 8, 8, 1, 8, 0, 0, "value", "unsigned long", ""},
    {qs::member_kind::array, qs::number_kind::uint, 16, 8000, 1000, 8, 0, 0, "fill", "unsigned long[1000]",
     "unsigned long"},
};
const qs::type_descriptor slab_desc{
    "qs_test::Slab", sizeof(Slab), alignof(Slab), slab_pointers, 1, nullptr, 0, slab_members, 3};
const qs::member_record base_members[] = {
    {qs::member_kind::number, qs::number_kind::sint, 0, 8, 1, 8, 0, 0, "a", "long", ""},
};
const qs::type_descriptor base_desc{
    "qs_test::Base", sizeof(Base), alignof(Base), nullptr, 0, nullptr, 0, base_members, 1};

const bool registered = [] {
  qs::register_type<Node>(node_desc);
  qs::register_type<Pair>(pair_desc);
  qs::register_type<Blob>(blob_desc);
  qs::register_type<Slab>(slab_desc);
  qs::register_type<Base>(base_desc);
  return true;
}();

}  // namespace
}  // namespace qs_test
