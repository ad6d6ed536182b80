// qs/btree.hpp: ordered maps that live in the persistent heap, as B+-trees
// of page-sized nodes, at the speed of pointer chasing.
//
//   struct Catalog {
//     QS_PERSISTENT(Catalog)
//     qs::btree_map<int, qs::ref<Part>> by_id;          // unique keys
//     qs::btree_multimap<std::string, qs::ref<Part>> by_name;
//   };
//   Catalog* c = new (db) Catalog;                    // in a transaction
//   c->by_id.insert({42, part});
//   if (auto it = c->by_id.find(42); it != c->by_id.end()) use(it->second);
//   for (auto [name, p] : std::as_const(c->by_name)) ...
//
// The interface is std::map's and std::multimap's where it can be: find,
// lower_bound, upper_bound, equal_range, count, contains, bidirectional
// iterators, insert, emplace, insert_or_assign, operator[], erase, size,
// clear. Differences: an iterator's value is a pair of references
// (`first` a const key reference, or a std::string_view for string keys;
// `second` the value), so `auto& [k, v] = *it` is spelled `auto [k, v] = *it`;
// every insert or erase invalidates every iterator; and a multimap keeps
// equal keys in the order of their values, not in insertion order, so that
// erase_value(k, v) finds its entry in one descent however many share k.
//
// Keys (qs/btree_keys.hpp): trivially copyable types ordered by Compare,
// strings (std::string, or qs::inline_string<N> to choose how many bytes stay
// inline), and std::tuples of two or three of those, ordered part by part.
// Values: any trivially copyable type; a qs::ref<T> (T* in hardware mode) to
// reach objects.
//
// Nodes (qs/btree_storage.hpp): by default (qs::in_database<>) persistent
// objects of 8160 bytes, a page of 8 KiB each (smaller nodes are placed on
// their sibling's or parent's page when it has room); inner nodes hold keys
// and child links, leaves keys and values, and leaves are linked both ways.
// A leaf's entries are in key order in eight segments, each with room to
// spare (btree_leaf), so an insert's commit logs the entries it moved
// within one segment, not the half of the leaf after it.
// Links are qs::ref: a raw pointer in hardware mode, where a lookup is
// pointer chasing over resident pages, and a checked identifier in software
// mode. qs::in_memory<> builds the same tree from new/delete.
//
// qs::btree_set and qs::btree_multiset are the same trees with keys only
// (std::set's and std::multiset's interface; an iterator gives the key, as
// a std::string_view for string keys). Each leaf entry still takes a byte
// for its (empty) value.
//
// Transactions: an update is ordinary writes to persistent objects, logged
// by the commit's page diffs and undone by abort like any other; splits and
// merges allocate and free nodes through the persistent allocator. Updates
// need an open transaction; a tree in the database is constructed in place,
// as a member of a persistent object (its constructor allocates the tree's
// header object next to it) or as a named root (db.root<qs::btree_map<...>>,
// zeroed, which the first insert completes).
//
// Invariants, which check() verifies and which every lookup trusts only as
// far as it checks them (a node whose level, size or mark is wrong raises
// qs::corrupt_btree instead of being followed):
//  * every leaf is at the same depth; a node is at least half full, except
//    the root and the nodes on the right edge (a load in ascending order
//    fills nodes instead of halving them), which hold a key at least;
//  * a leaf's segments hold no more than their slots, and count entries in all;
//  * keys ascend in every node (strictly unless a multimap), and the keys
//    under an inner node's child i lie between its keys i-1 and i inclusive;
//  * leaves are linked in key order both ways, from the header's first to
//    its last; size is the number of entries.
//
// Thread-safety: a tree is an object like any other: one thread updates it,
// or any number read it (hardware mode; software mode's references are used
// by one thread at a time).
#pragma once

#include <qs/btree_keys.hpp>
#include <qs/btree_storage.hpp>
#include <qs/error.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace qs {

// A tree's node is not what a node must be: a level, size or mark that is
// wrong, found by a lookup or by check().
class corrupt_btree : public error {
 public:
  using error::error;
};

namespace detail {

inline constexpr std::uint32_t btree_leaf_mark = 0x7365676c;  // "segl"
// The mark of a leaf of the layout before segments (one sorted array):
// refused by name, not followed.
inline constexpr std::uint32_t btree_sorted_leaf_mark = 0x6c656166;  // "leaf"
inline constexpr std::uint32_t btree_inner_mark = 0x696e6e72;        // "innr"
inline constexpr std::uint32_t btree_meta_mark = 0x62747265;         // "btre"

struct btree_head {
  std::uint16_t count;  // entries (leaf) or keys (inner node)
  std::uint16_t level;  // 0: a leaf
  std::uint32_t mark;
};

// A leaf's entries, in key order, fill the front of its Segs segments
// (eight, or fewer in small nodes): segment s has slots s * Cap / Segs to
// (s + 1) * Cap / Segs - 1, of which the first fill[s] hold entries; the
// slots after them are dead. An insert moves the entries after its place
// within its segment only. A full segment passes an entry on to a
// neighbour with room; when the nearest room is further away, the leaf is
// spread evenly over its segments first, or (when too full for that) the
// entries pass on through the full segments between (a split spreads both
// halves). So a commit's diff of a leaf is mostly a part of one segment,
// not half the node.
template <class Stored, class V, class Nodes, std::size_t Cap, std::size_t Segs>
struct btree_leaf : btree_head {
  typename Nodes::template link<btree_leaf> prev, next;
  std::uint16_t fill[Segs];
  Stored keys[Cap];
  V vals[Cap];
};

template <class Stored, class Nodes, std::size_t Cap>
struct btree_inner : btree_head {
  Stored keys[Cap];
  typename Nodes::template link<btree_head> kids[Cap + 1];
};

template <class Leaf, class Nodes>
struct btree_meta {
  typename Nodes::template link<btree_head> root;
  typename Nodes::template link<Leaf> first, last;
  std::uint64_t size;
  std::uint32_t height;  // levels; 0 when empty
  std::uint32_t mark;
};

// How many entries of `per` bytes fit beside `fixed` bytes in `bytes`,
// leaving room for alignment.
constexpr std::size_t btree_fit(std::size_t bytes, std::size_t fixed, std::size_t per) {
  return bytes > fixed + 16 ? (bytes - fixed - 16) / per : 0;
}

template <class K, class V, class Compare, class Nodes, bool Multi>
class basic_btree {
  using traits = typename btree_key_select<K, Compare, Nodes>::type;
  using stored = typename traits::stored;
  using arg = typename traits::arg;
  template <class N>
  using link = typename Nodes::template link<N>;
  static constexpr std::size_t link_bytes = sizeof(link<btree_head>);
  // Eight segments of three entries at least, or as many as fit.
  static constexpr unsigned segs = static_cast<unsigned>(std::max<std::size_t>(
      1,
      std::min<std::size_t>(
          8, btree_fit(Nodes::node_bytes, sizeof(btree_head) + 2 * link_bytes + 16, sizeof(stored) + sizeof(V)) / 3)));
  static constexpr unsigned seg_cap = static_cast<unsigned>(
      btree_fit(Nodes::node_bytes, sizeof(btree_head) + 2 * link_bytes + 2 * segs, sizeof(stored) + sizeof(V)) / segs);
  static constexpr std::size_t leaf_cap = std::size_t{segs} * seg_cap;
  static constexpr std::size_t inner_cap =
      btree_fit(Nodes::node_bytes, sizeof(btree_head) + link_bytes, sizeof(stored) + link_bytes);
  static_assert(leaf_cap >= 4 && inner_cap >= 4, "qs::btree_map: a node must hold 4 entries; give more node bytes");
  static_assert(leaf_cap < 65536 && inner_cap < 65536, "qs::btree_map: a node holds fewer than 65,536 entries");
  static_assert(std::is_trivially_copyable_v<V>, "a qs::btree_map value is trivially copyable (qs::ref<T> included)");
  using leaf = btree_leaf<stored, V, Nodes, leaf_cap, segs>;
  using inner = btree_inner<stored, Nodes, inner_cap>;
  using meta = btree_meta<leaf, Nodes>;
  static_assert(sizeof(leaf) <= Nodes::node_bytes && sizeof(inner) <= Nodes::node_bytes);
  static constexpr unsigned leaf_min = leaf_cap / 2;
  static constexpr unsigned inner_min = inner_cap / 2;
  static constexpr unsigned max_height = 40;

