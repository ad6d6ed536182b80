// types.hpp: persistent types used by the tests, with descriptors written by
// hand in the form schema-gen generates.
#pragma once

#include <qs/qs.hpp>

#include <cstdint>

namespace qs_test {

struct Node {
  QS_PERSISTENT(Node)
  std::int64_t value;
  Node* next;
};

// A 24-byte object with two pointers, for graphs.
struct Pair {
  QS_PERSISTENT(Pair)
  Pair* left;
  std::uint64_t key;
  Pair* right;
};

// Bigger than any page: spans several frames.
struct Blob {
  QS_PERSISTENT(Blob)
  std::uint64_t words[40000];  // 320,000 bytes
  Blob* self;
};

// A large object of two 4 KiB pages whose link and value are on the first:
// a list of them touched by its links leaves every second frame alone.
struct Slab {
  QS_PERSISTENT(Slab)
  Slab* next;
  std::uint64_t value;
  std::uint64_t fill[1000];
};

struct Base {
  QS_PERSISTENT(Base)
  std::int64_t a;
};
struct Derived : Base {  // no QS_PERSISTENT line: allocating it is refused
  std::int64_t b;
};

}  // namespace qs_test
