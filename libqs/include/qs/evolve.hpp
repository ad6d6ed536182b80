// qs/evolve.hpp: schema evolution, converting a database's objects to the
// program's changed types.
//
// Every object on a page names its type's stored layout, and schema-gen
// gives the program's (qs/schema.hpp): a flattened member list of
// `offset size path type` lines. When a program opens a database whose
// stored layout of one of its types differs, the open is refused with
// qs::schema_mismatch, unless options::evolve is set: then, before open
// returns, one transaction converts every stored object of each changed type
// to the program's layout:
//
//  * members are matched by their path (`id`, `pos.x`, `Base::name`,
//    `pts[2].link`, `_M_storage.second.weight`): a member the program added
//    is value-initialized (zero bytes), one it removed is dropped, one it
//    moved is copied to its new place;
//  * an arithmetic member converts to another arithmetic type when every
//    stored value fits (int to long, float to double; long to int or double
//    to float only when each value is exactly representable, checked object
//    by object: the first that does not fit aborts the conversion, naming
//    the type, the member and the value);
//  * a pointer member is kept when it points to the same type, or to a base
//    or a derived class of it; an array keeps its common elements, each
//    converted as above; vtable pointers take the program's vtables;
//  * the objects of a changed type move, and every pointer to them is
//    rewritten: from other objects, from arrays, from standard containers
//    with qs::allocator, from named roots and qs::index entries, including
//    pointers into the middle of an object or array (a member's address, a
//    vector's end), mapped member by member; a pointer to where a part and
//    its first member both start follows the member when its own type is
//    the member's, else the part;
//  * an unchanged union moves whole; a standard container's node whose key
//    changed is refused (its order or hashing would not hold);
//  * a change qs cannot make by name (a member whose type changed
//    incompatibly, a union, a pointer retargeted to an unrelated type) is
//    refused before anything is written, with qs::schema_mismatch naming the
//    type and the member, unless the program supplies a converter for the
//    type (options::converters): it runs after the conversion by name, sees
//    the stored object's members by name, and fills in the new object.
//
// The conversion commits atomically: a crash at any moment leaves either the
// old database or the converted one. The database keeps every type's earlier
// layouts ("h:" records). What was done is written to standard error, one
// line per type (`Part: + weight (double), - mass (int); 20,000 objects
// moved`), then the totals.
//
// qs::evolution_plan (qs/database.hpp) says what would change without
// writing anything; the qs-evolve tool converts a database offline for a
// program file, from the types schema-gen wrote into it.
//
// Only embedded databases of the hardware mode are converted; a database
// served by qs-pageserver is converted by opening its directory while the
// server is stopped.
//
// Thread-safety: a stored_object is handed to one converter call and is
// valid only during it.
#pragma once

#include <qs/error.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

namespace qs {

// One stored object of a changed type, as the database has it: its members
// by path, in their stored types.
class stored_object {
 public:
  virtual ~stored_object() = default;
  // The type's name, as the program and the database spell it.
  virtual const std::string& type_name() const = 0;
  // Whether the stored layout has this member (a path of the member list).
  virtual bool has(std::string_view member) const = 0;
  // The member's stored type, as DWARF spells it ("int", "Part*",
  // "char[10]"). Throws qs::schema_error when the member is not stored.
  virtual std::string type_of(std::string_view member) const = 0;
  // The member's stored bytes.
  virtual std::string_view bytes(std::string_view member) const = 0;

  // The member as T. For an arithmetic T (or an enum), any stored arithmetic
  // member converts when its value fits T (else qs::schema_error naming the
  // member and value); any other T must have the stored member's size and is
  // copied. A pointer reads as stored: a pointer to an object that moves is
  // rewritten after the converter runs.
  template <class T>
  T get(std::string_view member) const {
    static_assert(std::is_trivially_copyable_v<T>, "stored_object::get reads trivially copyable types");
    T v{};
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      using A = std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>, std::type_identity<T>>;
      using U = typename A::type;
      read_number(member, &v, sizeof(T), std::is_floating_point_v<U>, std::is_signed_v<U>, std::is_same_v<U, bool>);
    } else {
      read_bytes(member, &v, sizeof(T));
    }
    return v;
  }

 protected:
  // Stores the member's value, converted, in `out` (`size` bytes of an
  // arithmetic type of that kind).
  // Copies the member's bytes to `out`; qs::schema_error when it does not
  // have `size` of them.
  virtual void read_bytes(std::string_view member, void* out, std::size_t size) const = 0;
  virtual void read_number(std::string_view member, void* out, std::size_t size, bool floating, bool is_signed,
                           bool boolean) const = 0;
};

// A program's conversion of one type: `old` is the stored object, `fresh`
// the program's new object, already converted by name.
using converter = std::function<void(const stored_object& old, void* fresh)>;

}  // namespace qs