 public:
  using key_type = typename traits::key_type;
  using mapped_type = V;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using key_compare = Compare;
  using key_view = typename traits::view;
  using key_arg = arg;  // how a key is passed: a view for string keys
  static constexpr std::size_t leaf_capacity = leaf_cap;
  static constexpr std::size_t leaf_segments = segs;
  static constexpr std::size_t inner_capacity = inner_cap;

  template <bool Const>
  class iter {
   public:
    struct reference {
      key_view first;
      std::conditional_t<Const, const V&, V&> second;
    };
    struct pointer {
      reference r;
      const reference* operator->() const noexcept { return &r; }
    };
    using value_type = std::pair<key_type, V>;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::bidirectional_iterator_tag;

    iter() = default;
    template <bool C = Const, class = std::enable_if_t<C>>
    iter(const iter<false>& o) : t_(o.t_), l_(o.l_), i_(o.i_), s_(o.s_) {}

    // In software mode, the non-const form records the leaf's before-image.
    reference operator*() const {
      leaf* p = Const ? Nodes::get(l_) : Nodes::write(l_);
      return {traits::view_of(p->keys[s_]), p->vals[s_]};
    }
    pointer operator->() const { return {**this}; }
    key_view key() const { return traits::view_of(Nodes::get(l_)->keys[s_]); }

    iter& operator++() {
      const leaf* p = Nodes::get(l_);
      if (++i_ >= p->count) {
        l_ = follow(p->next);
        i_ = 0;
        s_ = l_ ? slot_of(Nodes::get(l_), 0) : 0;
      } else if (s_ % seg_cap + 1u < p->fill[s_ / seg_cap]) {
        ++s_;  // the next in its segment
      } else {
        s_ = slot_of(p, i_);
      }
      return *this;
    }
    iter operator++(int) {
      iter r = *this;
      ++*this;
      return r;
    }
    iter& operator--() {
      if (!l_) {
        l_ = follow(t_->header()->last);
        i_ = Nodes::get(l_)->count - 1u;
      } else if (i_ == 0) {
        l_ = follow(Nodes::get(l_)->prev);
        i_ = Nodes::get(l_)->count - 1u;
      } else {
        --i_;
      }
      s_ = slot_of(Nodes::get(l_), i_);
      return *this;
    }
    iter operator--(int) {
      iter r = *this;
      --*this;
      return r;
    }
    friend bool operator==(const iter& a, const iter& b) { return a.l_ == b.l_ && a.i_ == b.i_; }

   private:
    friend class basic_btree;
    friend class iter<!Const>;
    iter(const basic_btree* t, link<leaf> l, unsigned i) : t_(t), l_(l), i_(i), s_(l ? slot_of(Nodes::get(l), i) : 0) {}
    const basic_btree* t_ = nullptr;
    link<leaf> l_{};
    unsigned i_ = 0;  // the entry, in key order
    unsigned s_ = 0;  // its slot
  };
  using iterator = iter<false>;
  using const_iterator = iter<true>;

  // In the database: allocates the tree's header object next to the tree
  // (so the tree must be inside a persistent object, in a transaction).
  basic_btree() {
    if constexpr (Nodes::persistent) create_header();
  }
  basic_btree(const basic_btree&) = delete;
  basic_btree& operator=(const basic_btree&) = delete;
  // Frees every node (in the database: in the transaction that deletes the
  // object holding the tree).
  ~basic_btree() {
    if (!header_) return;
    clear();
    Nodes::destroy(header_);
  }

  size_type size() const { return header_ ? Nodes::get(header_)->size : 0; }
  bool empty() const { return size() == 0; }
  // Levels of nodes (1: the root is a leaf; 0: empty).
  unsigned height() const { return header_ ? Nodes::get(header_)->height : 0; }

  iterator begin() { return iterator(this, follow(first_leaf()), 0); }
  iterator end() { return iterator(this, {}, 0); }
  const_iterator begin() const { return const_iterator(this, follow(first_leaf()), 0); }
  const_iterator end() const { return const_iterator(this, {}, 0); }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }

  iterator lower_bound(arg k) { return make_iter<iterator>(descend<false>(k, nullptr)); }
  const_iterator lower_bound(arg k) const { return make_iter<const_iterator>(descend<false>(k, nullptr)); }
  iterator upper_bound(arg k) { return make_iter<iterator>(descend<true>(k, nullptr)); }
  const_iterator upper_bound(arg k) const { return make_iter<const_iterator>(descend<true>(k, nullptr)); }
  iterator find(arg k) { return find_impl<iterator>(k); }
  const_iterator find(arg k) const { return find_impl<const_iterator>(k); }
  bool contains(arg k) const { return find(k) != end(); }
  size_type count(arg k) const {
    size_type n = 0;
    for (auto it = lower_bound(k); it != end() && !traits::after(Compare{}, key_at(it), k); ++it) ++n;
    return n;
  }
  std::pair<iterator, iterator> equal_range(arg k) { return {lower_bound(k), upper_bound(k)}; }
  std::pair<const_iterator, const_iterator> equal_range(arg k) const { return {lower_bound(k), upper_bound(k)}; }

