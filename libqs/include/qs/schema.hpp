// qs/schema.hpp: how the runtime knows the layout of a persistent type.
//
// Every persistent object's type is recorded on its page. From the type the
// runtime knows the object's size, every pointer word in it and every vtable
// pointer (vptr). A type_descriptor says exactly that; schema-gen writes one
// for every persistent type of a program from its DWARF debug information,
// and a test may write one by hand in the same form.
//
// Invariants:
//  * pointer offsets and vptr offsets are byte offsets from the start of the
//    object, 8-byte aligned, sorted ascending, and lie inside `size`.
//  * `members` lists the type's data members flattened through bases, nested
//    structs and arrays, as typed records (member_record) sorted by offset;
//    their text (member_text) is what a schema mismatch message quotes.
//  * A descriptor is registered once per program run, before the first
//    allocation of its type, and lives as long as the program.
//
// A type is bound to its descriptor through qs::detail::type_key<T>::slot, a
// variable every qs allocation template instantiates. schema-gen finds those
// instantiations in the DWARF and fills the slot through its linkage name, so
// the registration needs no spelling of the type in C++. It also describes,
// for checking only, every class marked by QS_PERSISTENT (type_seen<T>) and
// every class a described type leads to through pointers and qs::allocator
// containers: a program that only reads a type has its layout checked too.
#pragma once

#include <qs/format/members.hpp>  // member_kind, number_kind

#include <cstdint>
#include <type_traits>
#include <typeinfo>

namespace qs {

// One vtable pointer inside an object. The right value of the vptr, in this
// run of the program, is `static_cast<const char*>(vtable) + address_point`.
struct vptr_entry {
  std::uint32_t offset;         // where the vptr lies in the object
  const void* vtable;           // the vtable (group) symbol, e.g. _ZTV6Circle
  std::uint32_t address_point;  // byte offset of the address point in it
  const char* vtable_name;      // the symbol's name, for messages
};

// One member of a persistent type, flattened: a member of a nested struct
// or base class is listed with its path ("pos.x", "Shape::id"), an array
// of classes element by element ("cells[2].x").
struct member_record {
  member_kind kind;
  number_kind number;          // of a number, a bit-field, or an array's elements
  std::uint32_t offset;        // bytes from the object's start (a bit-field: its first byte)
  std::uint32_t size;          // bytes (a bit-field: the bytes its bits touch)
  std::uint32_t count;         // an array's elements, 1 otherwise
  std::uint32_t element_size;  // an array's element size, the size otherwise
  std::uint32_t first_bit;     // a bit-field's first bit from the object's start
  std::uint32_t bit_count;     // a bit-field's bits
  const char* path;
  const char* type;     // as DWARF spells it ("const int", "Part*[4]", "unsigned int:5")
  const char* element;  // a pointer's pointee or an array's element type, else ""
};

struct type_descriptor {
  const char* name;  // the qualified C++ name, as DWARF spells it
  std::uint32_t size;
  std::uint32_t align;
  const std::uint32_t* pointers;  // offsets of pointer words
  std::uint32_t pointer_count;
  const vptr_entry* vptrs;
  std::uint32_t vptr_count;
  const member_record* members;  // flattened members, see above
  std::uint32_t member_count;
};

namespace detail {

struct type_slot {
  const type_descriptor* desc = nullptr;
};

// The per-type registration slot. `slot` is what generated code fills.
template <class T>
struct type_key {
  static inline type_slot slot;
};

// Marks T as a type the program declares persistent (QS_PERSISTENT) whether
// or not it allocates one. schema-gen describes every marked type so that a
// database checks its stored layout when it opens; the mark itself holds
// nothing.
template <class T>
struct type_seen {
  static inline char mark;
};

const type_descriptor* pointer_descriptor() noexcept;
const type_descriptor* raw_descriptor() noexcept;  // bytes without pointers
[[noreturn]] void throw_no_schema(const std::type_info& t);
// Adds a descriptor to the program's list of persistent types, which every
// database checks against its stored schema when it opens.
void note_registered(const type_descriptor* d);

// The descriptor of T: registered, or built in for pointers and arithmetic
// types (an array of those is what qs::allocator<T> allocates for them).
template <class T>
const type_descriptor* descriptor_of() {
  if (const type_descriptor* d = type_key<T>::slot.desc) return d;
  if constexpr (std::is_pointer_v<T>) {
    return pointer_descriptor();
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    return raw_descriptor();
  } else {
    throw_no_schema(typeid(T));
  }
}

}  // namespace detail

// Binds T to a descriptor written by hand (schema-gen does this for a build
// that uses qs_add_schema).
template <class T>
void register_type(const type_descriptor& d) {
  detail::type_key<T>::slot.desc = &d;
  detail::note_registered(&d);
}

}  // namespace qs
