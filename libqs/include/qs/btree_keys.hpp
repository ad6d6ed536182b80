// qs/btree_keys.hpp: how a qs::btree_map stores and compares its keys.
//
// Three kinds of key:
//  * A trivially copyable type (integers, enums, floating point, a struct of
//    those) is stored as itself and ordered by the tree's Compare.
//  * std::string (or qs::inline_string<N>, which says how many bytes to keep
//    inline) is stored as its length and its first N bytes in the node
//    (N = 24 for std::string); a longer key's whole bytes are also kept out
//    of line, in an object of their own next to the node. Strings order as
//    bytes (unsigned), as std::less<std::string> orders them; most
//    comparisons end inside the inline bytes. Lookups take std::string_view.
//  * std::tuple of two or three parts, each of the kinds above (a word and a
//    document number: std::tuple<std::string, std::int64_t>), stored side
//    by side and ordered part by part, as std::tuple's operator< orders.
//    Lookups take, and iterators show, a std::tuple of the parts' views
//    (std::string_view for a string part).
//
// A stored key owns its out-of-line bytes: copying one into an inner node (a
// separator) copies them, and releasing it frees them. Moving stored keys
// between nodes is a copy of their bytes.
//
// Invariants: a stored string's len is its length; when len > N, `whole`
// holds all len bytes, and head repeats the first N.
//
// Thread-safety: pure functions on the caller's nodes.
#pragma once

#include <qs/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace qs {

// A string key type with N bytes kept inline in the tree's nodes; the
// tree's key_type is std::string.
template <std::size_t N>
struct inline_string {};

namespace detail {

template <std::size_t N, class Nodes>
struct btree_string {
  std::uint32_t len;
  char head[N];
  typename Nodes::template link<char> whole;  // len > N: all len bytes
};

// Trivially copyable keys, ordered by Compare.
template <class K, class Compare, class Nodes>
struct btree_key_traits {
  static_assert(std::is_trivially_copyable_v<K>,
                "a qs::btree_map key is a trivially copyable type (an integer, an enum, a struct of those) or "
                "std::string / qs::inline_string<N>");
  using key_type = K;
  using stored = K;
  using arg = const K&;   // what lookups take
  using view = const K&;  // what iterators show

  static view view_of(const stored& s) noexcept { return s; }
  static bool before(const Compare& c, const stored& s, arg k) { return c(s, k); }
  static bool after(const Compare& c, const stored& s, arg k) { return c(k, s); }
  static bool less(const Compare& c, const stored& a, const stored& b) { return c(a, b); }
  static stored make(arg k, const void*) { return k; }
  static stored copy(const stored& s, const void*) { return s; }
  static void release(stored&) {}
};

template <std::size_t N, class Compare, class Nodes>
struct btree_string_traits {
  static_assert(std::is_same_v<Compare, std::less<std::string>> || std::is_same_v<Compare, std::less<>> ||
                    std::is_same_v<Compare, std::less<std::string_view>>,
                "string keys of a qs::btree_map order as bytes (std::less)");
  using key_type = std::string;
  using stored = btree_string<N, Nodes>;
  using arg = std::string_view;
  using view = std::string_view;

  static view view_of(const stored& s) {
    return s.len <= N ? std::string_view(s.head, s.len) : std::string_view(Nodes::get(s.whole), s.len);
  }
  static int compare(const stored& s, std::string_view k) {
    std::size_t n = std::min<std::size_t>({s.len, N, k.size()});
    if (n != 0)
      if (int c = std::memcmp(s.head, k.data(), n)) return c;
    if (s.len <= N) return s.len < k.size() ? -1 : s.len > k.size() ? 1 : 0;
    if (k.size() <= N) return 1;  // k is a proper prefix of s
    return view_of(s).substr(N).compare(k.substr(N));
  }
  // (The tree's comparator is not consulted: strings order as bytes.)
  static bool before(const auto&, const stored& s, arg k) { return compare(s, k) < 0; }
  static bool after(const auto&, const stored& s, arg k) { return compare(s, k) > 0; }
  static bool less(const auto&, const stored& a, const stored& b) { return compare(a, view_of(b)) < 0; }
  static stored make(arg k, const void* near) {
    if (k.size() > 0xffffffffu) throw invalid_argument("a qs::btree_map string key is at most 4 GiB long");
    stored s{};
    s.len = static_cast<std::uint32_t>(k.size());
    if (!k.empty()) std::memcpy(s.head, k.data(), std::min(k.size(), N));
    if (k.size() > N) {
      s.whole = Nodes::make_bytes(near, k.size());
      std::memcpy(Nodes::write(s.whole), k.data(), k.size());
    }
    return s;
  }
  static stored copy(const stored& s, const void* near) { return s.len <= N ? s : make(view_of(s), near); }
  static void release(stored& s) {
    if (s.len > N) Nodes::destroy_bytes(s.whole);
  }
};

// A key of two or three parts, each a key of the kinds above, stored side
// by side; ordered part by part (strings as bytes, the others by std::less).
template <class A, class B, class C = void>
struct btree_key_parts {
  A a;
  B b;
  C c;
};
template <class A, class B>
struct btree_key_parts<A, B, void> {
  A a;
  B b;
};

template <class K, class Compare, class Nodes>
struct btree_key_select;

template <class Nodes, class... Ks>
struct btree_tuple_traits {
  static_assert(sizeof...(Ks) == 2 || sizeof...(Ks) == 3, "a qs::btree_map tuple key has two or three parts");
  template <class K>
  using part = typename btree_key_select<K, std::less<K>, Nodes>::type;
  template <std::size_t I>
  using part_at = part<std::tuple_element_t<I, std::tuple<Ks...>>>;
  template <std::size_t I>
  using key_at = std::tuple_element_t<I, std::tuple<Ks...>>;
  using key_type = std::tuple<typename part<Ks>::key_type...>;
  using stored = btree_key_parts<typename part<Ks>::stored...>;
  using arg = std::tuple<std::remove_cvref_t<typename part<Ks>::arg>...>;  // views and values
  using view = arg;
  static constexpr std::size_t n = sizeof...(Ks);

