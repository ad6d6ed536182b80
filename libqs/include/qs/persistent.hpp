// qs/persistent.hpp: persistent allocation.
//
// Objects become persistent by being allocated in a database:
//
//   struct Node {
//     QS_PERSISTENT(Node)       // in a public section: a struct's first line
//     int value;
//     Node* next;
//   };
//   Node* n = new (db) Node{1, nullptr};        // persistent
//   Node* m = new (qs::near(n)) Node{2, n};     // persistent, on n's page if it fits
//   Node* t = new Node{3, nullptr};             // transient, as always
//   delete n;                                   // frees persistently
//
// For types one cannot edit: qs::make<T>(db, args...) and qs::destroy(p). For
// standard containers: qs::allocator<T>, which allocates in the database of
// the current transaction.
//
// Invariants:
//  * Every persistent object is allocated with its exact type, so the runtime
//    knows its pointer words and vptrs. Allocating a derived class through
//    its base's QS_PERSISTENT functions is refused with qs::schema_error (the
//    derived class needs its own line).
//  * Allocation and freeing need an open transaction on the database; their
//    effect on the allocator's state is undone if the transaction aborts.
//  * `delete p` and qs::destroy(p) on a transient object behave as usual.
#pragma once

#include <qs/database.hpp>
#include <qs/schema.hpp>
#include <qs/transaction.hpp>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace qs {

// Placement argument: allocate on the same page as `object` when it fits.
struct near {
  explicit near(const void* o) noexcept : object(o) {}
  const void* object;
};

namespace detail {

// Allocates `bytes` (a multiple of d->size) of objects of type d.
void* allocate(database& db, const type_descriptor* d, std::size_t bytes, const void* near_object = nullptr);
// Allocates in the database `near_object` lives in.
void* allocate_near(const void* near_object, const type_descriptor* d, std::size_t bytes);
// Frees p: persistently when p is persistent, else with ::operator delete.
void release(void* p) noexcept;
// The database of the current transaction; throws qs::no_transaction.
database& current_database();
// Refuses (qs::invalid_argument) an allocation of n objects of d whose size
// does not fit in a size_t.
[[noreturn]] void refuse_count(const type_descriptor* d, std::size_t n);
// Refuses an allocation whose size is not the class's own.
void check_class_size(std::size_t requested, std::size_t own, const char* cls);

template <class T>
void* most_derived(T* p) noexcept {
  if constexpr (std::is_polymorphic_v<T>) return dynamic_cast<void*>(p);
  else return const_cast<std::remove_cv_t<T>*>(p);
}

}  // namespace detail

template <class T, class... Args>
T* make(database& db, Args&&... args) {
  void* p = detail::allocate(db, detail::descriptor_of<T>(), sizeof(T));
  try {
    return ::new (p) T(std::forward<Args>(args)...);
  } catch (...) {
    detail::release(p);
    throw;
  }
}

template <class T>
void destroy(T* p) {
  if (!p) return;
  void* whole = detail::most_derived(p);
  p->~T();
  detail::release(whole);
}

// A standard allocator whose memory is persistent, in the database of the
// current transaction: std::vector<T, qs::allocator<T>> is an ordinary
// libstdc++ vector whose buffer lives in the persistent heap.
template <class T>
struct allocator {
  using value_type = T;
  allocator() noexcept = default;
  template <class U>
  allocator(const allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) detail::refuse_count(detail::descriptor_of<T>(), n);
    return static_cast<T*>(detail::allocate(detail::current_database(), detail::descriptor_of<T>(), n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { detail::release(p); }
  friend bool operator==(const allocator&, const allocator&) noexcept { return true; }
};

}  // namespace qs

// Gives class T its persistent allocation functions. Place it where members
// are public. A class derived from T needs its own QS_PERSISTENT line.
//
// It also marks T for schema-gen whether or not the program allocates a T
// (qs_mark is emitted in every object file that sees the class, and with it
// T's type_seen mark), so that a program that only reads T's objects still
// has T's layout checked against the stored one when a database opens.
#define QS_PERSISTENT(T)                                                                             \
  [[gnu::used]] static const void* qs_mark() noexcept { return &::qs::detail::type_seen<T>::mark; }  \
  static void* operator new(std::size_t qs_sz, ::qs::database& qs_db) {                              \
    ::qs::detail::check_class_size(qs_sz, sizeof(T), #T);                                            \
    return ::qs::detail::allocate(qs_db, ::qs::detail::descriptor_of<T>(), qs_sz);                   \
  }                                                                                                  \
  static void* operator new(std::size_t qs_sz, ::qs::near qs_n) {                                    \
    ::qs::detail::check_class_size(qs_sz, sizeof(T), #T);                                            \
    return ::qs::detail::allocate_near(qs_n.object, ::qs::detail::descriptor_of<T>(), qs_sz);        \
  }                                                                                                  \
  static void* operator new(std::size_t qs_sz) { return ::operator new(qs_sz); }                     \
  static void* operator new(std::size_t, void* qs_p) noexcept { return qs_p; }                       \
  static void operator delete(void* qs_p) noexcept { ::qs::detail::release(qs_p); }                  \
  static void operator delete(void* qs_p, ::qs::database&) noexcept { ::qs::detail::release(qs_p); } \
  static void operator delete(void* qs_p, ::qs::near) noexcept { ::qs::detail::release(qs_p); }      \
  static void operator delete(void*, void*) noexcept {}
