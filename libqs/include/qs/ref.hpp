// qs/ref.hpp: the vocabulary of persistent references that builds both ways.
//
// Code meant to build in hardware mode (page faults) and in software mode
// (references checked in software, E-style) spells every persistent
// reference qs::ref<T> and announces every update with qs::write:
//
//   qs::ref<Part> p = ...;
//   int x = p->x;              // read
//   qs::write(p)->x = x + 1;   // update
//
// Hardware mode (the default): qs::ref<T> is T* itself and qs::write(p)
// returns p. Both cost nothing, and the code is ordinary C++.
//
// Software mode (QS_SOFTWARE_SWIZZLE=1, set for programs that link the
// qs-software library; configure with -DQS_SWIZZLE=software to make it the
// `qs` target): qs::ref<T> is a 16-byte object identifier {page, offset,
// uniqueness tag}. Every dereference checks residency through a table indexed
// by page number and, on a miss, fetches the page into the buffer pool; no
// page protection is involved. qs::write(r) records a before-image of the
// object, for the commit's log and for abort.
//
// Invariants and rules of software mode:
//  * A reference names a whole object: it is made from the address `new`
//    returned (or from another reference), not from an address inside one,
//    and converts to a base class only when the base is at offset 0.
//  * Dereferencing a reference to a deleted object throws
//    qs::dangling_reference: the tag in the reference is no longer the one
//    in the object's header. (A header's tag is zeroed when the object is
//    freed, and a later object there gets a new tag.)
//  * The raw pointer that get(), ->, * or write() returns stays valid until
//    the transaction ends: a page used in a transaction stays in the buffer
//    pool until the transaction ends (its first use in each transaction
//    takes the slow path, which pins it). So a transaction's pages must fit
//    in the pool; one that needs more fails with a qs::error and is aborted.
//  * References resolve in the database of the innermost open transaction,
//    or, between transactions, the database last used.
#pragma once

// The runtime's sources that do not depend on the mode are compiled once for
// both runtimes, with QS_MODE_INDEPENDENT (libqs/CMakeLists.txt): one that
// includes this header depends on the mode.
#ifdef QS_MODE_INDEPENDENT
#error "qs/ref.hpp in a mode-independent runtime source: move it to QS_RUNTIME_SOURCES (libqs/CMakeLists.txt)"
#endif

#ifndef QS_SOFTWARE_SWIZZLE
#define QS_SOFTWARE_SWIZZLE 0
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <typeinfo>

namespace qs {

inline constexpr bool software_swizzling = QS_SOFTWARE_SWIZZLE != 0;

namespace detail {

// The header in front of every persistent object on a page: its type (an
// index into the database's type table) and payload size, and in software
// mode the object's uniqueness tag, the last word before the payload, which
// every qs::ref to the object repeats (ref::get reads it there). The one
// definition of it: the page format (libqs/src/core/page_format.hpp, which says
// what each field means) and qs::ref both use this one.
struct object_header {
  std::uint32_t type;
  std::uint32_t size;  // payload bytes
#if QS_SOFTWARE_SWIZZLE
  std::uint32_t tag;
  std::uint32_t reserved;
#endif
};
static_assert(sizeof(object_header) == (QS_SOFTWARE_SWIZZLE ? 16 : 8));

}  // namespace detail

#if !QS_SOFTWARE_SWIZZLE

template <class T>
using ref = T*;

template <class T>
constexpr T* write(T* p) noexcept {
  return p;
}

// A reference to a base-class object known to be a T.
template <class T, class U>
T* static_ref_cast(U* p) noexcept {
  return static_cast<T*>(p);
}

#else

namespace detail {

// A residency table: pages[p] is the address of page p's bytes in memory,
// or null when the page is absent (or must be revalidated first).
struct residency {
  std::byte* const* pages = nullptr;
  std::uint64_t count = 0;
};
// A thread's references resolve in its own database: the one whose
// transaction it began or joined last (or opened last). sw_residency is
// that database's table while every thread that has a database has the same
// one (a program with one database: always), so that the inline path below
// reads it at a fixed address; otherwise it is empty, and each dereference
// takes sw_resolve, which reads the thread's own table.
extern residency sw_residency;

// The object at `offset` of page `page` whose uniqueness tag is `tag`, when
// table `r` has its page; else nullptr.
inline void* sw_resident(const residency& r, std::uint64_t page, std::uint32_t offset, std::uint32_t tag) noexcept {
  if (page < r.count) {
    if (std::byte* base = r.pages[page]) {
      std::uint32_t t;
      std::memcpy(&t, base + offset - sizeof(object_header) + offsetof(object_header, tag), sizeof t);
      if (t == tag) return base + offset;
    }
  }
  return nullptr;
}

// The slow path of a dereference: fetches the page (and a large object's
// whole run), checks the tag; throws qs::dangling_reference.
void* sw_resolve(std::uint64_t page, std::uint32_t offset, std::uint32_t tag);
// Resolves and records the object's before-image for the open transaction.
void* sw_write(std::uint64_t page, std::uint32_t offset, std::uint32_t tag);
// The identifier of the persistent object that starts at p; throws
// qs::invalid_argument when no object of an open database starts there.
void sw_identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag);
// Throws qs::invalid_argument: a conversion whose base is not at offset 0.
[[noreturn]] void sw_bad_conversion(const char* from, const char* to);

// The offset of the U subobject in a T (0 for the conversions refs allow).
template <class T, class U>
std::ptrdiff_t base_offset() noexcept {
  alignas(T) static unsigned char probe[sizeof(T)];
  T* t = reinterpret_cast<T*>(probe);
  return reinterpret_cast<unsigned char*>(static_cast<U*>(t)) - probe;
}

}  // namespace detail

