// qs/format/members.hpp: the members of a persistent type as the database
// stores them, and as a program's .qs_schema section lists them: one typed
// record per member (kind, offset, size, element count, bits, path, type,
// element), not text to be read back by its spelling.
//
// A record is one line (encode_member, decode_member):
//
//   KIND NUMBER OFFSET SIZE COUNT ELEMENT_SIZE FIRST_BIT BIT_COUNT\tPATH\tTYPE\tELEMENT
//
// KIND is vptr, pointer, array, number, opaque or bits; NUMBER none, bool,
// sint, uint or float. The older form, one "offset size path type" line per
// member (schema records "qs-type 1"), is what member_line writes: the text
// messages quote.
//
// Invariants of a decoded record (decode_member checks them, whatever the
// bytes): every number fits 32 bits; path and type are not empty and hold
// no tab; an array's size is count * element_size; a bit-field has 1 to 64
// bits, and its offset and size are the bytes those bits touch; a pointer
// or vptr is one 8-byte word.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qs {

// What a member holds, as the program's DWARF says (qs/schema.hpp).
enum class member_kind : std::uint8_t {
  vptr,     // a vtable pointer
  pointer,  // a pointer word (element: what it points to)
  array,    // an array of numbers, pointers or other scalars (element, count)
  number,   // an integer, a floating-point number or a bool (number)
  opaque,   // other bytes (an enum, a nullptr_t): copied, never converted
  bits,     // a bit-field (first_bit, bit_count; number: of its type)
};

enum class number_kind : std::uint8_t { none, boolean, sint, uint, floating };

}  // namespace qs

namespace qs::detail {

struct stored_member {
  member_kind kind = member_kind::opaque;
  number_kind number = number_kind::none;
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
  std::uint32_t count = 1;
  std::uint32_t element_size = 0;
  std::uint32_t first_bit = 0;
  std::uint32_t bit_count = 0;
  std::string path;
  std::string type;     // as the program spells it
  std::string element;  // a pointer's pointee, an array's element type
  bool operator==(const stored_member&) const = default;
};

std::string encode_member(const stored_member& m);
// Throws qs::corrupt_page (page 0) saying what is wrong with `line`.
stored_member decode_member(std::string_view line);
// The member as one "offset size path type" line ("offset.bit Nb path type"
// for a bit-field): what messages quote, and the form of "qs-type 1".
std::string member_line(const stored_member& m);

}  // namespace qs::detail
