// oo7/bag.hpp: OO7's persistent collection, an ordered bag of references.
//
// A bag<T, Inline, Cap> is embedded in its owner object: a count, the first
// `Inline` references in place, and a chain of bag_chunk objects of `Cap`
// references each for the rest. Chunks are allocated next to the owner
// (oo7::make_near), so a bag stays in its owner's cluster. Everything in it
// is an oo7::ref and every update of a chunk goes through oo7::write, so it
// works unchanged when a reference is an object identifier instead of an
// address.
//
// Semantics (OO7-SPEC 1.3): ordered, duplicates allowed; add() appends;
// remove() deletes the first occurrence and keeps the order of the rest.
//
// Invariants:
//  * size() == Inline-slots used + sum of chunk `used` counts; all chunks but
//    the last are full, and no chunk is empty.
//  * Mutating calls (add, remove, clear) run on a bag reached through
//    oo7::write(owner) and are given that owner.
#pragma once

#include "mode.hpp"

#include <cstdint>

namespace oo7 {

template <class T, int Cap>
struct bag_chunk {
  OO7_PERSISTENT(bag_chunk)
  std::int32_t used = 0;
  ref<bag_chunk> next = nullptr;
  ref<T> items[Cap] = {};
};

template <class T, int Inline, int Cap>
struct bag {
  static_assert(Inline >= 1 && Cap >= 1);
  using chunk = bag_chunk<T, Cap>;

  std::int32_t count = 0;
  ref<T> inl[Inline] = {};
  ref<chunk> head = nullptr;
  ref<chunk> tail = nullptr;

  std::int32_t size() const { return count; }
  bool empty() const { return count == 0; }

  // Calls f(ref<T>) for every element in order.
  template <class F>
  void each(F f) const {
    std::int32_t n = count;
    std::int32_t k = n < Inline ? n : Inline;
    for (std::int32_t i = 0; i < k; ++i) f(inl[i]);
    for (ref<chunk> c = head; c; c = c->next) {
      std::int32_t u = c->used;
      for (std::int32_t i = 0; i < u; ++i) f(c->items[i]);
    }
  }

  // Calls f(ref<T>) in order until it returns true; whether one did.
  template <class F>
  bool any(F f) const {
    std::int32_t k = count < Inline ? count : Inline;
    for (std::int32_t i = 0; i < k; ++i)
      if (f(inl[i])) return true;
    for (ref<chunk> c = head; c; c = c->next)
      for (std::int32_t i = 0, u = c->used; i < u; ++i)
        if (f(c->items[i])) return true;
    return false;
  }

  ref<T> at(std::int32_t i) const {
    if (i < Inline) return inl[i];
    i -= Inline;
    ref<chunk> c = head;
    for (; i >= Cap; i -= Cap) c = c->next;
    return c->items[i];
  }

  std::int32_t occurrences(ref<T> x) const {
    std::int32_t n = 0;
    each([&](ref<T> y) { n += (y == x); });
    return n;
  }

  // Appends x. `this` must be inside write(owner).
  template <class O>
  void add(ref<T> x, ref<O> owner) {
    if (count < Inline) {
      inl[count++] = x;
      return;
    }
    if (!tail || tail->used == Cap) {
      ref<chunk> c = make_near<chunk>(owner);
      if (tail) write(tail)->next = c;
      else head = c;
      tail = c;
    }
    auto t = write(tail);
    t->items[t->used++] = x;
    ++count;
  }

  // Removes the first occurrence of x, keeping the order; whether there was one.
  bool remove(ref<T> x) {
    std::int32_t pos = -1, i = 0;
    any([&](ref<T> y) {
      if (y == x) pos = i;
      ++i;
      return pos >= 0;
    });
    if (pos < 0) return false;
    for (std::int32_t j = pos; j + 1 < count; ++j) set(j, at(j + 1));
    --count;
    if (count >= Inline) {  // the old last element sat in the tail chunk
      auto t = write(tail);
      t->items[--t->used] = nullptr;
      if (t->used == 0) drop_tail();
    } else {
      inl[count] = nullptr;
    }
    return true;
  }

  // Empties the bag and frees its chunks.
  void clear() {
    for (ref<chunk> c = head; c;) {
      ref<chunk> n = c->next;
      destroy(c);
      c = n;
    }
    head = tail = nullptr;
    count = 0;
  }

 private:
  void set(std::int32_t i, ref<T> x) {
    if (i < Inline) {
      inl[i] = x;
      return;
    }
    i -= Inline;
    ref<chunk> c = head;
    for (; i >= Cap; i -= Cap) c = c->next;
    write(c)->items[i] = x;
  }
  // Frees the (now empty) last chunk.
  void drop_tail() {
    if (!tail) return;
    ref<chunk> prev = nullptr;
    for (ref<chunk> c = head; c != tail; c = c->next) prev = c;
    destroy(tail);
    tail = prev;
    if (prev) write(prev)->next = nullptr;
    else head = nullptr;
  }
};

}  // namespace oo7
