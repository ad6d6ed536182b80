// Types of the schema-gen fixture: one of each kind of layout schema-gen must
// describe. fixture_main.cpp checks the generated descriptors against what
// the compiler says; fixture_other.cpp holds the key functions of some
// polymorphic classes, so their vtables and their full DWARF live only there.
#pragma once

#include <qs/persistent.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

// A plain struct with pointers, persistent through QS_PERSISTENT.
struct Plain {
  QS_PERSISTENT(Plain)
  int value;
  Plain* next;
  const char* name;
  double weight;
};

// Base classes (no virtual functions).
struct Shape {
  int kind;
  Shape* parent;
};
struct Named {
  char* label;
};
struct Square : Shape, Named {
  double side;
  Square* twin;
};

// Nested structs, arrays of structs, 2-D arrays.
struct Point {
  int x, y;
  Point* link;
};
struct Rect {
  Point pos;
  Point size;
  Rect* next;
};
struct Polygon {
  Point pts[3];
  int n;
  Polygon* next;
};
struct Grid {
  long tag;
  int* cells[2][3];
  Grid* self;
  Point corners[2][2];
};

// Standard containers with qs::allocator.
using qs_string = std::basic_string<char, std::char_traits<char>, qs::allocator<char>>;
using plain_map = std::map<int, Plain*, std::less<int>, qs::allocator<std::pair<const int, Plain*>>>;
struct Bag {
  std::vector<Plain*, qs::allocator<Plain*>> v;
  qs_string s;
  plain_map m;
  Bag* next;
};

// Single inheritance with virtual functions; key functions in fixture_other.cpp.
struct Animal {
  virtual ~Animal();
  virtual int legs() const;
  Animal* mate = nullptr;
  int age = 0;
};
struct Dog : Animal {
  int legs() const override;
  Dog* pup = nullptr;
};

// Multiple inheritance: two polymorphic bases (inline virtuals).
struct Drawable {
  virtual ~Drawable() {}
  virtual int draw() { return 1; }
  int z = 0;
};
struct Clickable {
  virtual ~Clickable() {}
  virtual int click() { return 2; }
  Clickable* target = nullptr;
};
struct Button : Drawable, Clickable {
  int click() override { return 3; }
  char* text = nullptr;
};

// Virtual inheritance: a diamond.
struct Vertex {
  virtual ~Vertex() {}
  Vertex* parent = nullptr;
  int id = 0;
};
struct Left : virtual Vertex {
  Left* l = nullptr;
};
struct Right : virtual Vertex {
  Right* r = nullptr;
};
struct Join : Left, Right {
  Join* j = nullptr;
};

// A class template instance.
template <class T, int N>
struct Ring {
  T* items[N];
  int head;
  Ring* next;
};

// A polymorphic template with a non-type argument (DWARF says Tagged<5>, the
// demangler Tagged<5ul>).
template <unsigned long N>
struct Tagged {
  virtual ~Tagged() {}
  char buf[N] = {};
  Tagged* self = nullptr;
};

// Types in namespaces.
namespace geo::detail {
struct Seg {
  Point a, b;
  Seg* next;
};
}  // namespace geo::detail

// Polymorphic objects as members (each a complete object with its own vtable).
struct Frame {
  int id = 0;
  Button button;
  Join join;
  Tagged<5> tag;
  Frame* next = nullptr;
};

// Bit-fields and a union without pointers are fine; so is a union whose
// members are all the same pointer word.
struct Flags {
  unsigned a : 3;
  unsigned b : 5;
  std::uintptr_t bits : 64;
  union {
    int i;
    float f;
  } u;
  union {
    Flags* as_flags;
    Plain* as_plain;
  } link;
};

struct alignas(32) Aligned {
  char c;
  Aligned* p;
};

// Defined in fixture_other.cpp: instantiates type_key<T> there too, so the
// generator sees some types in both objects.
int other_checks();
