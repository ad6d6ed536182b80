// oo7/mode.hpp: the one place where the OO7 code meets its storage.
//
// The OO7 sources build in four configurations from the same files:
//
//   OO7_MODE_QS      persistent objects in a qs database (hardware mode, linked
//                    with qs-hardware): `new (db) T`, `new (qs::near(p)) T`,
//                    qs::btree indexes, ACID transactions. oo7::ref<T> is T*.
//   OO7_MODE_SW      the same on qs-software: oo7::ref<T> is qs::ref<T>, a
//                    16-byte object identifier checked on every dereference.
//   OO7_MODE_QS_BIG  hardware mode with every object as large as in software
//                    mode (the paper's QS-B): references are a pointer and 8
//                    bytes of padding, and each persistent class gains 8
//                    bytes, as software mode's object headers do.
//   OO7_MODE_MEM     the floor: plain new/delete, qs::btree indexes on
//                    new/delete (std::multimap with OO7_INDEX=bdb),
//                    transactions that do nothing, no database at all.
//
// OO7_ON_QS is defined for the first three.
//
// Everything else in oo7/ is written in the vocabulary of qs/ref.hpp and uses
// only what this header declares:
//
//  * oo7::ref<T> for every persistent reference (a field or a variable), and
//    oo7::write(r)->field = v for every update of a persistent object;
//  * OO7_PERSISTENT(T) as a persistent class's first line;
//  * oo7::make<T>(store, ...) to start a cluster, oo7::make_near<T>(r, ...)
//    to place an object on r's page(s), oo7::destroy(r), oo7::make_text;
//  * oo7::index<Key, T> (a qs::btree_multimap in the root object, in the
//    database or in memory; Berkeley DB's B-trees with OO7_INDEX=bdb),
//    oo7::txn, oo7::root_ref<T>, oo7::stats_now.
//
// Invariants:
//  * Exactly one mode is defined.
//  * Nothing outside this header converts between a ref and a raw address.
//  * In mem mode, a store and every index opened on it live for the process;
//    the "database" is gone when the process ends.
#pragma once

#if defined(OO7_MODE_QS) + defined(OO7_MODE_SW) + defined(OO7_MODE_QS_BIG) + defined(OO7_MODE_MEM) != 1
#error "define exactly one of OO7_MODE_QS, OO7_MODE_SW, OO7_MODE_QS_BIG and OO7_MODE_MEM"
#endif
#if !defined(OO7_MODE_MEM)
#define OO7_ON_QS 1
#endif
#if defined(QS_SOFTWARE_SWIZZLE) && QS_SOFTWARE_SWIZZLE + 0 == 1
#define OO7_SOFTWARE_RUNTIME 1
#else
#define OO7_SOFTWARE_RUNTIME 0
#endif
#if defined(OO7_MODE_SW) != OO7_SOFTWARE_RUNTIME
#error "OO7_MODE_SW goes with qs-software (QS_SOFTWARE_SWIZZLE=1), the other qs modes with qs-hardware"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef OO7_ON_QS
#include <qs/qs.hpp>
#endif
#include <qs/btree.hpp>

namespace oo7 {

struct Root;

// Whether OO7_INDEX asks for the paper's indexes: "bdb" (Berkeley DB's
// B-trees in the qs modes, a std::multimap in mem) or "btree" (qs::btree,
// the default). Throws oo7::error for any other value.
bool bdb_indexes_requested();

// An error of the benchmark itself (bad configuration, a missing object).
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The part of an index that is a qs::btree_multimap in the root object, the
// same in every mode (Tree is index_tree<Key, T>, RootRef ref<Root>).
template <class Key, class Tree, class RootRef>
class tree_index {
 public:
  using value = typename Tree::mapped_type;
  tree_index(const RootRef& root, Tree Root::*member, const std::string& name, bool unique)
      : root_(&root), member_(member), name_(name), unique_(unique) {}
  const std::string& name() const { return name_; }
  bool unique() const { return unique_; }

