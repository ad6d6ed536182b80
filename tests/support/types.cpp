#include "types.hpp"

#include <cstddef>

namespace qs_test {
namespace {

constexpr std::uint32_t node_pointers[] = {offsetof(Node, next)};
const qs::type_descriptor node_desc{"qs_test::Node",
                                    sizeof(Node),
                                    alignof(Node),
                                    node_pointers,
                                    1,
                                    nullptr,
                                    0,
                                    "0 8 value long\n8 8 next qs_test::Node*\n"};
constexpr std::uint32_t pair_pointers[] = {offsetof(Pair, left), offsetof(Pair, right)};
const qs::type_descriptor pair_desc{"qs_test::Pair",
                                    sizeof(Pair),
                                    alignof(Pair),
                                    pair_pointers,
                                    2,
                                    nullptr,
                                    0,
                                    "0 8 left qs_test::Pair*\n8 8 key unsigned long\n16 8 right qs_test::Pair*\n"};
constexpr std::uint32_t blob_pointers[] = {offsetof(Blob, self)};
const qs::type_descriptor blob_desc{"qs_test::Blob",
                                    sizeof(Blob),
                                    alignof(Blob),
                                    blob_pointers,
                                    1,
                                    nullptr,
                                    0,
                                    "0 320000 words unsigned long[40000]\n320000 8 self qs_test::Blob*\n"};
constexpr std::uint32_t slab_pointers[] = {offsetof(Slab, next)};
const qs::type_descriptor slab_desc{
    "qs_test::Slab",
    sizeof(Slab),
    alignof(Slab),
    slab_pointers,
    1,
    nullptr,
    0,
    "0 8 next qs_test::Slab*\n8 8 value unsigned long\n16 8000 fill unsigned long[1000]\n"};
const qs::type_descriptor base_desc{"qs_test::Base", sizeof(Base), alignof(Base), nullptr, 0, nullptr, 0,
                                    "0 8 a long\n"};

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
