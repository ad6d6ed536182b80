// The second object of the schema-gen fixture: key functions of Animal and
// Dog (so their vtables and full DWARF are only here) and a second
// instantiation of some type_keys (the generator must emit each type once).
#include "fixture_types.hpp"

Animal::~Animal() {}
int Animal::legs() const { return 2; }
int Dog::legs() const { return 4; }

int other_checks() {
  int n = 0;
  n += qs::detail::type_key<Plain>::slot.desc != nullptr;
  n += qs::detail::type_key<Dog>::slot.desc != nullptr;
  n += qs::detail::type_key<Ring<Plain, 4>>::slot.desc != nullptr;
  return n;
}