  void insert(const Key& k, const value& r) {
    Tree& t = get();
    if (unique_ && t.contains(k)) throw error("index " + name_ + ": duplicate key");
    t.insert(k, r);
  }
  bool erase(const Key& k, const value& r) { return get().erase_value(k, r); }
  value find(const Key& k) const {
    const Tree& t = get();
    auto it = t.find(k);
    return it == t.end() ? value{} : (*it).second;
  }
  // f(key, ref) for lo <= key <= hi in key order, until f returns false.
  template <class F>
  void range(const Key& lo, const Key& hi, F f) const {
    const Tree& t = get();
    for (auto it = t.lower_bound(lo), e = t.end(); it != e; ++it) {
      auto kv = *it;
      if (hi < kv.first) break;
      if (!f(Key(kv.first), kv.second)) break;
    }
  }

 private:
  Tree& get() const { return (**root_).*member_; }
  const RootRef* root_;
  Tree Root::*member_;
  std::string name_;
  bool unique_;
};

#ifdef OO7_ON_QS

#if defined(OO7_MODE_QS_BIG)
inline constexpr const char* mode_name = "qs-big";
// A pointer padded to the size of a software-mode reference.
template <class T>
struct big_ref {
  T* p = nullptr;
  std::uint64_t pad = 0;
  big_ref() = default;
  big_ref(std::nullptr_t) {}
  big_ref(T* q) : p(q) {}
  template <class U, class = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  big_ref(const big_ref<U>& o) : p(o.p) {}
  T* operator->() const { return p; }
  T& operator*() const { return *p; }
  explicit operator bool() const { return p != nullptr; }
  friend bool operator==(const big_ref& a, const big_ref& b) { return a.p == b.p; }
  friend bool operator==(const big_ref& a, std::nullptr_t) { return a.p == nullptr; }
};
template <class T>
using ref = big_ref<T>;
template <class T>
T* write(const ref<T>& r) {
  return r.p;
}
template <class T>
T* raw(const ref<T>& r) {
  return r.p;
}
template <class T>
qs::ref<T> to_qs(const ref<T>& r) {
  return r.p;
}
template <class T, class U>
ref<T> downcast(const ref<U>& r) {
  return static_cast<T*>(r.p);
}
// The 8 bytes by which a software-mode object header is larger.
#define OO7_PERSISTENT(T) \
  QS_PERSISTENT(T)        \
  std::uint64_t oo7_header_pad_;
#else
template <class T>
using ref = qs::ref<T>;
using qs::write;
template <class T>
qs::ref<T> to_qs(const ref<T>& r) {
  return r;
}
#if defined(OO7_MODE_SW)
inline constexpr const char* mode_name = "sw";
template <class T>
T* raw(const ref<T>& r) {
  return r.get();
}
#else
inline constexpr const char* mode_name = "qs";
template <class T>
T* raw(T* r) {
  return r;
}
#endif
template <class T, class U>
ref<T> downcast(const ref<U>& r) {
  return qs::static_ref_cast<T>(r);
}
#define OO7_PERSISTENT(T) QS_PERSISTENT(T)
#endif

// Where persistent objects go: an open qs database.
struct store {
  qs::database* db = nullptr;
};

template <class T, class... A>
ref<T> make(store& s, A&&... a) {
  return new (*s.db) T(std::forward<A>(a)...);
}
template <class T, class U, class... A>
ref<T> make_near(const ref<U>& near, A&&... a) {
  return new (qs::near(raw(near))) T(std::forward<A>(a)...);
}
template <class T>
void destroy(const ref<T>& r) {
  delete raw(r);
}
// A T object followed by `extra` more bytes, placed near `near` (or anywhere
// when near is null). T must be trivially constructible: the object is a
// header whose last member is a char array that the extra bytes extend. The
// runtime sees an array of T (sizes are rounded up to a multiple of sizeof T).
template <class T, class U>
ref<T> make_extended(store& s, const ref<U>& near, std::size_t extra) {
  static_assert(std::is_trivially_default_constructible_v<T>);
  std::size_t n = (sizeof(T) + extra + sizeof(T) - 1) / sizeof(T);
  const qs::type_descriptor* d = qs::detail::descriptor_of<T>();
  void* p =
      near ? qs::detail::allocate_near(raw(near), d, n * sizeof(T)) : qs::detail::allocate(*s.db, d, n * sizeof(T));
  std::memset(p, 0, n * sizeof(T));
  return static_cast<T*>(p);
}
template <class T>
void destroy_extended(const ref<T>& r) {
  qs::destroy(raw(r));
}

// The persistent cell of a named root holding a ref<T>.
template <class T>
ref<T>& root_ref(store& s, const char* name) {
  return s.db->root<ref<T>>(name);
}

// Which page an object starts on (for the layout report).
template <class T>
std::uint64_t page_of(const ref<T>& r, const store& s) {
#if defined(OO7_MODE_SW)
  (void)s;
  return r.page();
#else
  return reinterpret_cast<std::uintptr_t>(static_cast<const void*>(raw(r))) / s.db->page_size();
#endif
}

// One transaction, begun by begin() (or the constructor) and ended by
// commit(); destroying an open one aborts it.
class txn {
 public:
  explicit txn(store& s, bool begin_now = true) : s_(&s) {
    if (begin_now) begin();
  }
  void begin() { t_.emplace(*s_->db); }
  void commit() {
    t_->commit();
    t_.reset();
  }
  bool open() const { return t_.has_value(); }