  // Inserts (k, v). A map refuses a key it has (the bool is false and the
  // iterator names the entry); a multimap puts it among the equal keys in
  // the order of their values, after those with an equal value (see
  // value_before).
  std::pair<iterator, bool> insert(arg k, const V& v) { return insert_impl(k, v); }
  std::pair<iterator, bool> insert(const std::pair<key_type, V>& kv) { return insert_impl(arg(kv.first), kv.second); }
  template <class A, class B>
  std::pair<iterator, bool> insert(const std::pair<A, B>& kv) {
    return insert_impl(arg(kv.first), V(kv.second));
  }
  template <class... A>
  std::pair<iterator, bool> emplace(arg k, A&&... a) {
    return insert_impl(k, V(std::forward<A>(a)...));
  }
  // Maps only: sets k's value, inserting it when absent.
  std::pair<iterator, bool> insert_or_assign(arg k, const V& v) {
    static_assert(!Multi, "insert_or_assign is a map's");
    auto r = insert_impl(k, v);
    if (!r.second) (*r.first).second = v;
    return r;
  }
  V& operator[](arg k) {
    static_assert(!Multi, "operator[] is a map's");
    return (*insert_impl(k, V{}).first).second;
  }
  const V& at(arg k) const {
    auto it = find(k);
    if (it == end()) throw std::out_of_range("qs::btree_map::at: no such key");
    return (*it).second;
  }
  V& at(arg k) {
    auto it = find(k);
    if (it == end()) throw std::out_of_range("qs::btree_map::at: no such key");
    return (*it).second;
  }

  // Removes the entry at `at`; returns the iterator to the entry after it.
  iterator erase(const_iterator at) {
    path p;
    link<leaf> l = locate(at, p);
    return erase_at(p, l, at.i_);
  }
  iterator erase(iterator at) { return erase(const_iterator(at)); }
  // Removes every entry with key k; returns how many.
  size_type erase(arg k) {
    size_type n = 0;
    for (auto it = find(k); it != end() && !traits::after(Compare{}, key_at(it), k); ++n) it = erase(it);
    return n;
  }
  // Removes an entry (k, v): in a multimap, found by one descent where its
  // equal keys are in the order of their values (see value_before), else
  // the first along them; false when there is none.
  bool erase_value(arg k, const V& v) {
    if constexpr (by_value) {
      path p;
      slot at = descend_entry<false>(k, v, &p);
      link<leaf> l = at.l;
      unsigned i = at.i;
      if (l && i >= Nodes::get(l)->count) {  // after a leaf's last entry: the next leaf's first
        i = 0;
        if (!next_leaf(p, l)) l = {};
      }
      if (l) {
        const leaf* lf = static_cast<const leaf*>(visit(l, 0));
        if (i < lf->count) {
          const unsigned s = slot_of(lf, i);
          if (!traits::after(Compare{}, lf->keys[s], k) && lf->vals[s] == v) {
            erase_at(p, l, i);
            return true;
          }
        }
      }
    }
    for (auto it = lower_bound(k); it != end(); ++it) {
      if (traits::after(Compare{}, key_at(it), k)) return false;
      if (value_at(it) == v) {
        erase(it);
        return true;
      }
    }
    return false;
  }

  void clear() {
    if (!header_) return;
    const meta* m = Nodes::get(header_);
    if (!m->root) return;
    free_subtree(m->root, m->height - 1);
    meta* w = Nodes::write(header_);
    w->root = {};
    w->first = w->last = {};
    w->size = 0;
    w->height = 0;
  }

  // Walks the whole tree and throws qs::corrupt_btree naming the first
  // node that breaks an invariant (see above).
  void check() const {
    if (!header_) return;
    const meta* m = Nodes::get(header_);
    if (m->mark != btree_meta_mark) corrupt("the tree's header has no header mark");
    if (!m->root) {
      if (m->size != 0 || m->height != 0 || m->first || m->last) corrupt("an empty tree's header is not empty");
      return;
    }
    if (m->height == 0 || m->height > max_height) corrupt("the tree's height " + std::to_string(m->height));
    walk w;
    check_node(m->root, m->height - 1, nullptr, nullptr, true, w);
    if (w.entries != m->size)
      corrupt("the header counts " + std::to_string(m->size) + " entries, the leaves " + std::to_string(w.entries));
    if (!(w.last == m->last)) corrupt("the header's last leaf is not the last leaf");
    if (Nodes::get(w.last)->next) corrupt("the last leaf links to a next one");
    if (!(first_leaf() == w.first)) corrupt("the header's first leaf is not the first leaf");
  }

 private:
  struct step {
    link<btree_head> node;  // an inner node
    unsigned idx;           // the child taken
  };
  struct path {
    step s[max_height];
    unsigned depth = 0;  // inner nodes above the leaf
  };
  struct slot {
    link<leaf> l;
    unsigned i;
  };

  [[noreturn]] static void corrupt(const std::string& what) { throw corrupt_btree("qs::btree_map: " + what); }
  static std::string where(const void* p) {
    char b[32];
    std::snprintf(b, sizeof b, "%p", p);
    return b;
  }
  // A node to follow: its mark, level and size are what the tree expects.
  static const btree_head* visit(const link<btree_head>& l, unsigned level) {
    const btree_head* h = Nodes::get(l);
    if (!h) corrupt("a null link to a node of level " + std::to_string(level));
    bool is_leaf = level == 0;
    if (is_leaf && h->mark == btree_sorted_leaf_mark && h->level == 0)
      corrupt("the leaf at " + where(h) +
              " has the layout of a qs before leaves had segments (one sorted array); this qs "
              "does not read such a tree: read it with the qs that wrote it");
    if (h->level != level || h->mark != (is_leaf ? btree_leaf_mark : btree_inner_mark) ||
        h->count > (is_leaf ? leaf_cap : inner_cap) || (!is_leaf && h->count == 0))
      corrupt("the node at " + where(h) + " (level " + std::to_string(h->level) + ", " + std::to_string(h->count) +
              " keys, mark " + std::to_string(h->mark) + ") is not a node of level " + std::to_string(level) +
              " of this tree");
    if (is_leaf) {
      const leaf* lf = static_cast<const leaf*>(h);
      unsigned sum = 0;
      for (unsigned s = 0; s < segs; ++s) {
        if (lf->fill[s] > seg_cap)
          corrupt("the leaf at " + where(h) + " has " + std::to_string(lf->fill[s]) + " entries in its segment " +
                  std::to_string(s) + " of " + std::to_string(seg_cap) + " slots");
        sum += lf->fill[s];
      }
      if (sum != lf->count)
        corrupt("the leaf at " + where(h) + " counts " + std::to_string(lf->count) + " entries, its segments " +
                std::to_string(sum));
    }
    return h;
  }

  const meta* header() const { return Nodes::get(header_); }
  // A leaf an iterator moves to along the leaf links (null: the end): its
  // mark, level and size are checked like those of a node a lookup follows,
  // and it holds an entry.
  static link<leaf> follow(const link<leaf>& l) {
    if (l && visit(l, 0)->count == 0) corrupt("the leaf at " + where(Nodes::get(l)) + " linked from another is empty");
    return l;
  }
  link<leaf> first_leaf() const { return header_ ? Nodes::get(header_)->first : link<leaf>{}; }

