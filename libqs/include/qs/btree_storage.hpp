// qs/btree_storage.hpp: where the nodes of a qs::btree_map live, and what a
// link between two nodes is. The tree's code is one template; this is the
// only part of it that differs between persistent and plain memory, and
// between qs's hardware and software modes.
//
//   qs::btree_map<int, Part*> a;                                // nodes in the database
//   qs::btree_map<int, Part*, std::less<int>, qs::in_memory<>> b;  // nodes in malloc's heap
//
// A storage policy gives:
//   link<N>            what a node holds to name another node (and a long
//                      string key's bytes): qs::ref<N> in the database, which
//                      is N* in hardware mode and a checked object identifier
//                      in software mode; N* in memory;
//   get(l), write(l)   the node's address to read, and to change it (software
//                      mode records the node's before-image there; the other
//                      two cost nothing);
//   make<N>(near)      a new value-initialized node, on the page of `near`
//                      (a node, the tree's header) when it has room, else on
//                      the page the allocator picks next;
//   destroy(l)         frees a node;
//   make_bytes, destroy_bytes   the same for a long string key's bytes;
//   cast<N>(l)         a link to a base (the node header) as one to N.
//
// NodeBytes is a node's size. The default, 8160 bytes, is one node per page
// of 8 KiB (qs's default page size) with its headers in both modes: a node
// never shares its page with other objects, so a tree's pages hold only the
// tree and a program's clusters stay whole. 4064 is one node per 4 KiB page,
// or two per 8 KiB page. A node larger than a page is a large object of its
// own pages: it works, but a page is the unit that moves.
//
// Invariants: a link is null or names a live node of the same tree; in the
// database every node is allocated with its exact type (schema-gen describes
// the node types the program instantiates, so pointer words in keys and
// values are known like any other).
//
// Thread-safety: as the database's objects (in_database), or as plain
// objects (in_memory): one writer, or any number of readers.
#pragma once

#include <qs/persistent.hpp>
#include <qs/ref.hpp>

#include <cstddef>
#include <new>

namespace qs {

inline constexpr std::size_t default_node_bytes = 8160;

// Nodes are persistent objects in the database the tree lives in.
template <std::size_t NodeBytes = default_node_bytes>
struct in_database {
  static constexpr std::size_t node_bytes = NodeBytes;
  static constexpr bool persistent = true;
  template <class N>
  using link = ref<N>;

  template <class N>
  static N* get(const link<N>& l) {
#if QS_SOFTWARE_SWIZZLE
    return l.get();
#else
    return l;
#endif
  }
  template <class N>
  static N* write(const link<N>& l) {
    return qs::write(l);
  }
  template <class N, class U>
  static link<N> cast(const link<U>& l) {
    return static_ref_cast<N>(l);
  }
  template <class N>
  static link<N> make(const void* near) {
    void* p = detail::allocate_near(near, detail::descriptor_of<N>(), sizeof(N));
    return link<N>(::new (p) N());
  }
  template <class N>
  static void destroy(const link<N>& l) {
    if (!l) return;
    N* p = get(l);
    p->~N();
    detail::release(p);
  }
  static link<char> make_bytes(const void* near, std::size_t n) {
    return link<char>(static_cast<char*>(detail::allocate_near(near, detail::descriptor_of<char>(), n)));
  }
  static void destroy_bytes(const link<char>& l) {
    if (l) detail::release(get(l));
  }
};

// Nodes are plain objects (new/delete): the same tree for transient data,
// and the floor qs's trees are measured against.
template <std::size_t NodeBytes = default_node_bytes>
struct in_memory {
  static constexpr std::size_t node_bytes = NodeBytes;
  static constexpr bool persistent = false;
  template <class N>
  using link = N*;

  template <class N>
  static N* get(N* l) noexcept {
    return l;
  }
  template <class N>
  static N* write(N* l) noexcept {
    return l;
  }
  template <class N, class U>
  static N* cast(U* l) noexcept {
    return static_cast<N*>(l);
  }
  template <class N>
  static N* make(const void*) {
    return new N();
  }
  template <class N>
  static void destroy(N* l) noexcept {
    delete l;
  }
  static char* make_bytes(const void*, std::size_t n) { return new char[n]; }
  static void destroy_bytes(char* l) noexcept { delete[] l; }
};

}  // namespace qs