  template <std::size_t I, class S>
  static auto& at(S& s) noexcept {
    if constexpr (I == 0) return s.a;
    else if constexpr (I == 1) return s.b;
    else return s.c;
  }
  template <std::size_t... I>
  static view view_of(const stored& s, std::index_sequence<I...>) {
    return view(part_at<I>::view_of(at<I>(s))...);
  }
  static view view_of(const stored& s) { return view_of(s, std::make_index_sequence<n>{}); }
  template <std::size_t I = 0>
  static int compare(const stored& s, const arg& k) {
    if constexpr (I == n) {
      return 0;
    } else {
      const std::less<key_at<I>> c{};
      if (part_at<I>::before(c, at<I>(s), std::get<I>(k))) return -1;
      if (part_at<I>::after(c, at<I>(s), std::get<I>(k))) return 1;
      return compare<I + 1>(s, k);
    }
  }
  // (The tree's comparator is not consulted: the parts order as above.)
  static bool before(const auto&, const stored& s, const arg& k) { return compare(s, k) < 0; }
  static bool after(const auto&, const stored& s, const arg& k) { return compare(s, k) > 0; }
  static bool less(const auto&, const stored& a, const stored& b) { return compare(a, view_of(b)) < 0; }
  template <std::size_t I = 0>
  static void release_from(stored& s) {
    if constexpr (I < n) {
      part_at<I>::release(at<I>(s));
      release_from<I + 1>(s);
    }
  }
  // Each part made or copied in turn; those made are released when a later
  // one fails.
  template <std::size_t I = 0, class F>
  static void fill(stored& s, F&& one) {
    if constexpr (I < n) {
      at<I>(s) = one(std::integral_constant<std::size_t, I>{});
      try {
        fill<I + 1>(s, one);
      } catch (...) {
        part_at<I>::release(at<I>(s));
        throw;
      }
    }
  }
  static stored make(const arg& k, const void* near) {
    stored s{};
    fill(s, [&](auto i) { return part_at<decltype(i)::value>::make(std::get<decltype(i)::value>(k), near); });
    return s;
  }
  static stored copy(const stored& from, const void* near) {
    stored s{};
    fill(s, [&](auto i) { return part_at<decltype(i)::value>::copy(at<decltype(i)::value>(from), near); });
    return s;
  }
  static void release(stored& s) { release_from(s); }
};

template <class K, class Compare, class Nodes>
struct btree_key_select {
  using type = btree_key_traits<K, Compare, Nodes>;
};
template <class... Ks, class Compare, class Nodes>
struct btree_key_select<std::tuple<Ks...>, Compare, Nodes> {
  static_assert(std::is_same_v<Compare, std::less<std::tuple<Ks...>>> || std::is_same_v<Compare, std::less<>>,
                "a qs::btree_map tuple key orders part by part (std::less)");
  using type = btree_tuple_traits<Nodes, Ks...>;
};
template <class Compare, class Nodes>
struct btree_key_select<std::string, Compare, Nodes> {
  using type = btree_string_traits<24, Compare, Nodes>;
};
template <std::size_t N, class Compare, class Nodes>
struct btree_key_select<inline_string<N>, Compare, Nodes> {
  using type = btree_string_traits<N, std::less<>, Nodes>;
};

}  // namespace detail
}  // namespace qs
