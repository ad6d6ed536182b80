// core/unknown_vtable.hpp: the vtable given to objects whose class this program
// has no vtable for.
//
// A stored object's vptrs are rewritten to this run's vtables when its page
// comes in. When the program has none for the object's class (it does not
// know the class, or never constructs one, so no vtable was emitted), the
// vptr still holds an address from the run that stored it, and a virtual
// call through it would jump anywhere. Such a vptr is pointed at a table
// made here instead: each of its virtual function entries raises
// qs::schema_error naming the class; typeid sees qs::detail::unknown_object
// and a dynamic_cast to any class of the program fails.
//
// Invariants:
//  * one table per class name, made on first need and kept until the
//    process ends; a table's words never change once made;
//  * every function entry of a table leads to the same raising function,
//    which finds the class through the vptr of the object it was called on.
//
// Thread-safety: thread-safe (a mutex guards the set of tables).
#pragma once

#include <string>

namespace qs::detail {

// The address point to store in a vptr of an object of stored class `name`.
const void* unknown_vtable(const std::string& name);

}  // namespace qs::detail
