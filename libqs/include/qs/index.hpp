// qs/index.hpp: B-tree indexes from keys to persistent objects.
//
//   qs::index<int, AtomicPart> by_id(db, "AtomicPartIdx", qs::unique);
//   by_id.insert(part->id, part);             // in the current transaction
//   qs::ref<AtomicPart> p = by_id.find(42);
//   by_id.range(1000, 1009, [](int date, qs::ref<AtomicPart> p) { ...; return true; });
//
// Objects are given and returned as qs::ref (T* in hardware mode).
//
// An index is a Berkeley DB B-tree of the database's store, updated in the
// same store transaction as the objects: it commits or aborts with them.
// Keys are integers (any width, signed or not), or strings (std::string,
// std::string_view, const char*); they sort as numbers and as bytes.
//
// Invariants:
//  * Updates need an open transaction on the index's database.
//  * A unique index refuses a second entry for a key (qs::duplicate_key); a
//    non-unique one keeps every (key, object) pair once, ordered by key.
//  * Callbacks run outside the runtime's lock: they may touch persistent
//    objects, but must not update the index they are scanning.
#pragma once

#include <qs/database.hpp>
#include <qs/error.hpp>
#include <qs/ref.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace qs {

// A unique index refused a key it already has.
class duplicate_key : public error {
 public:
  using error::error;
};

enum index_kind { unique, duplicates };

namespace detail {

struct index_entry {
  std::string key;
  std::string value;
};

std::uint32_t index_open(database& db, const std::string& name, bool unique);
void index_insert(database& db, std::uint32_t ix, const std::string& name, std::string_view key,
                  std::string_view value);
bool index_erase(database& db, std::uint32_t ix, std::string_view key, std::string_view value);
// Every entry with lo <= key <= hi, collected under the runtime's lock.
std::vector<index_entry> index_scan(database& db, std::uint32_t ix, std::string_view lo, std::string_view hi,
                                    std::size_t limit);

template <class K, bool = std::is_enum_v<K>>
struct base_int {
  using type = K;
};
template <class K>
struct base_int<K, true> {
  using type = std::underlying_type_t<K>;
};

template <class K>
std::string encode_key(const K& k) {
  if constexpr (std::is_integral_v<K> || std::is_enum_v<K>) {
    using B = typename base_int<K>::type;
    using U = std::make_unsigned_t<B>;
    auto u = static_cast<std::uint64_t>(static_cast<U>(k));
    if constexpr (std::is_signed_v<B>)
      u = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::make_signed_t<U>>(u))) ^
          (std::uint64_t{1} << 63);
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i, u >>= 8) s[i] = static_cast<char>(u & 0xff);
    return s;
  } else {
    return std::string(std::string_view(k));
  }
}

template <class K>
K decode_key(std::string_view s) {
  if constexpr (std::is_integral_v<K> || std::is_enum_v<K>) {
    using B = typename base_int<K>::type;
    std::uint64_t u = 0;
    for (unsigned char c : s) u = (u << 8) | c;
    if constexpr (std::is_signed_v<B>) return static_cast<K>(static_cast<std::int64_t>(u ^ (std::uint64_t{1} << 63)));
    else return static_cast<K>(u);
  } else {
    return K(s);
  }
}

// A reference as the runtime takes it: its bytes (an address in hardware
// mode, an object identifier in software mode).
template <class T>
std::string encode_ref(const ref<T>& r) {
  std::string s(sizeof r, '\0');
  std::memcpy(s.data(), &r, sizeof r);
  return s;
}

template <class T>
ref<T> decode_ref(std::string_view s) {
  ref<T> r{};
  std::memcpy(static_cast<void*>(&r), s.data(), sizeof r);
  return r;
}

}  // namespace detail

template <class Key, class T>
class index {
  using stored_key = std::conditional_t<std::is_integral_v<Key> || std::is_enum_v<Key>, Key, std::string>;

 public:
  index(database& db, std::string name, index_kind kind = duplicates)
      : db_(&db), name_(std::move(name)), ix_(detail::index_open(db, name_, kind == unique)) {}

  void insert(const Key& k, ref<T> obj) {
    detail::index_insert(*db_, ix_, name_, detail::encode_key(k), detail::encode_ref(obj));
  }
  // Removes the entry (k, obj); false when there is none.
  bool erase(const Key& k, ref<T> obj) {
    return detail::index_erase(*db_, ix_, detail::encode_key(k), detail::encode_ref(obj));
  }
  // The first object with key k, or nullptr.
  ref<T> find(const Key& k) {
    std::string e = detail::encode_key(k);
    auto v = detail::index_scan(*db_, ix_, e, e, 1);
    return v.empty() ? nullptr : detail::decode_ref<T>(v.front().value);
  }
  // Calls f(obj) for every object with key k.
  template <class F>
  void find_all(const Key& k, F f) {
    std::string e = detail::encode_key(k);
    for (auto& x : detail::index_scan(*db_, ix_, e, e, 0)) f(detail::decode_ref<T>(x.value));
  }
  // Calls f(key, obj) for lo <= key <= hi in key order, until f returns false.
  template <class F>
  void range(const Key& lo, const Key& hi, F f) {
    for (auto& x : detail::index_scan(*db_, ix_, detail::encode_key(lo), detail::encode_key(hi), 0))
      if (!f(detail::decode_key<stored_key>(x.key), detail::decode_ref<T>(x.value))) break;
  }
  const std::string& name() const { return name_; }

 private:
  database* db_;
  std::string name_;
  std::uint32_t ix_;
};

}  // namespace qs
