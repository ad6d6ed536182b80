// A type's members from records, stored records and the older text form
// (member_list.hpp).
#include "core/member_list.hpp"

#include <qs/error.hpp>

#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

namespace qs::detail {

std::string strip_qualifiers(std::string t) {
  for (const char* q : {"const ", "volatile "})
    for (std::size_t at; (at = t.find(q)) != std::string::npos &&
                         (at == 0 || t[at - 1] == ' ' || t[at - 1] == '<' || t[at - 1] == '(' || t[at - 1] == ',');)
      t.erase(at, std::strlen(q));
  for (const char* q : {" const", " volatile"})
    for (std::size_t at; (at = t.find(q)) != std::string::npos;) t.erase(at, std::strlen(q));
  return t;
}

namespace {

number_kind number_of(const std::string& t, std::uint32_t size) {
  static const std::map<std::string, number_kind> names = {
      {"bool", number_kind::boolean},
      {"char", number_kind::sint},
      {"signed char", number_kind::sint},
      {"unsigned char", number_kind::uint},
      {"short int", number_kind::sint},
      {"short unsigned int", number_kind::uint},
      {"int", number_kind::sint},
      {"unsigned int", number_kind::uint},
      {"long int", number_kind::sint},
      {"long unsigned int", number_kind::uint},
      {"long long int", number_kind::sint},
      {"long long unsigned int", number_kind::uint},
      {"wchar_t", number_kind::sint},
      {"char8_t", number_kind::uint},
      {"char16_t", number_kind::uint},
      {"char32_t", number_kind::uint},
      {"float", number_kind::floating},
      {"double", number_kind::floating},
      {"long double", number_kind::floating},
  };
  auto it = names.find(t);
  if (it == names.end()) return number_kind::none;
  if (it->second == number_kind::floating ? (size != 4 && size != 8 && size != 16)
                                          : (size != 1 && size != 2 && size != 4 && size != 8))
    return number_kind::none;
  return it->second;
}

}  // namespace

member_info from_stored(const stored_member& s) {
  member_info m;
  m.offset = s.offset;
  m.size = s.size;
  m.path = s.path;
  m.spelled = s.type;
  m.type = strip_qualifiers(s.type);
  m.k = s.kind;
  m.element = strip_qualifiers(s.element);
  m.count = s.count;
  m.element_size = s.element_size;
  m.number = s.number;
  m.first_bit = s.first_bit;
  m.bit_count = s.bit_count;
  return m;
}

stored_member to_stored(const member_info& m) {
  stored_member s;
  s.kind = m.k;
  s.number = m.number;
  s.offset = m.offset;
  s.size = m.size;
  s.count = m.count;
  s.element_size = m.element_size;
  s.first_bit = m.first_bit;
  s.bit_count = m.bit_count;
  s.path = m.path;
  s.type = m.spelled;
  s.element = m.element;
  return s;
}

std::vector<member_info> members_of(const type_descriptor& d) {
  std::vector<member_info> out;
  out.reserve(d.member_count);
  for (std::uint32_t i = 0; i < d.member_count; ++i) {
    const member_record& r = d.members[i];
    stored_member s{r.kind,
                    r.number,
                    r.offset,
                    r.size,
                    r.count,
                    r.element_size,
                    r.first_bit,
                    r.bit_count,
                    r.path,
                    r.type,
                    r.element ? r.element : ""};
    out.push_back(from_stored(s));
  }
  return out;
}

std::string member_text(const std::vector<member_info>& ms) {
  std::string s;
  for (const member_info& m : ms) s += member_line(to_stored(m)) + "\n";
  return s;
}

std::vector<member_info> parse_members(const std::string& members, const std::string& type) {
  std::vector<member_info> out;
  std::istringstream in(members);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto bad = [&] { return schema_error("type " + type + ": a member line qs cannot read: '" + line + "'"); };
    std::istringstream ls(line);
    std::string off, size;
    member_info m;
    if (!(ls >> off >> size >> m.path)) throw bad();
    std::getline(ls >> std::ws, m.spelled);
    if (m.spelled.empty()) throw bad();
    m.type = m.spelled;
    try {
      if (!size.empty() && size.back() == 'b') {
        auto dot = off.find('.');
        if (dot == std::string::npos) throw bad();
        m.k = member_info::kind::bits;
        m.bit_count = static_cast<std::uint32_t>(std::stoul(size.substr(0, size.size() - 1)));
        m.first_bit = static_cast<std::uint32_t>(std::stoul(off.substr(0, dot)) * 8 + std::stoul(off.substr(dot + 1)));
        m.offset = m.first_bit / 8;
        m.size = (m.first_bit % 8 + m.bit_count + 7) / 8;
        if (m.bit_count == 0 || m.bit_count > 64) throw bad();
        out.push_back(std::move(m));
        continue;
      }
      m.offset = static_cast<std::uint32_t>(std::stoul(off));
      m.size = static_cast<std::uint32_t>(std::stoul(size));
    } catch (const std::logic_error&) {
      throw bad();
    }
    m.type = strip_qualifiers(m.type);
    m.element_size = m.size;
    if (m.type == "vptr") {
      m.k = member_info::kind::vptr;
    } else if (m.type.back() == ']') {
      auto lb = m.type.find('[');
      std::uint64_t count = 1;
      for (std::size_t at = lb; at != std::string::npos && at < m.type.size(); at = m.type.find('[', at + 1)) {
        auto rb = m.type.find(']', at);
        if (rb == std::string::npos) throw bad();
        try {
          count *= std::stoul(m.type.substr(at + 1, rb - at - 1));
        } catch (const std::logic_error&) {
          count = 0;  // no bound ("char[]"): bytes, as schema-gen records it
          break;
        }
      }
      if (count == 0) {
        out.push_back(std::move(m));
        continue;
      }
      if (m.size % count) throw bad();
      m.k = member_info::kind::array;
      m.element = m.type.substr(0, lb);
      m.count = static_cast<std::uint32_t>(count);
      m.element_size = static_cast<std::uint32_t>(m.size / count);
      m.number = number_of(m.element, m.element_size);
    } else if (m.type.back() == '*') {
      m.k = member_info::kind::pointer;
      m.element = m.type.substr(0, m.type.size() - 1);
    } else if ((m.number = number_of(m.type, m.size)) != number_kind::none) {
      m.k = member_info::kind::number;
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<member_info> convert_text_members(const std::string& members, const std::string& type) {
  try {
    return parse_members(members, type);
  } catch (const schema_error& e) {
    throw corrupt_page(0, std::string(e.what()) + "; the stored layout of type " + type + " is damaged");
  }
}

}  // namespace qs::detail