 private:
  store* s_;
  std::optional<qs::transaction> t_;
};

using stats_t = qs::statistics;
inline stats_t stats_now(const store& s) { return s.db->stats(); }
// What detecting one page fault costs here (hardware modes; 0 in software
// mode, which takes no faults).
inline double fault_detection_ns() { return qs::software_swizzling ? 0 : qs::measure_fault_detection_ns(); }

enum index_kind { unique = qs::unique, duplicates = qs::duplicates };

// The B-tree an OO7 index is: a qs::btree_multimap in the database, a member
// of the root object.
template <class Key, class T>
using index_tree = qs::btree_multimap<Key, ref<T>>;

// An index from Key (an integer or std::string) to objects of T: the tree
// `member` of the root object, or (a database generated with OO7_INDEX=bdb,
// the paper's configuration) the Berkeley DB B-tree of that name.
template <class Key, class T>
class index {
 public:
  using tree = index_tree<Key, T>;
  index(store& s, const ref<Root>& root, tree Root::*member, const std::string& name, index_kind kind, bool bdb)
      : tree_(root, member, name, kind == unique) {
    if (bdb) bdb_.emplace(*s.db, name, static_cast<qs::index_kind>(kind));
  }
  void insert(const Key& k, const ref<T>& r) {
    if (bdb_) return bdb_->insert(k, to_qs(r));
    tree_.insert(k, r);
  }
  bool erase(const Key& k, const ref<T>& r) {
    if (bdb_) return bdb_->erase(k, to_qs(r));
    return tree_.erase(k, r);
  }
  ref<T> find(const Key& k) {
    if (bdb_) return ref<T>(bdb_->find(k));
    return tree_.find(k);
  }
  // f(key, ref) for lo <= key <= hi in key order, until f returns false.
  template <class F>
  void range(const Key& lo, const Key& hi, F f) {
    if (bdb_) return bdb_->range(lo, hi, [&](const Key& k, qs::ref<T> p) { return f(k, ref<T>(p)); });
    tree_.range(lo, hi, f);
  }

