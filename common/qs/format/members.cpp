// Stored member records (members.hpp).
#include <qs/format/members.hpp>

#include <qs/base/error.hpp>

#include <array>
#include <charconv>

namespace qs::detail {
namespace {

constexpr std::array<std::string_view, 6> kind_names{"vptr", "pointer", "array", "number", "opaque", "bits"};
constexpr std::array<std::string_view, 5> number_names{"none", "bool", "sint", "uint", "float"};

template <std::size_t N>
int index_of(const std::array<std::string_view, N>& names, std::string_view word) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == word) return static_cast<int>(i);
  return -1;
}

// The next space- or tab-ended word of s, from `at`.
std::string_view word(std::string_view s, std::size_t& at, char end) {
  std::size_t stop = s.find(end, at);
  if (stop == std::string_view::npos) stop = s.size();
  std::string_view w = s.substr(at, stop - at);
  at = stop == s.size() ? stop : stop + 1;
  return w;
}

}  // namespace

std::string encode_member(const stored_member& m) {
  std::string s(kind_names[static_cast<std::size_t>(m.kind)]);
  s += ' ';
  s += number_names[static_cast<std::size_t>(m.number)];
  for (std::uint32_t v : {m.offset, m.size, m.count, m.element_size, m.first_bit, m.bit_count})
    s += ' ' + std::to_string(v);
  return s + '\t' + m.path + '\t' + m.type + '\t' + m.element;
}

stored_member decode_member(std::string_view line) {
  auto bad = [&](const std::string& what) {
    return corrupt_page(0, "a member record '" + std::string(line.substr(0, 120)) + "' " + what);
  };
  std::size_t tab = line.find('\t');
  if (tab == std::string_view::npos) throw bad("has no path");
  std::string_view head = line.substr(0, tab);
  std::size_t at = 0;
  stored_member m;
  int k = index_of(kind_names, word(head, at, ' '));
  int n = index_of(number_names, word(head, at, ' '));
  if (k < 0 || n < 0) throw bad("names an unknown kind");
  m.kind = static_cast<member_kind>(k);
  m.number = static_cast<number_kind>(n);
  for (std::uint32_t* v : {&m.offset, &m.size, &m.count, &m.element_size, &m.first_bit, &m.bit_count}) {
    std::string_view w = word(head, at, ' ');
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), *v);
    if (w.empty() || ec != std::errc() || end != w.data() + w.size()) throw bad("has a field that is not a number");
  }
  if (at != head.size()) throw bad("has more fields than a member record");
  std::string_view rest = line.substr(tab + 1);
  std::size_t t1 = rest.find('\t');
  std::size_t t2 = t1 == std::string_view::npos ? t1 : rest.find('\t', t1 + 1);
  if (t2 == std::string_view::npos || rest.find('\t', t2 + 1) != std::string_view::npos)
    throw bad("does not have a path, a type and an element");
  m.path = rest.substr(0, t1);
  m.type = rest.substr(t1 + 1, t2 - t1 - 1);
  m.element = rest.substr(t2 + 1);
  if (m.path.empty() || m.type.empty()) throw bad("has an empty path or type");
  const std::uint64_t end = std::uint64_t{m.offset} + m.size;
  switch (m.kind) {
    case member_kind::bits:
      if (m.bit_count == 0 || m.bit_count > 64 || m.offset != m.first_bit / 8 ||
          m.size != (m.first_bit % 8 + m.bit_count + 7) / 8)
        throw bad("is a bit-field whose bits and bytes disagree");
      break;
    case member_kind::array:
      if (m.count == 0 || std::uint64_t{m.count} * m.element_size != m.size)
        throw bad("is an array whose size is not its count times its element size");
      break;
    case member_kind::pointer:
    case member_kind::vptr:
      if (m.size != 8 || m.offset % 8) throw bad("is a pointer that is not one aligned 8-byte word");
      [[fallthrough]];
    default:
      if (m.count != 1 || m.element_size != m.size) throw bad("is a single member with an element count");
  }
  if (end > 0xffffffffu) throw bad("ends past 4 GiB");
  return m;
}

std::string member_line(const stored_member& m) {
  if (m.kind == member_kind::bits)
    return std::to_string(m.first_bit / 8) + "." + std::to_string(m.first_bit % 8) + " " + std::to_string(m.bit_count) +
           "b " + m.path + " " + m.type;
  return std::to_string(m.offset) + " " + std::to_string(m.size) + " " + m.path + " " + m.type;
}

}  // namespace qs::detail
