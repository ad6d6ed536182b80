// core/member_list.hpp: a type's members as the runtime works with them: from
// the program's descriptors (typed records schema-gen wrote from the DWARF),
// from the database's schema records (the same records, qs/format/members.hpp),
// and, for databases whose schema records are of the older text form
// ("qs-type 1"), from that text, converted as it is read.
//
// The text of a member (member_line, "offset size path type") is derived
// from its record, for messages and for comparing a stored layout with the
// program's: two layouts agree when their texts do.
//
// Invariants: a member_info holds what its record says; `type` and
// `element` have const and volatile dropped (what conversions compare),
// `spelled` is the type as the program spelled it.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <qs/format/members.hpp>
#include <qs/schema.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qs::detail {

using number_kind = qs::number_kind;

struct member_info {
  using kind = member_kind;
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
  std::string path;
  std::string type;     // as spelled, const and volatile dropped
  std::string spelled;  // as the program spells it
  kind k = kind::opaque;
  std::string element;                     // a pointer's pointee, an array's element type
  std::uint32_t count = 1;                 // an array's elements
  std::uint32_t element_size = 0;          // an array's element size (a member's size otherwise)
  number_kind number = number_kind::none;  // of a number, or of an array's elements
  std::uint32_t first_bit = 0;             // bit-fields: from the start of the object
  std::uint32_t bit_count = 0;
};

member_info from_stored(const stored_member& s);
stored_member to_stored(const member_info& m);
// The members of a program's type.
std::vector<member_info> members_of(const type_descriptor& d);
// One line per member (member_line), each ended by a newline.
std::string member_text(const std::vector<member_info>& ms);
// The type spelled without const and volatile.
std::string strip_qualifiers(std::string t);

// Parses a member list of the older text form, one "offset size path
// type" line per member, guessing kinds from the spelling as that form
// must; throws qs::schema_error naming `type` when a line is not one
// schema-gen wrote.
std::vector<member_info> parse_members(const std::string& members, const std::string& type);
// The members of a stored layout of the older text form, converted: as
// parse_members, but a line it cannot read makes the layout damaged
// (qs::corrupt_page, naming the type).
std::vector<member_info> convert_text_members(const std::string& members, const std::string& type);

}  // namespace qs::detail