 private:
  tree_index<Key, tree, ref<Root>> tree_;
  std::optional<qs::index<Key, T>> bdb_;
};

#else  // OO7_MODE_MEM
template <class T>
T* raw(T* r) {
  return r;
}

inline constexpr const char* mode_name = "mem";
template <class T>
using ref = T*;
template <class T>
constexpr T* write(T* p) noexcept {
  return p;
}
#define OO7_PERSISTENT(T)

// The in-memory "database": only the named roots. Its objects are plain
// `new`, never freed as a whole (no bookkeeping slows the floor the other
// modes are measured against): they live for the process, as the invariant
// above says. A store that is destroyed (a test's fixture) hands its roots
// to a list kept for the process, so that its objects stay reachable rather
// than lost (LeakSanitizer, QS_SANITIZE=address, reports lost ones).
struct store {
  std::map<std::string, void*> roots;
  store() = default;
  store(const store&) = delete;
  store& operator=(const store&) = delete;
  ~store() {
    // Never destroyed: an exit handler (LeakSanitizer's check) may still look.
    static auto* kept = new std::vector<std::map<std::string, void*>>;
    if (!roots.empty()) kept->push_back(std::move(roots));
  }
};

template <class T, class... A>
ref<T> make(store&, A&&... a) {
  return new T(std::forward<A>(a)...);
}
template <class T, class U, class... A>
ref<T> make_near(ref<U>, A&&... a) {
  return new T(std::forward<A>(a)...);
}
template <class T>
void destroy(ref<T> r) {
  delete r;
}
template <class T, class U>
ref<T> downcast(ref<U> r) {
  return static_cast<T*>(r);
}
template <class T, class U>
ref<T> make_extended(store&, ref<U>, std::size_t extra) {
  static_assert(std::is_trivially_default_constructible_v<T>);
  void* p = ::operator new(sizeof(T) + extra);
  std::memset(p, 0, sizeof(T) + extra);
  return static_cast<T*>(p);
}
template <class T>
void destroy_extended(ref<T> r) {
  ::operator delete(static_cast<void*>(r));
}

template <class T>
ref<T>& root_ref(store& s, const char* name) {
  void*& cell = s.roots[name];
  return reinterpret_cast<ref<T>&>(cell);
}

template <class T>
std::uint64_t page_of(ref<T> r, const store&) {
  return reinterpret_cast<std::uintptr_t>(r) / 8192;
}

class txn {
 public:
  explicit txn(store&, bool begin_now = true) : open_(begin_now) {}
  void begin() { open_ = true; }
  void commit() { open_ = false; }
  bool open() const { return open_; }

 private:
  bool open_;
};

struct stats_t {
  std::uint64_t read_faults = 0, write_faults = 0, pages_fetched = 0, pages_written = 0, evictions = 0,
                dirty_evictions = 0, log_bytes = 0, diff_bytes = 0, commits = 0, aborts = 0, commit_ns = 0,
                fault_ns = 0, fetch_ns = 0, mapping_ns = 0, swizzle_ns = 0, protect_ns = 0;
};
// No page faults in memory.
inline double fault_detection_ns() { return 0; }
inline stats_t stats_now(const store&) { return {}; }

enum index_kind { unique, duplicates };

// The same B-tree as in the qs modes, its nodes from new/delete.
template <class Key, class T>
using index_tree = qs::btree_multimap<Key, T*, std::less<Key>, qs::in_memory<>>;

// An index: the tree `member` of the root object, or (OO7_INDEX=bdb, the
// floor the paper's configuration is measured against) a std::multimap whose
// entries live in a pool of their own, as a B-tree's would: interleaved with
// the objects in the malloc heap they would spread the objects out and make
// the floor slower than it is.
template <class Key, class T>
class index {
 public:
  using tree = index_tree<Key, T>;
  index(store&, const ref<Root>& root, tree Root::*member, const std::string& name, index_kind kind, bool bdb)
      : tree_(root, member, name, kind == unique), map_(bdb) {}
  index(const index&) = delete;
  void insert(const Key& k, ref<T> r) {
    if (!map_) return tree_.insert(k, r);
    auto [lo, hi] = m_.equal_range(k);
    if (tree_.unique() && lo != hi) throw error("index " + tree_.name() + ": duplicate key");
    for (auto it = lo; it != hi; ++it)
      if (it->second == r) return;
    m_.emplace(k, r);
  }
  bool erase(const Key& k, ref<T> r) {
    if (!map_) return tree_.erase(k, r);
    auto [lo, hi] = m_.equal_range(k);
    for (auto it = lo; it != hi; ++it)
      if (it->second == r) {
        m_.erase(it);
        return true;
      }
    return false;
  }
  ref<T> find(const Key& k) {
    if (!map_) return tree_.find(k);
    auto it = m_.find(k);
    return it == m_.end() ? nullptr : it->second;
  }
  template <class F>
  void range(const Key& lo, const Key& hi, F f) {
    if (!map_) return tree_.range(lo, hi, f);
    for (auto it = m_.lower_bound(lo); it != m_.end() && !(hi < it->first); ++it)
      if (!f(it->first, it->second)) break;
  }

 private:
  tree_index<Key, tree, ref<Root>> tree_;
  bool map_;
  std::pmr::unsynchronized_pool_resource pool_;
  std::pmr::multimap<Key, ref<T>> m_{&pool_};
};

#endif

}  // namespace oo7