  void create_header() {
    link<meta> h;
    try {
      h = Nodes::template make<meta>(this);
    } catch (const invalid_argument& e) {
      throw invalid_argument("qs::btree_map at " + where(this) +
                             ": a tree whose nodes are in the database (qs::in_database) lives in a persistent object "
                             "or a named root, not in transient memory; qs::in_memory makes a transient tree (" +
                             e.what() + ")");
    }
    Nodes::write(h)->mark = btree_meta_mark;
    header_ = h;
  }

  // The slot of a leaf's i-th entry in key order (i < count; the leaf was
  // visited, so its segments add up to its count).
  static unsigned slot_of(const leaf* lf, unsigned i) {
    for (unsigned s = 0, before = 0; s < segs; ++s) {
      const unsigned f = lf->fill[s];
      if (i < before + f) return s * seg_cap + (i - before);
      before += f;
    }
    bad_slot(lf, i);
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void bad_slot(const leaf* lf, unsigned i) {
    corrupt("the leaf at " + where(lf) + " has no entry " + std::to_string(i) + " in its segments");
  }
  static const stored& leaf_key(const leaf* lf, unsigned i) { return lf->keys[slot_of(lf, i)]; }
  template <class It>
  static const stored& key_at(const It& it) {
    return Nodes::get(it.l_)->keys[it.s_];
  }
  static const V& value_at(const const_iterator& it) { return Nodes::get(it.l_)->vals[it.s_]; }

  // The first entry at or after `p`'s slot.
  template <class It>
  It make_iter(slot p) const {
    if (!p.l) return It(this, {}, 0);
    const leaf* lf = Nodes::get(p.l);
    if (p.i >= lf->count) return It(this, follow(lf->next), 0);
    return It(this, p.l, p.i);
  }

  template <class It>
  It find_impl(arg k) const {
    It it = make_iter<It>(descend<false>(k, nullptr));
    if (it.l_ && !traits::after(Compare{}, leaf_key(Nodes::get(it.l_), it.i_), k)) return it;
    return It(this, {}, 0);
  }

  // The first of n keys (key(i), ascending) >= k (> k when Upper).
  template <bool Upper, class Key>
  static unsigned search(unsigned n, Key key, arg k) {
    Compare c{};
    unsigned lo = 0, hi = n;
    while (lo < hi) {
      unsigned mid = (lo + hi) / 2;
      const stored& at = key(mid);
      bool right = Upper ? !traits::after(c, at, k) : traits::before(c, at, k);
      if (right) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // From the root down: child choose(node, level) of each inner node (the
  // nodes and children taken into *p), then the slot place(leaf) in the
  // leaf reached.
  template <class Choose, class Place>
  slot descend_with(path* p, Choose choose, Place place) const {
    if (!header_) return {{}, 0};
    const meta* m = Nodes::get(header_);
    if (!m->root) return {{}, 0};
    if (m->height == 0 || m->height > max_height) corrupt("the tree's height " + std::to_string(m->height));
    link<btree_head> at = m->root;
    unsigned level = m->height - 1;
    if (p) p->depth = 0;
    while (level > 0) {
      const inner* n = static_cast<const inner*>(visit(at, level));
      const unsigned i = choose(n, level);
      if (p) p->s[p->depth++] = {at, i};
      at = n->kids[i];
      --level;
    }
    return {Nodes::template cast<leaf>(at), place(static_cast<const leaf*>(visit(at, 0)))};
  }

  // The leaf and slot where the first key >= k (> k when Upper) is, or would
  // go; the inner nodes on the way into *p.
  template <bool Upper>
  slot descend(arg k, path* p) const {
    return descend_with(
        p,
        [&k](const inner* n, unsigned) {
          return search<Upper>(
              n->count, [n](unsigned j) -> const stored& { return n->keys[j]; }, k);
        },
        [&k](const leaf* lf) { return search_leaf<Upper>(lf, k); });
  }

  // The place in a leaf (an entry index in key order) of the first key >= k
  // (> k when Upper): in the first segment whose last key is.
  template <bool Upper>
  static unsigned search_leaf(const leaf* lf, arg k) {
    Compare c{};
    unsigned before = 0;
    for (unsigned s = 0; s < segs; ++s) {
      const unsigned f = lf->fill[s];
      if (f == 0) continue;
      const stored* keys = lf->keys + s * seg_cap;
      if (Upper ? traits::after(c, keys[f - 1], k) : !traits::before(c, keys[f - 1], k))
        return before + search<Upper>(
                            f, [keys](unsigned j) -> const stored& { return keys[j]; }, k);
      before += f;
    }
    return before;
  }

  // A multimap's equal keys are kept in the order of their values, so that
  // one descent finds or places an entry (k, v): value_before is V's
  // operator< where it has one (a pointer's address), else the order of its
  // bytes. It orders where entries go, and no lookup trusts it: a value
  // changed through an iterator, a pointer rewritten when its page moved,
  // or a tree whose equal keys an earlier qs kept in insertion order leave
  // it unordered, and erase_value then looks along the equal keys. A
  // multiset's empty values are all equal: its equal keys stay in insertion
  // order.
  static constexpr bool by_value = Multi && !std::is_empty_v<V>;
  static bool value_before(const V& a, const V& b) {
    if constexpr (requires(const V& x, const V& y) {
                    { x < y } -> std::convertible_to<bool>;
                  }) {
      return std::less<V>{}(a, b);
    } else {
      return std::memcmp(&a, &b, sizeof(V)) < 0;
    }
  }
  // Whether the entry (ek, ev) comes before (k, v) (at or before, Upper).
  template <bool Upper>
  static bool entry_before(const stored& ek, const V& ev, arg k, const V& v) {
    Compare c{};
    if (traits::before(c, ek, k)) return true;
    if (traits::after(c, ek, k)) return false;
    return Upper ? !value_before(v, ev) : value_before(ev, v);
  }
  // The first entry under node `at` of level `level`: its leaf and slot.
  static std::pair<const leaf*, unsigned> first_entry(link<btree_head> at, unsigned level) {
    for (; level > 0; --level) at = static_cast<const inner*>(visit(at, level))->kids[0];
    const leaf* lf = static_cast<const leaf*>(visit(at, 0));
    if (lf->count == 0) corrupt("the leaf at " + where(lf) + " under an inner node is empty");
    return {lf, slot_of(lf, 0)};
  }
  // The leaf and slot where the first entry >= (k, v) (> (k, v) when Upper)
  // is, or would go; the inner nodes on the way into *p. Where separators
  // equal k, the children after them begin with entries of key k, and the
  // one to take is found by their first entries.
  template <bool Upper>
  slot descend_entry(arg k, const V& v, path* p) const {
    return descend_with(
        p,
        [&k, &v](const inner* n, unsigned level) {
          auto key = [n](unsigned j) -> const stored& { return n->keys[j]; };
          // The last of children i .. last whose first entry comes before
          // (last: the child after the separators equal to k).
          unsigned i = search<false>(n->count, key, k), last = i;
          if (i < n->count && !traits::after(Compare{}, n->keys[i], k)) last = search<true>(n->count, key, k);
          while (i < last) {
            const unsigned mid = i + (last - i + 1) / 2;
            auto [lf, s] = first_entry(n->kids[mid], level - 1);
            if (entry_before<Upper>(lf->keys[s], lf->vals[s], k, v)) i = mid;
            else last = mid - 1;
          }
          return i;
        },
        [&k, &v](const leaf* lf) { return search_leaf_entry<Upper>(lf, k, v); });
  }
  // The place in a leaf of the first entry >= (k, v) (> (k, v) when
  // Upper): in the first segment whose last entry is, as search_leaf.
  template <bool Upper>
  static unsigned search_leaf_entry(const leaf* lf, arg k, const V& v) {
    unsigned before = 0;
    for (unsigned s = 0; s < segs; ++s) {
      const unsigned f = lf->fill[s];
      if (f == 0) continue;
      const stored* keys = lf->keys + s * seg_cap;
      const V* vals = lf->vals + s * seg_cap;
      if (!entry_before<Upper>(keys[f - 1], vals[f - 1], k, v)) {
        unsigned lo = 0, hi = f - 1;
        while (lo < hi) {
          const unsigned mid = (lo + hi) / 2;
          if (entry_before<Upper>(keys[mid], vals[mid], k, v)) lo = mid + 1;
          else hi = mid;
        }
        return before + lo;
      }
      before += f;
    }
    return before;
  }

  // The path to the leaf of `it` (which must be in the tree).
  link<leaf> locate(const const_iterator& it, path& p) const {
    if (!it.l_) throw invalid_argument("qs::btree_map: erase of end()");
    const leaf* target = Nodes::get(it.l_);
    slot at = descend<false>(traits::view_of(leaf_key(target, it.i_)), &p);
    for (unsigned hops = 0;; ++hops) {
      if (at.l == it.l_) return at.l;
      if (!next_leaf(p, at.l) || hops > size()) corrupt("an iterator's leaf is not on the path of its key");
    }
  }

  // Moves the path to the leaf after `l`; false at the last leaf.
  bool next_leaf(path& p, link<leaf>& l) const {
    unsigned d = p.depth;
    while (d > 0) {
      const inner* n = static_cast<const inner*>(Nodes::get(p.s[d - 1].node));
      if (p.s[d - 1].idx < n->count) break;
      --d;
    }
    if (d == 0) return false;
    ++p.s[d - 1].idx;
    link<btree_head> at = static_cast<const inner*>(Nodes::get(p.s[d - 1].node))->kids[p.s[d - 1].idx];
    for (; d < p.depth; ++d) {
      p.s[d] = {at, 0};
      at = static_cast<const inner*>(Nodes::get(at))->kids[0];
    }
    l = Nodes::template cast<leaf>(at);
    return true;
  }

  meta* writable_header() {
    if (!header_) create_header();
    return Nodes::write(header_);
  }

  std::pair<iterator, bool> insert_impl(arg k, const V& v) {
    if (!header_ || !Nodes::get(header_)->root) {
      meta* m = writable_header();
      link<leaf> l = Nodes::template make<leaf>(m);
      Nodes::write(l)->mark = btree_leaf_mark;
      m->root = l;
      m->first = m->last = l;
      m->height = 1;
    }
    path p;
    slot at;
    if constexpr (by_value) at = descend_entry<true>(k, v, &p);
    else at = Multi ? descend<true>(k, &p) : descend<false>(k, &p);
    if constexpr (!Multi) {
      iterator it = make_iter<iterator>(at);
      if (it.l_ && !traits::after(Compare{}, leaf_key(Nodes::get(it.l_), it.i_), k)) return {it, false};
    }
    meta* m = writable_header();
    ++m->size;
    leaf* lf = Nodes::write(at.l);
    if (lf->count < leaf_cap) {
      put_entry(lf, at.i, traits::make(k, lf), v);
      return {iterator(this, at.l, at.i), true};
    }
    // Split: the left leaf keeps half, the right one (new, next to it) the
    // rest, and the new entry goes where it belongs; but an entry appended
    // after the last key of the last leaf (ascending keys, the common load)
    // leaves the left leaf full and starts the right one, so that a tree
    // loaded in order has full nodes, not half-full ones.
    constexpr unsigned n = leaf_cap;
    const bool append = !lf->next && at.i == n;
    const unsigned lm = append ? n : (n + 1) / 2;
    link<leaf> rl = Nodes::template make<leaf>(lf);
    leaf* r = Nodes::write(rl);
    r->mark = btree_leaf_mark;
    slot result;
    if (at.i < lm) {
      split_leaf(lf, r, lm - 1);
      put_entry(lf, at.i, traits::make(k, lf), v);
      result = {at.l, at.i};
    } else {
      split_leaf(lf, r, lm);
      put_entry(r, at.i - lm, traits::make(k, r), v);
      result = {rl, at.i - lm};
    }
    r->next = lf->next;
    r->prev = at.l;
    if (lf->next) Nodes::write(lf->next)->prev = rl;
    else m->last = rl;
    lf->next = rl;
    const void* near = p.depth ? static_cast<const void*>(Nodes::get(p.s[p.depth - 1].node)) : lf;
    insert_up(p, m, traits::copy(leaf_key(lf, lf->count - 1u), near), rl, append);
    return {iterator(this, result.l, result.i), true};
  }

  // Where an entry inserted as the leaf's i-th (i <= count) goes: segment
  // and position in it; at the end of a full segment, the next one's start.
  struct seg_place {
    unsigned s, j;
  };
  static seg_place insert_place(const leaf* lf, unsigned i) {
    unsigned before = 0;
    for (unsigned s = 0; s < segs; ++s) {
      const unsigned f = lf->fill[s];
      if (i <= before + f && !(i == before + f && f == seg_cap && s + 1 < segs)) return {s, i - before};
      before += f;
    }
    bad_slot(lf, i);
  }
  static void move_in_segment(leaf* lf, unsigned s, unsigned from, unsigned to, unsigned n) {
    stored* k = lf->keys + s * seg_cap;
    V* v = lf->vals + s * seg_cap;
    std::memmove(static_cast<void*>(k + to), static_cast<const void*>(k + from), n * sizeof(stored));
    std::memmove(static_cast<void*>(v + to), static_cast<const void*>(v + from), n * sizeof(V));
  }
  // Makes (k, v) the leaf's i-th entry in key order (i <= count < cap).
  // In a full segment, the entry goes in and the segment's last (or first)
  // entry passes on to the next (or previous) segment, and so on to the
  // nearest segment with room.
  // When the nearest room is further than a neighbour and every segment
  // can have some, the leaf is spread evenly first (a leaf filled from its
  // start, as the tree's first leaf is, gets room everywhere at once).
  static void put_entry(leaf* lf, unsigned i, const stored& k, const V& v) {
    seg_place at = insert_place(lf, i);
    unsigned t = at.s;  // the nearest segment with room
    for (unsigned d = 1; lf->fill[t] == seg_cap; ++d) {
      if (d >= segs) bad_slot(lf, i);  // full: the caller splits first
      if (at.s + d < segs && lf->fill[at.s + d] < seg_cap) t = at.s + d;
      else if (at.s >= d && lf->fill[at.s - d] < seg_cap) t = at.s - d;
    }
    if ((t > at.s + 1 || t + 1 < at.s) && lf->count < segs * (seg_cap - 1)) {
      spread(lf);
      at = insert_place(lf, i);
      t = at.s;
    }
    stored ck = k;
    V cv = v;
    unsigned j = at.j;
    for (unsigned u = at.s; u < t; ++u, j = 0) {  // passing the last entry on to the right
      const unsigned last = u * seg_cap + seg_cap - 1;
      const stored nk = lf->keys[last];
      const V nv = lf->vals[last];
      move_in_segment(lf, u, j, j + 1, seg_cap - 1 - j);
      lf->keys[u * seg_cap + j] = ck;
      lf->vals[u * seg_cap + j] = cv;
      ck = nk;
      cv = nv;
    }
    for (unsigned u = at.s; u > t; --u, j = seg_cap) {  // passing the first entry on to the left
      if (j == 0) continue;                             // the entry itself goes before this segment
      const stored nk = lf->keys[u * seg_cap];
      const V nv = lf->vals[u * seg_cap];
      move_in_segment(lf, u, 1, 0, j - 1);
      lf->keys[u * seg_cap + j - 1] = ck;
      lf->vals[u * seg_cap + j - 1] = cv;
      ck = nk;
      cv = nv;
    }
    if (t < at.s) j = lf->fill[t];  // appended to the segment on the left
    const unsigned f = lf->fill[t];
    move_in_segment(lf, t, j, j + 1, f - j);
    lf->keys[t * seg_cap + j] = ck;
    lf->vals[t * seg_cap + j] = cv;
    ++lf->fill[t];
    ++lf->count;
  }
  // Takes the leaf's i-th entry out (its key is not released).
  static void remove_entry(leaf* lf, unsigned i) {
    const unsigned at = slot_of(lf, i), s = at / seg_cap, j = at % seg_cap;
    move_in_segment(lf, s, j + 1, j, lf->fill[s] - j - 1u);
    --lf->fill[s];
    --lf->count;
  }
  // A leaf's entries, copied out in key order.
  struct leaf_entries {
    stored keys[leaf_cap * 2];
    V vals[leaf_cap * 2];
    unsigned n = 0;
    void add(const leaf* lf) {
      for (unsigned s = 0; s < segs; ++s)
        for (unsigned j = 0; j < lf->fill[s]; ++j, ++n) {
          keys[n] = lf->keys[s * seg_cap + j];
          vals[n] = lf->vals[s * seg_cap + j];
        }
    }
  };
  // Lays entries first..first+n-1 of `e` evenly over the segments of `to`:
  // every segment gets n / segs entries or one more, the first ones the more.
  static void lay_out(leaf* to, const leaf_entries& e, unsigned first, unsigned n) {
    for (unsigned s = 0, i = first; s < segs; ++s) {
      const unsigned f = n / segs + (s < n % segs ? 1u : 0u);
      for (unsigned j = 0; j < f; ++j, ++i) {
        to->keys[s * seg_cap + j] = e.keys[i];
        to->vals[s * seg_cap + j] = e.vals[i];
      }
      to->fill[s] = static_cast<std::uint16_t>(f);
    }
    to->count = static_cast<std::uint16_t>(n);
  }
  // Spreads the leaf's entries evenly over its segments, with those of
  // `more` (its right sibling, merged into it) after them.
  static void spread(leaf* lf, const leaf* more = nullptr) {
    leaf_entries e;
    e.add(lf);
    if (more) e.add(more);
    lay_out(lf, e, 0, e.n);
  }
  // A full leaf splits: `r` (new, empty) takes its entries from `keep` on,
  // and both are spread. A leaf whose entries all stay (an ascending load)
  // is left as it is: full, its segments in order.
  static void split_leaf(leaf* lf, leaf* r, unsigned keep) {
    if (keep == lf->count) return;
    leaf_entries e;
    e.add(lf);
    lay_out(lf, e, 0, keep);
    lay_out(r, e, keep, e.n - keep);
  }

  // Puts separator `sep` and the new right sibling `right` into the parents
  // on the path, splitting full ones, and a new root on top if the root split.
  // `append`: the split was of the last leaf, at its end; the inner nodes on
  // the right edge then split leaving their left part full too.
  void insert_up(path& p, meta* m, stored sep, link<btree_head> right, bool append) {
    unsigned d = p.depth;
    while (d > 0) {
      --d;
      link<btree_head> pl = p.s[d].node;
      inner* n = static_cast<inner*>(Nodes::write(pl));
      unsigned i = p.s[d].idx;
      if (n->count < inner_cap) {
        for (unsigned j = n->count; j > i; --j) {
          n->keys[j] = n->keys[j - 1];
          n->kids[j + 1] = n->kids[j];
        }
        n->keys[i] = sep;
        n->kids[i + 1] = right;
        ++n->count;
        return;
      }
      // Split: of the cap + 1 keys, the left node keeps lk, the next goes
      // up, the right node (new, next to it) takes the rest.
      stored keys[inner_cap + 1];
      link<btree_head> kids[inner_cap + 2];
      for (unsigned j = 0, o = 0; j <= inner_cap; ++j) {
        if (j == i) keys[o++] = sep;
        if (j < inner_cap) keys[o++] = n->keys[j];
      }
      for (unsigned j = 0, o = 0; j <= inner_cap; ++j) {
        kids[o++] = n->kids[j];
        if (j == i) kids[o++] = right;
      }
      const unsigned lk = append && i == inner_cap ? inner_cap - 1 : (inner_cap + 1) / 2;
      link<inner> rl = Nodes::template make<inner>(n);
      inner* r = Nodes::write(rl);
      r->mark = btree_inner_mark;
      r->level = n->level;
      for (unsigned j = 0; j < lk; ++j) n->keys[j] = keys[j];
      for (unsigned j = 0; j <= lk; ++j) n->kids[j] = kids[j];
      n->count = static_cast<std::uint16_t>(lk);
      unsigned rk = inner_cap - lk;
      for (unsigned j = 0; j < rk; ++j) r->keys[j] = keys[lk + 1 + j];
      for (unsigned j = 0; j <= rk; ++j) r->kids[j] = kids[lk + 1 + j];
      r->count = static_cast<std::uint16_t>(rk);
      sep = keys[lk];
      right = rl;
    }
    link<inner> rootl = Nodes::template make<inner>(Nodes::get(m->root));
    inner* root = Nodes::write(rootl);
    root->mark = btree_inner_mark;
    root->level = static_cast<std::uint16_t>(m->height);
    root->count = 1;
    root->keys[0] = sep;
    root->kids[0] = m->root;
    root->kids[1] = right;
    m->root = rootl;
    ++m->height;
  }

  // Removes entry i of leaf l (reached by p) and rebalances; returns the
  // iterator to the entry that followed it.
  iterator erase_at(path& p, link<leaf> l, unsigned i) {
    meta* m = Nodes::write(header_);
    leaf* lf = Nodes::write(l);
    traits::release(lf->keys[slot_of(lf, i)]);
    remove_entry(lf, i);
    --m->size;
    slot cursor{l, i};
    if (p.depth == 0) {
      if (lf->count == 0) {
        Nodes::destroy(l);
        m->root = {};
        m->first = m->last = {};
        m->height = 0;
        return end();
      }
      return make_iter<iterator>(cursor);
    }
    if (lf->count >= leaf_min) return make_iter<iterator>(cursor);
    if (rebalance_leaf(p, m, lf, cursor)) rebalance_inner(p, m);
    return make_iter<iterator>(cursor);
  }

  // A leaf below half: borrow from a sibling, or merge with one. True when
  // the parent lost a key.
  bool rebalance_leaf(path& p, meta* m, leaf* lf, slot& cursor) {
    step& up = p.s[p.depth - 1];
    inner* parent = static_cast<inner*>(Nodes::write(up.node));
    unsigned i = up.idx;
    if (i > 0) {
      link<leaf> sl = Nodes::template cast<leaf>(parent->kids[i - 1]);
      if (Nodes::get(sl)->count > leaf_min) {
        leaf* s = Nodes::write(sl);
        const unsigned at = slot_of(s, s->count - 1u);
        put_entry(lf, 0, s->keys[at], s->vals[at]);
        remove_entry(s, s->count - 1u);
        traits::release(parent->keys[i - 1]);
        parent->keys[i - 1] = traits::copy(leaf_key(s, s->count - 1u), parent);
        ++cursor.i;
        return false;
      }
    }
    if (i < parent->count) {
      link<leaf> sl = Nodes::template cast<leaf>(parent->kids[i + 1]);
      if (Nodes::get(sl)->count > leaf_min) {
        leaf* s = Nodes::write(sl);
        const unsigned at = slot_of(s, 0);
        put_entry(lf, lf->count, s->keys[at], s->vals[at]);
        remove_entry(s, 0);
        traits::release(parent->keys[i]);
        parent->keys[i] = traits::copy(leaf_key(lf, lf->count - 1u), parent);
        return false;
      }
    }
    // Merge the right one of the pair into the left one.
    unsigned li = i > 0 ? i - 1 : i;
    link<leaf> left_l = Nodes::template cast<leaf>(parent->kids[li]);
    link<leaf> right_l = Nodes::template cast<leaf>(parent->kids[li + 1]);
    leaf* left = Nodes::write(left_l);
    leaf* right = Nodes::write(right_l);
    if (cursor.l == right_l) cursor = {left_l, left->count + cursor.i};
    spread(left, right);
    left->next = right->next;
    if (right->next) Nodes::write(right->next)->prev = left_l;
    else m->last = left_l;
    Nodes::destroy(right_l);
    remove_key(parent, li, true);
    return true;
  }

  // Removes key k and the child after it from an inner node.
  static void remove_key(inner* n, unsigned k, bool release) {
    if (release) traits::release(n->keys[k]);
    for (unsigned j = k + 1; j < n->count; ++j) n->keys[j - 1] = n->keys[j];
    for (unsigned j = k + 2; j <= n->count; ++j) n->kids[j - 1] = n->kids[j];
    --n->count;
  }

  // Inner nodes on the path that fell below half, from the leaf's parent up.
  void rebalance_inner(path& p, meta* m) {
    for (unsigned d = p.depth; d-- > 0;) {
      link<btree_head> nl = p.s[d].node;
      inner* n = static_cast<inner*>(Nodes::write(nl));
      if (d == 0) {
        if (n->count == 0) {  // the root has one child left: it becomes the root
          m->root = n->kids[0];
          --m->height;
          Nodes::destroy(Nodes::template cast<inner>(nl));
        }
        return;
      }
      if (n->count >= inner_min) return;
      inner* parent = static_cast<inner*>(Nodes::write(p.s[d - 1].node));
      unsigned i = p.s[d - 1].idx;
      if (i > 0) {
        link<btree_head> sl = parent->kids[i - 1];
        if (Nodes::get(sl)->count > inner_min) {  // rotate right through the parent
          inner* s = static_cast<inner*>(Nodes::write(sl));
          for (unsigned j = n->count; j > 0; --j) n->keys[j] = n->keys[j - 1];
          for (unsigned j = n->count + 1; j > 0; --j) n->kids[j] = n->kids[j - 1];
          n->keys[0] = parent->keys[i - 1];
          n->kids[0] = s->kids[s->count];
          ++n->count;
          parent->keys[i - 1] = s->keys[s->count - 1];
          --s->count;
          return;
        }
      }
      if (i < parent->count) {
        link<btree_head> sl = parent->kids[i + 1];
        if (Nodes::get(sl)->count > inner_min) {  // rotate left through the parent
          inner* s = static_cast<inner*>(Nodes::write(sl));
          n->keys[n->count] = parent->keys[i];
          n->kids[n->count + 1] = s->kids[0];
          ++n->count;
          parent->keys[i] = s->keys[0];
          for (unsigned j = 1; j < s->count; ++j) s->keys[j - 1] = s->keys[j];
          for (unsigned j = 1; j <= s->count; ++j) s->kids[j - 1] = s->kids[j];
          --s->count;
          return;
        }
      }
      unsigned li = i > 0 ? i - 1 : i;
      link<btree_head> left_l = parent->kids[li], right_l = parent->kids[li + 1];
      inner* left = static_cast<inner*>(Nodes::write(left_l));
      inner* right = static_cast<inner*>(Nodes::write(right_l));
      unsigned c = left->count;
      left->keys[c] = parent->keys[li];
      for (unsigned j = 0; j < right->count; ++j) left->keys[c + 1 + j] = right->keys[j];
      for (unsigned j = 0; j <= right->count; ++j) left->kids[c + 1 + j] = right->kids[j];
      left->count = static_cast<std::uint16_t>(c + 1 + right->count);
      Nodes::destroy(Nodes::template cast<inner>(right_l));
      remove_key(parent, li, false);
    }
  }

  void free_subtree(link<btree_head> at, unsigned level) {
    if (level == 0) {
      link<leaf> l = Nodes::template cast<leaf>(at);
      leaf* lf = Nodes::write(l);
      for (unsigned j = 0; j < lf->count; ++j) traits::release(lf->keys[slot_of(lf, j)]);
      Nodes::destroy(l);
      return;
    }
    link<inner> nl = Nodes::template cast<inner>(at);
    inner* n = static_cast<inner*>(Nodes::write(nl));
    for (unsigned j = 0; j < n->count; ++j) traits::release(n->keys[j]);
    for (unsigned j = 0; j <= n->count; ++j) free_subtree(n->kids[j], level - 1);
    Nodes::destroy(nl);
  }

  struct walk {
    link<leaf> first{}, last{};
    std::uint64_t entries = 0;
    const stored* prev_key = nullptr;
  };
  // Checks the subtree at `at` (of `level`) whose keys lie in [lo, hi]
  // (null: unbounded).
  void check_node(link<btree_head> at, unsigned level, const stored* lo, const stored* hi, bool right_edge,
                  walk& w) const {
    Compare c{};
    const btree_head* h = visit(at, level);
    std::string here = "the node at " + where(h) + " (level " + std::to_string(level) + ")";
    unsigned minimum = right_edge ? 1 : level == 0 ? leaf_min : inner_min;
    if (h->count < minimum)
      corrupt(here + " holds " + std::to_string(h->count) + " keys, fewer than " + std::to_string(minimum));
    auto key = [&](unsigned j) -> const stored& {
      return level == 0 ? leaf_key(static_cast<const leaf*>(h), j) : static_cast<const inner*>(h)->keys[j];
    };
    for (unsigned j = 0; j < h->count; ++j) {
      if (lo && traits::less(c, key(j), *lo)) corrupt(here + ": key " + std::to_string(j) + " is below its bound");
      if (hi && traits::less(c, *hi, key(j))) corrupt(here + ": key " + std::to_string(j) + " is above its bound");
      if (j > 0 && traits::less(c, key(j), key(j - 1)))
        corrupt(here + ": keys " + std::to_string(j - 1) + " and " + std::to_string(j) + " are out of order");
    }
    if (level == 0) {
      const leaf* lf = static_cast<const leaf*>(h);
      link<leaf> l = Nodes::template cast<leaf>(at);
      for (unsigned j = 0; j < lf->count; ++j) {
        const stored* before = j > 0 ? &key(j - 1) : w.prev_key;
        if (before && !Multi && !traits::less(c, *before, key(j)))
          corrupt(here + ": key " + std::to_string(j) + " repeats a key of a map");
      }
      if (!(lf->prev == w.last)) corrupt(here + ": its previous-leaf link is not the leaf before it");
      if (w.last) {
        if (!(Nodes::get(w.last)->next == l)) corrupt(here + ": the leaf before it does not link to it");
      } else {
        w.first = l;
      }
      w.last = l;
      w.entries += lf->count;
      if (lf->count) w.prev_key = &key(lf->count - 1u);
      return;
    }
    const inner* n = static_cast<const inner*>(h);
    for (unsigned j = 0; j <= n->count; ++j)
      check_node(n->kids[j], level - 1, j > 0 ? &n->keys[j - 1] : lo, j < n->count ? &n->keys[j] : hi,
                 right_edge && j == n->count, w);
  }

  link<meta> header_{};
};

// A set's value: nothing (a byte in each leaf entry).
struct btree_no_value {
  friend bool operator==(btree_no_value, btree_no_value) { return true; }
};

// A set of keys: a tree of keys with no values, std::set's and
// std::multiset's interface where it can be (its iterators give the key
// view; every insert or erase invalidates every iterator).
template <class K, class Compare, class Nodes, bool Multi>
class basic_btree_set {
  using tree = basic_btree<K, btree_no_value, Compare, Nodes, Multi>;
  using arg = typename tree::key_arg;

 public:
  using key_type = typename tree::key_type;
  using value_type = key_type;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using key_compare = Compare;
  using value_compare = Compare;
  using key_view = typename tree::key_view;
  static constexpr std::size_t leaf_capacity = tree::leaf_capacity;

  class const_iterator {
   public:
    using value_type = key_type;
    using reference = key_view;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::bidirectional_iterator_tag;
    struct pointer {
      key_view k;
      const key_view* operator->() const noexcept { return &k; }
    };

    const_iterator() = default;
    key_view operator*() const { return it_.key(); }
    pointer operator->() const { return {it_.key()}; }
    const_iterator& operator++() {
      ++it_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator r = *this;
      ++it_;
      return r;
    }
    const_iterator& operator--() {
      --it_;
      return *this;
    }
    const_iterator operator--(int) {
      const_iterator r = *this;
      --it_;
      return r;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.it_ == b.it_; }

   private:
    friend class basic_btree_set;
    explicit const_iterator(typename tree::const_iterator it) : it_(it) {}
    typename tree::const_iterator it_;
  };
  using iterator = const_iterator;

  basic_btree_set() = default;

  size_type size() const { return t_.size(); }
  bool empty() const { return t_.empty(); }
  unsigned height() const { return t_.height(); }

  const_iterator begin() const { return const_iterator(t_.begin()); }
  const_iterator end() const { return const_iterator(t_.end()); }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }

  const_iterator find(arg k) const { return const_iterator(t_.find(k)); }
  bool contains(arg k) const { return t_.contains(k); }
  size_type count(arg k) const { return t_.count(k); }
  const_iterator lower_bound(arg k) const { return const_iterator(t_.lower_bound(k)); }
  const_iterator upper_bound(arg k) const { return const_iterator(t_.upper_bound(k)); }
  std::pair<const_iterator, const_iterator> equal_range(arg k) const { return {lower_bound(k), upper_bound(k)}; }

  // Inserts k. A set refuses a key it has (the bool is false and the
  // iterator names it); a multiset puts it after the equal keys.
  std::pair<const_iterator, bool> insert(arg k) {
    auto [it, inserted] = t_.insert(k, btree_no_value{});
    return {const_iterator(it), inserted};
  }
  std::pair<const_iterator, bool> emplace(arg k) { return insert(k); }
  // Removes the key at `at`; returns the iterator to the key after it.
  const_iterator erase(const_iterator at) { return const_iterator(t_.erase(at.it_)); }
  // Removes every key equal to k; returns how many.
  size_type erase(arg k) { return t_.erase(k); }
  void clear() { t_.clear(); }
  // Walks the whole tree and throws qs::corrupt_btree naming the first
  // node that breaks an invariant.
  void check() const { t_.check(); }

 private:
  tree t_;
};

}  // namespace detail

// An ordered map with unique keys (std::map's interface, see above).
template <class K, class V, class Compare = std::less<K>, class Nodes = in_database<>>
using btree_map = detail::basic_btree<K, V, Compare, Nodes, false>;
// An ordered map whose keys may repeat, in the order of their values among
// equals (erase_value finds an entry by one descent).
template <class K, class V, class Compare = std::less<K>, class Nodes = in_database<>>
using btree_multimap = detail::basic_btree<K, V, Compare, Nodes, true>;
// An ordered set of unique keys (std::set's interface, see above).
template <class K, class Compare = std::less<K>, class Nodes = in_database<>>
using btree_set = detail::basic_btree_set<K, Compare, Nodes, false>;
// An ordered set whose keys may repeat, in insertion order among equals.
template <class K, class Compare = std::less<K>, class Nodes = in_database<>>
using btree_multiset = detail::basic_btree_set<K, Compare, Nodes, true>;

}  // namespace qs
