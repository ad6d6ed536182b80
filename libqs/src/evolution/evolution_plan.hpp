// evolution/evolution_plan.hpp: how the objects of one changed type convert from its
// stored layout to the program's, member by member (qs/evolve.hpp).
//
// A layout's members (core/member_list.hpp) are matched by path; each matched pair becomes a step (copy the bytes,
// convert a number, convert an array's common elements, move a bit-field);
// what cannot be converted by name is refused when the plan is made, so
// that nothing is written for a database that cannot be converted. The plan
// also maps an offset inside a stored object to the same member of the new
// object, for pointers into the middle of objects.
//
// Invariants:
//  * a plan's steps read only inside the stored element and write only
//    inside the new one (sizes checked against both layouts' sizes);
//  * convert_element never writes a value that does not fit its new type:
//    it throws qs::schema_error naming the type, the member and the value.
//
// Thread-safety: a plan is immutable once made; its functions may be called
// from any thread.
#pragma once

#include "core/member_list.hpp"
#include "core/schema_registry.hpp"

#include <qs/evolve.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qs::detail {

// Whether the type named `base` is a base class of the type whose members
// are `derived` (its members inherited from `base` are there).
bool lists_base(const std::string& base, const std::vector<member_info>& derived);

struct type_change {
  std::string name;
  std::uint32_t old_index = 0;
  std::uint32_t old_size = 0;
  const type_descriptor* program = nullptr;
  std::vector<member_info> old_members;
  std::vector<member_info> new_members;
  // (stored member, program member) pairs converted by name.
  std::vector<std::pair<std::size_t, std::size_t>> steps;
  // Where each nested struct, array and base class part that both layouts
  // have starts: (stored offset, program offset), outermost first. A pointer
  // to such a start points to the part, not to its first member.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> part_starts;
  // A union changed: its members are left to the converter.
  bool has_union = false;
  const converter* user = nullptr;
  // "+ weight (double), - mass (int)": what changed, for the report.
  std::string summary;
};

// Whether a pointer to `from` may be kept as a pointer to `to`.
using pointee_check = std::function<bool(const std::string& from, const std::string& to)>;

// The plan for `stored` (the database's layout, at index `old_index`) to
// become `program`. Throws qs::schema_mismatch, naming the type and the
// member, for a change qs cannot make by name and `user` is null.
type_change plan_change(const std::string& db, const type_layout& stored, std::uint32_t old_index,
                        const type_descriptor* program, const converter* user, const pointee_check& related);

// Converts one element: `old` holds old_size bytes, `fresh` the program's
// size, zeroed. Runs the user's converter, if any, after the steps.
void convert_element(const type_change& c, const std::byte* old, std::byte* fresh);

// The offset in the new element of what was at `offset` in the stored one
// (0 <= offset <= old_size); nullopt when it was in a member the program
// dropped, in padding, or inside a scalar whose size changed. `pointee` is
// what the pointer points to as its member declares it ("short int" for a
// short int*), or empty: a pointer to where a member and a nested part both
// start points to the member when it is typed as the member, else to the
// part.
std::optional<std::uint32_t> map_offset(const type_change& c, std::uint32_t offset, std::string_view pointee = {});
// Where the member that starts at `offset` and has type `pointee` went;
// nullopt when no member starting there has that type.
std::optional<std::uint32_t> member_typed(const type_change& c, std::uint32_t offset, std::string_view pointee);

// For each pointer word of a layout, the type its member points to ("Part"
// for a Part* or a Part*[4]), or empty when the member list does not say.
std::vector<std::string> pointees_of(const type_layout& l);

}  // namespace qs::detail
