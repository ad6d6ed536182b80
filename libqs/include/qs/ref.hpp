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
// In hardware mode, qs::ref<T> is T* itself and qs::write(p) returns p:
// both cost nothing, and the code is ordinary C++. (Software mode replaces
// this header's definitions; see DESIGN.md.)
#pragma once

namespace qs {

template <class T>
using ref = T*;

template <class T>
constexpr T* write(T* p) noexcept {
  return p;
}

}  // namespace qs