template <class T>
class ref {
 public:
  ref() noexcept = default;
  ref(std::nullptr_t) noexcept {}
  // From the address of a persistent object (what `new (db) T` returns).
  ref(T* p) {
    if (p) detail::sw_identify(p, page_, offset_, tag_);
  }
  template <class U, class = std::enable_if_t<std::is_convertible_v<U*, T*> && !std::is_same_v<U, T>>>
  ref(const ref<U>& o) : page_(o.page()), offset_(o.offset()), tag_(o.tag()) {
    if (detail::base_offset<U, T>() != 0) detail::sw_bad_conversion(typeid(U).name(), typeid(T).name());
  }

  // The object's address, fetching its page when absent.
  T* get() const {
    if (offset_ == 0) return nullptr;
    if (void* p = detail::sw_resident(detail::sw_residency, page_, offset_, tag_)) return static_cast<T*>(p);
    return static_cast<T*>(detail::sw_resolve(page_, offset_, tag_));
  }
  T* operator->() const { return get(); }
  T& operator*() const { return *get(); }
  explicit operator bool() const noexcept { return offset_ != 0; }

  friend bool operator==(const ref& a, const ref& b) noexcept {
    return a.page_ == b.page_ && a.offset_ == b.offset_ && a.tag_ == b.tag_;
  }
  friend bool operator==(const ref& a, std::nullptr_t) noexcept { return a.offset_ == 0; }

  std::uint64_t page() const noexcept { return page_; }
  std::uint32_t offset() const noexcept { return offset_; }
  std::uint32_t tag() const noexcept { return tag_; }
  static ref from_identifier(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) noexcept {
    ref r;
    r.page_ = page;
    r.offset_ = offset;
    r.tag_ = tag;
    return r;
  }

 private:
  std::uint64_t page_ = 0;
  std::uint32_t offset_ = 0;  // of the payload in its page (large objects: in their first page); 0: null
  std::uint32_t tag_ = 0;
};
static_assert(sizeof(ref<int>) == 16);

// The object, writable, its before-image recorded for the transaction.
template <class T>
T* write(const ref<T>& r) {
  if (!r) return nullptr;
  return static_cast<T*>(detail::sw_write(r.page(), r.offset(), r.tag()));
}

template <class T, class U>
ref<T> static_ref_cast(const ref<U>& r) {
  if (detail::base_offset<T, U>() != 0) detail::sw_bad_conversion(typeid(U).name(), typeid(T).name());
  return ref<T>::from_identifier(r.page(), r.offset(), r.tag());
}

#endif

}  // namespace qs
