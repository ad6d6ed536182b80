// core/schema_registry.hpp: the types of a database and of the program.
//
// Every object on a page carries a type index. The registry maps indexes to
// layouts (size, pointer offsets, vptr offsets, members) as stored in the
// database, and to the program's own descriptors where the program has the
// type. A layout is stored as a schema record ("t:" + name) of format
// "qs-type 2": its numbers, then one typed record per member
// (qs/format/members.hpp). Records of the older format "qs-type 1", whose
// members are text, are converted as they are read (nothing is written at
// open); a layout the registry writes is of the current format. Any other
// format is refused, naming both. A type gets its index, persistently and inside the current
// transaction, when its first object is allocated.
//
// Invariants:
//  * Indexes 1 and 2 are built in (a pointer cell, raw bytes); stored types
//    start at first_stored_type and are never reused.
//  * A program type whose stored layout differs is refused with
//    qs::schema_mismatch naming the type and its first differing member,
//    when the database opens and again when the type is first used.
//  * Types added by a transaction that aborts are forgotten.
//  * index_of answers from a small direct-mapped cache of the descriptors it
//    answered last (every allocation asks); the cache is emptied whenever
//    a descriptor's binding changes, so it never answers what by_desc_
//    would not.
//  * A type's earlier layouts stay in the database ("h:" + name + "@" +
//    index) after schema evolution replaced them, and their indexes are
//    never reused.
#pragma once

#include "core/member_list.hpp"
#include "store/store.hpp"

#include <qs/schema.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs::detail {

constexpr std::uint32_t pointer_type = 1;
constexpr std::uint32_t raw_type = 2;
constexpr std::uint32_t first_stored_type = 16;

struct type_layout {
  std::string name;
  std::uint32_t size = 0;
  std::uint32_t align = 1;
  std::vector<std::uint32_t> pointers;
  std::vector<std::uint32_t> vptrs;
  std::vector<member_info> members;
  const type_descriptor* program = nullptr;
};

class schema_registry {
 public:
  explicit schema_registry(store& s);

  // Reads the stored types and checks the program's registered ones. With
  // changes allowed (set_evolving), a program type whose stored layout
  // differs is listed in pending() instead of refused.
  void load();
  void set_evolving(bool allowed) { evolving_ = allowed; }
  // A program type whose stored layout (at `index`) differs from its own.
  struct pending_change {
    std::uint32_t index;
    const type_descriptor* program;
  };
  const std::vector<pending_change>& pending() const { return pending_; }
  // Inside a transaction: gives the pending type a new index with the
  // program's layout, keeping the stored one as history ("h:" records), and
  // returns the new index. New objects of the type take it from now on.
  std::uint32_t adopt(const pending_change& p);
  // Every type, current or historical, whose layout the database has.
  std::size_t index_limit() const { return layouts_.size(); }
  // The index of d's type, adding it to the database when new.
  std::uint32_t index_of(const type_descriptor* d) {
    const recent_type& r = recent_[recent_slot(d)];
    return r.desc == d ? r.index : index_of_slow(d);
  }
  // The layout of a type index, or nullptr when the database has none.
  const type_layout* layout(std::uint32_t index) const {
    return index < layouts_.size() && !layouts_[index].name.empty() ? &layouts_[index] : nullptr;
  }

  void commit() {
    added_.clear();
    replaced_.clear();
  }
  void abort();

 private:
  std::uint32_t index_of_slow(const type_descriptor* d);
  std::uint32_t add(const type_descriptor* d);
  struct recent_type {
    const type_descriptor* desc = nullptr;
    std::uint32_t index = 0;
  };
  static std::size_t recent_slot(const type_descriptor* d) {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(d) * 0x9e3779b97f4a7c15ull) >> 59);
  }
  void forget_recent() { recent_.fill({}); }
  // Gives d's layout the next index, in the database ("t:" record) and
  // here, within the open transaction (add and adopt).
  std::uint32_t store_new(const type_descriptor* d);
  // Binds d to the stored type of its name, checking the layout; nullopt
  // when the database has no such type.
  std::optional<std::uint32_t> bind_stored(const type_descriptor* d);
  void check(const type_layout& stored, const type_descriptor* d) const;

  store& store_;
  std::vector<type_layout> layouts_;
  std::unordered_map<std::string, std::uint32_t> by_name_;
  std::unordered_map<const type_descriptor*, std::uint32_t> by_desc_;
  std::array<recent_type, 32> recent_{};  // recent_slot(d) -> (d, index)
  std::vector<std::uint32_t> added_;
  bool evolving_ = false;
  std::vector<pending_change> pending_;
  // Types adopt() replaced in this transaction: (name, stored index).
  std::vector<std::pair<std::string, std::uint32_t>> replaced_;
};

type_layout layout_of(const type_descriptor* d);
// Names the member at byte `offset` of a type ("Node::next"), for messages.
std::string member_name(const type_layout& l, std::uint32_t offset);
// A C++ type's readable name from its mangled one (typeid's), for messages.
std::string demangle(const char* mangled);
std::string serialize(const type_layout& l, std::uint32_t index);

}  // namespace qs::detail
