// The conversion of one changed type, member by member.
#include "evolution/evolution_plan.hpp"

#include <qs/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

namespace qs::detail {
namespace {

// A stored value of a number (or of an opaque member read as a signed
// integer of its size: an enum as its underlying type).
struct number {
  bool floating = false;
  bool negative = false;
  std::uint64_t magnitude = 0;  // integers
  long double f = 0;            // floating
};

number read(const std::byte* p, number_kind k, std::uint32_t size) {
  number n;
  if (k == number_kind::floating) {
    n.floating = true;
    if (size == 4) {
      float v;
      std::memcpy(&v, p, 4);
      n.f = v;
    } else if (size == 8) {
      double v;
      std::memcpy(&v, p, 8);
      n.f = v;
    } else {
      long double v;
      std::memcpy(&v, p, sizeof v < size ? sizeof v : size);
      n.f = v;
    }
    return n;
  }
  std::uint64_t u = 0;
  std::memcpy(&u, p, size);  // little-endian
  if (k == number_kind::boolean) {
    n.magnitude = u;
    return n;
  }
  if (k == number_kind::sint || k == number_kind::none) {
    unsigned shift = 64 - 8 * size;
    auto s = static_cast<std::int64_t>(u << shift) >> shift;
    n.negative = s < 0;
    n.magnitude = s < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(s) : static_cast<std::uint64_t>(s);
    return n;
  }
  n.magnitude = u;
  return n;
}

std::string show(const number& n) {
  std::ostringstream o;
  if (n.floating) {
    o.precision(17);
    o << static_cast<double>(n.f);
  } else {
    o << (n.negative ? "-" : "") << n.magnitude;
  }
  return o.str();
}

// Writes n as a `size`-byte number of kind k; false when it does not fit
// exactly.
bool write(const number& n, std::byte* p, number_kind k, std::uint32_t size) {
  if (k == number_kind::floating) {
    long double v = n.floating ? n.f : (n.negative ? -static_cast<long double>(n.magnitude) : n.magnitude);
    if (size == 4) {
      auto f = static_cast<float>(v);
      if (!(static_cast<long double>(f) == v) && !std::isnan(v)) return false;
      std::memcpy(p, &f, 4);
    } else if (size == 8) {
      auto d = static_cast<double>(v);
      if (!(static_cast<long double>(d) == v) && !std::isnan(v)) return false;
      std::memcpy(p, &d, 8);
    } else {
      std::memcpy(p, &v, std::min<std::size_t>(sizeof v, size));
    }
    return true;
  }
  bool negative = n.negative;
  std::uint64_t magnitude = n.magnitude;
  if (n.floating) {
    long double v = n.f;
    if (std::isnan(v) || v != std::trunc(v) || std::fabs(v) >= 18446744073709551616.0L) return false;
    negative = v < 0;
    magnitude = static_cast<std::uint64_t>(negative ? -v : v);
  }
  if (k == number_kind::boolean) {
    if (negative || magnitude > 1) return false;
    p[0] = static_cast<std::byte>(magnitude);
    return true;
  }
  std::uint64_t bits;
  if (k == number_kind::uint) {
    if (negative && magnitude) return false;
    if (size < 8 && magnitude >> (8 * size)) return false;
    bits = magnitude;
  } else {
    std::uint64_t max_pos = (std::uint64_t{1} << (8 * size - 1)) - 1;
    if (negative ? magnitude > max_pos + 1 : magnitude > max_pos) return false;
    bits = negative ? std::uint64_t(0) - magnitude : magnitude;
  }
  std::memcpy(p, &bits, size);
  return true;
}

// How a member reads as a number: its own kind, or an opaque member of an
// integer's size (an enum) as a signed integer.
number_kind as_number(const member_info& m) {
  if (m.k == member_info::kind::number) return m.number;
  if (m.k == member_info::kind::opaque && (m.size == 1 || m.size == 2 || m.size == 4 || m.size == 8))
    return number_kind::sint;
  return number_kind::none;
}

std::string short_name(std::string n) {
  if (auto lt = n.find('<'); lt != std::string::npos) n.erase(lt);
  if (auto colon = n.rfind("::"); colon != std::string::npos) n.erase(0, colon + 2);
  return n;
}

class stored_view final : public stored_object {
 public:
  stored_view(const type_change& c, const std::byte* old) : c_(c), old_(old) {}
  const std::string& type_name() const override { return c_.name; }
  bool has(std::string_view member) const override { return find(member) != nullptr; }
  std::string type_of(std::string_view member) const override { return need(member).type; }
  std::string_view bytes(std::string_view member) const override {
    const member_info& m = need(member);
    if (m.k == member_info::kind::bits)
      throw schema_error("stored " + c_.name + "::" + m.path + " is a bit-field: read it with get<T>");
    return {reinterpret_cast<const char*>(old_ + m.offset), m.size};
  }

 protected:
  void read_bytes(std::string_view member, void* out, std::size_t size) const override {
    std::string_view b = bytes(member);
    if (b.size() != size)
      throw schema_error("stored " + c_.name + "::" + std::string(member) + " has " + std::to_string(b.size()) +
                         " bytes; it cannot be read as a type of " + std::to_string(size));
    std::memcpy(out, b.data(), size);
  }
  void read_number(std::string_view member, void* out, std::size_t size, bool floating, bool is_signed,
                   bool boolean) const override {
    const member_info& m = need(member);
    number n;
    if (m.k == member_info::kind::bits) {
      std::uint64_t v = 0;
      for (std::uint32_t i = 0; i < m.bit_count; ++i) {
        std::uint32_t b = m.first_bit + i;
        if (std::to_integer<unsigned>(old_[b / 8]) >> (b % 8) & 1u) v |= std::uint64_t{1} << i;
      }
      n.magnitude = v;
    } else {
      number_kind k = as_number(m);
      if (k == number_kind::none)
        throw schema_error("stored " + c_.name + "::" + m.path + " is a " + m.type + ", not a number");
      n = read(old_ + m.offset, k, m.size);
    }
    number_kind want = boolean     ? number_kind::boolean
                       : floating  ? number_kind::floating
                       : is_signed ? number_kind::sint
                                   : number_kind::uint;
    if (!write(n, static_cast<std::byte*>(out), want, static_cast<std::uint32_t>(size)))
      throw schema_error("stored " + c_.name + "::" + m.path + " holds " + show(n) +
                         ", which the type asked for cannot hold");
  }

 private:
  const member_info* find(std::string_view member) const {
    for (const member_info& m : c_.old_members)
      if (m.path == member) return &m;
    return nullptr;
  }
  const member_info& need(std::string_view member) const {
    if (const member_info* m = find(member)) return *m;
    throw schema_error("the stored layout of " + c_.name + " has no member '" + std::string(member) + "'");
  }
  const type_change& c_;
  const std::byte* old_;
};

// Whether a stored member and a program's are the same bytes of the same
// type (bit-fields and vptrs aside, which have their own rules).
bool same_member(const member_info& from, const member_info& to) {
  using K = member_info::kind;
  return from.type == to.type && from.size == to.size && from.k != K::bits && to.k != K::bits &&
         (from.k == K::vptr) == (to.k == K::vptr);
}

void copy_bits(const member_info& from, const member_info& to, const std::byte* old, std::byte* fresh) {
  for (std::uint32_t i = 0; i < from.bit_count && i < to.bit_count; ++i) {
    std::uint32_t a = from.first_bit + i, b = to.first_bit + i;
    bool bit = std::to_integer<unsigned>(old[a / 8]) >> (a % 8) & 1u;
    auto mask = static_cast<std::byte>(1u << (b % 8));
    fresh[b / 8] = bit ? (fresh[b / 8] | mask) : (fresh[b / 8] & ~mask);
  }
}

// The members that overlap another (a union's alternatives), by index.
std::vector<bool> overlapping(const std::vector<member_info>& ms) {
  std::vector<bool> out(ms.size());
  std::uint64_t end = 0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const member_info& m = ms[i];
    if (m.k == member_info::kind::bits || m.size == 0) continue;
    if (m.offset < end) out[i] = out[last] = true;
    if (std::uint64_t{m.offset} + m.size > end) {
      end = std::uint64_t{m.offset} + m.size;
      last = i;
    }
  }
  return out;
}

// The start of every part (nested struct, array element, base class) of a
// layout, by its path prefix ("pair", "pair[1]", "Base::").
std::map<std::string, std::uint32_t> part_starts_of(const std::vector<member_info>& ms) {
  std::map<std::string, std::uint32_t> starts;
  for (const member_info& m : ms) {
    if (m.k == member_info::kind::bits) continue;
    const std::string& p = m.path;
    for (std::size_t i = 1; i < p.size(); ++i) {
      std::size_t cut = std::string::npos;
      if (p[i] == '.' || p[i] == '[') cut = i;
      else if (p[i] == ':' && i + 1 < p.size() && p[i + 1] == ':') cut = i + 2;
      if (cut == std::string::npos) continue;
      auto [it, fresh] = starts.emplace(p.substr(0, cut), m.offset);
      if (!fresh) it->second = std::min(it->second, m.offset);
      if (p[i] == ':') ++i;
    }
  }
  return starts;
}

// Every member inside the type's `size` bytes, a pointer or vptr a whole
// aligned word: a layout from the database is checked before any byte is
// copied by it.
void check_bounds(const std::vector<member_info>& ms, std::uint32_t size, const std::string& what) {
  for (const member_info& m : ms) {
    bool inside = m.k == member_info::kind::bits ? std::uint64_t{m.first_bit} + m.bit_count <= std::uint64_t{size} * 8
                                                 : std::uint64_t{m.offset} + m.size <= size;
    bool word =
        (m.k != member_info::kind::pointer && m.k != member_info::kind::vptr) || (m.size == 8 && m.offset % 8 == 0);
    if (!inside || !word)
      throw schema_error(what + ": member " + m.path + " (" + std::to_string(m.size) + " bytes at offset " +
                         std::to_string(m.offset) + ") does not lie inside its " + std::to_string(size) +
                         " bytes as a " + m.type);
  }
}

}  // namespace

std::vector<std::string> pointees_of(const type_layout& l) {
  std::vector<std::string> out(l.pointers.size());
  for (std::size_t p = 0; p < l.pointers.size(); ++p)
    for (const member_info& m : l.members) {
      if (l.pointers[p] < m.offset || l.pointers[p] >= std::uint64_t{m.offset} + m.size) continue;
      if (m.k == member_info::kind::pointer) out[p] = m.element;
      else if (m.k == member_info::kind::array && !m.element.empty() && m.element.back() == '*')
        out[p] = m.element.substr(0, m.element.size() - 1);
      if (!out[p].empty()) break;
    }
  return out;
}

bool lists_base(const std::string& base, const std::vector<member_info>& derived) {
  std::string prefix = short_name(base) + "::";
  for (const member_info& m : derived)
    if (m.path.starts_with(prefix)) return true;
  return false;
}

namespace {

// The refusal of a change `member` of c's type cannot make by name.
schema_mismatch refusal(const std::string& db, const type_change& c, const std::string& member,
                        const std::string& why) {
  return schema_mismatch("schema evolution of database " + db + ": type " + c.name + ", member " + member + ": " + why +
                         "; qs cannot convert it by name (give a converter for " + c.name +
                         " in qs::options::converters)");
}

// Phase 1: both layouts' members, each inside its layout's size; a stored
// layout that is not is damaged.
void read_layouts(type_change& c, const std::string& db, const type_layout& stored, const type_descriptor* program) {
  c.new_members = members_of(*program);
  try {
    c.old_members = stored.members;
    check_bounds(c.old_members, stored.size, "the stored layout of type " + c.name);
  } catch (const schema_error& e) {
    throw corrupt_page(0, "database " + db + ": " + e.what() + "; the layout is damaged");
  }
  check_bounds(c.new_members, program->size, "the program's layout of type " + c.name);
}

// Phase 2: a union converts only when it is unchanged: each alternative in
// both layouts, with the same type, all moved by the same distance (a
// std::string's buffer, say, in a struct that changed around it). Else
// the converter fills it (has_union), or the change is refused.
void check_unions(type_change& c, const std::string& db) {
  std::map<std::string, std::size_t> old_by_path, new_by_path;
  for (std::size_t i = 0; i < c.old_members.size(); ++i) old_by_path[c.old_members[i].path] = i;
  for (std::size_t j = 0; j < c.new_members.size(); ++j) new_by_path[c.new_members[j].path] = j;
  std::vector<bool> in_old = overlapping(c.old_members), in_new = overlapping(c.new_members);
  std::map<std::string, std::int64_t> shift;  // of each union, by its first alternative's path prefix
  auto same_union = [&](std::size_t i, std::size_t j) {
    const member_info& a = c.old_members[i];
    const member_info& b = c.new_members[j];
    if (a.type != b.type || a.size != b.size || in_old[i] != in_new[j]) return false;
    std::string scope = a.path.substr(0, a.path.rfind('.') == std::string::npos ? 0 : a.path.rfind('.'));
    auto [it, fresh] = shift.emplace(scope, std::int64_t{b.offset} - std::int64_t{a.offset});
    return fresh || it->second == std::int64_t{b.offset} - std::int64_t{a.offset};
  };
  auto changed_union = [&](const member_info& m) {
    c.has_union = true;
    if (!c.user) throw refusal(db, c, m.path, "a union (members that overlap) changed");
  };
  for (std::size_t i = 0; i < c.old_members.size(); ++i) {
    if (!in_old[i]) continue;
    auto n = new_by_path.find(c.old_members[i].path);
    if (n == new_by_path.end() || !same_union(i, n->second)) changed_union(c.old_members[i]);
  }
  for (std::size_t j = 0; j < c.new_members.size(); ++j) {
    if (!in_new[j]) continue;
    auto o = old_by_path.find(c.new_members[j].path);
    if (o == old_by_path.end() || !in_old[o->second]) changed_union(c.new_members[j]);
  }
}

// What phase 3 found, for the summary.
struct member_changes {
  std::string added, removed, changed;
};

// Phase 3: members matched by path; each pair that converts by name is a
// step, any other is refused (or left to the converter).
member_changes match_members(type_change& c, const std::string& db, const pointee_check& related) {
  std::map<std::string, std::size_t> old_by_path;
  for (std::size_t i = 0; i < c.old_members.size(); ++i) old_by_path[c.old_members[i].path] = i;
  const converter* user = c.user;
  auto refuse = [&](const std::string& member, const std::string& why) { return refusal(db, c, member, why); };
  member_changes out;
  std::string& added = out.added;
  std::string& removed = out.removed;
  std::string& changed = out.changed;
  std::vector<bool> matched(c.old_members.size());
  std::vector<std::string> moves;
  auto item = [](std::string& list, const std::string& s) { list += (list.empty() ? "" : ", ") + s; };
  using K = member_info::kind;
  for (std::size_t j = 0; j < c.new_members.size(); ++j) {
    const member_info& to = c.new_members[j];
    auto it = old_by_path.find(to.path);
    if (it == old_by_path.end()) {
      if (to.k != K::vptr) item(added, "+ " + to.path + " (" + to.type + ")");
      continue;
    }
    const member_info& from = c.old_members[it->second];
    matched[it->second] = true;
    std::string why;
    bool ok = true;
    if (same_member(from, to)) {
      // Unchanged: copied as it is, whatever kinds the two layouts' forms
      // gave it (a database's older text form guessed them from spellings).
    } else if (from.k == K::vptr || to.k == K::vptr) {
      ok = from.k == to.k;
      why = "a vtable pointer and a data member";
    } else if (from.k == K::bits || to.k == K::bits) {
      ok = from.k == to.k && from.bit_count == to.bit_count;
      why = "a bit-field that changed (" + from.type + " to " + to.type + ")";
    } else if (from.k == K::pointer || to.k == K::pointer) {
      ok = from.k == to.k && (from.element == to.element || related(from.element, to.element));
      why = from.k == to.k ? "a pointer retargeted from " + from.element + " to the unrelated type " + to.element
                           : "a pointer and a non-pointer (" + from.type + " to " + to.type + ")";
    } else if (from.k == K::array || to.k == K::array) {
      if (from.k != to.k) {
        ok = false;
        why = "an array and a non-array (" + from.type + " to " + to.type + ")";
      } else if (from.element.back() == '*' || to.element.back() == '*') {
        std::string a = from.element.substr(0, from.element.size() - 1),
                    b = to.element.substr(0, to.element.size() - 1);
        ok = from.element.back() == to.element.back() && (a == b || related(a, b));
        why = "an array of " + from.element + " that became an array of " + to.element;
      } else if (from.element != to.element || from.element_size != to.element_size) {
        ok = from.number != number_kind::none && to.number != number_kind::none;
        why = "an array of " + from.element + " that became an array of " + to.element;
      }
    } else if (from.type != to.type || from.size != to.size) {
      ok = as_number(from) != number_kind::none && as_number(to) != number_kind::none;
      why = from.type + " cannot become " + to.type;
    }
    if (!ok) {
      if (!user) throw refuse(to.path, why);
      continue;  // the converter fills it
    }
    c.steps.emplace_back(it->second, j);
    if (from.type != to.type) item(changed, "~ " + to.path + " (" + from.type + " -> " + to.type + ")");
    else if (from.offset != to.offset && to.k != K::vptr)
      moves.push_back("moved " + to.path + " (offset " + std::to_string(from.offset) + " -> " +
                      std::to_string(to.offset) + ")");
  }
  // A few moves are named; many (every member after an added one) counted.
  if (moves.size() <= 3)
    for (const std::string& m : moves) item(changed, m);
  else item(changed, std::to_string(moves.size()) + " members moved");
  for (std::size_t i = 0; i < c.old_members.size(); ++i)
    if (!matched[i] && c.old_members[i].k != K::vptr)
      item(removed, "- " + c.old_members[i].path + " (" + c.old_members[i].type + ")");
  return out;
}

// Phase 4: a standard container's node whose key changed: its tree order
// or its hash may no longer hold for the converted keys, and no conversion
// of one node can mend that.
void check_container_keys(const type_change& c, const std::string& db) {
  const bool ordered = c.name.starts_with("std::_Rb_tree_node<");
  const bool hashed = c.name.starts_with("std::__detail::_Hash_node<");
  if (ordered || hashed) {
    const bool pair = c.name.find("<std::pair<") != std::string::npos;
    const std::string key = pair ? "_M_storage.first" : "_M_storage";
    auto in_key = [&](const member_info& m) {
      auto at = m.path.find(key);
      return at != std::string::npos &&
             (at + key.size() == m.path.size() || m.path[at + key.size()] == '.' || m.path[at + key.size()] == '[');
    };
    std::vector<bool> kept(c.new_members.size());
    for (auto [i, j] : c.steps) {
      const member_info& from = c.old_members[i];
      const member_info& to = c.new_members[j];
      kept[j] = true;
      if (!in_key(from)) continue;
      // Exact conversions of numbers keep their order; a hash sees bytes.
      bool same = from.type == to.type && from.size == to.size;
      if (!same && (hashed || as_number(from) == number_kind::none || as_number(to) == number_kind::none))
        throw schema_mismatch("schema evolution of database " + db + ": the key of " +
                              (hashed ? "a hashed" : "an ordered") + " standard container's node changed (" + c.name +
                              ", member " + to.path + ": " + from.type + " -> " + to.type + "): the container's " +
                              (hashed ? "hashing" : "order") + " would not hold; qs refuses to convert it");
    }
    for (std::size_t i = 0; i < c.old_members.size(); ++i)
      if (in_key(c.old_members[i]) &&
          std::none_of(c.steps.begin(), c.steps.end(), [&](auto s) { return s.first == i; }))
        throw schema_mismatch("schema evolution of database " + db + ": the key of a standard container's node lost " +
                              "member " + c.old_members[i].path + " (" + c.name +
                              "): the container's order or hashing would not hold; qs refuses to convert it");
    for (std::size_t j = 0; j < c.new_members.size(); ++j)
      if (in_key(c.new_members[j]) && !kept[j])
        throw schema_mismatch("schema evolution of database " + db +
                              ": the key of a standard container's node gained " + "member " + c.new_members[j].path +
                              " (" + c.name +
                              "): the container's order or hashing would not hold; qs refuses to convert it");
  }
}

// Phase 5: where each nested part both layouts have starts, outermost
// first.
void find_part_starts(type_change& c) {
  auto old_parts = part_starts_of(c.old_members), new_parts = part_starts_of(c.new_members);
  std::vector<std::pair<std::size_t, std::pair<std::uint32_t, std::uint32_t>>> parts;
  for (const auto& [prefix, at] : old_parts)
    if (auto n = new_parts.find(prefix); n != new_parts.end()) parts.push_back({prefix.size(), {at, n->second}});
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& p : parts) c.part_starts.push_back(p.second);
}

}  // namespace

type_change plan_change(const std::string& db, const type_layout& stored, std::uint32_t old_index,
                        const type_descriptor* program, const converter* user, const pointee_check& related) {
  type_change c;
  c.name = stored.name;
  c.old_index = old_index;
  c.old_size = stored.size;
  c.program = program;
  c.user = user;
  read_layouts(c, db, stored, program);
  check_unions(c, db);
  member_changes m = match_members(c, db, related);
  check_container_keys(c, db);
  find_part_starts(c);
  for (const std::string* part : {&m.added, &m.removed, &m.changed})
    if (!part->empty()) c.summary += (c.summary.empty() ? "" : ", ") + *part;
  if (c.summary.empty()) c.summary = "layout changed";
  if (stored.size != program->size)
    c.summary += "; size " + std::to_string(stored.size) + " -> " + std::to_string(program->size) + " bytes";
  if (user) c.summary += "; the program's converter runs";
  return c;
}

void convert_element(const type_change& c, const std::byte* old, std::byte* fresh) {
  using K = member_info::kind;
  for (auto [i, j] : c.steps) {
    const member_info& from = c.old_members[i];
    const member_info& to = c.new_members[j];
    if (to.k == K::vptr) continue;  // the program's vtables are set by the caller
    if (same_member(from, to)) {
      std::memcpy(fresh + to.offset, old + from.offset, to.size);
      continue;
    }
    if (to.k == K::bits) {
      copy_bits(from, to, old, fresh);
      continue;
    }
    if (to.k == K::array) {
      std::uint32_t n = std::min(from.count, to.count);
      bool same = from.element == to.element && from.element_size == to.element_size;
      for (std::uint32_t e = 0; e < n; ++e) {
        const std::byte* a = old + from.offset + std::uint64_t{e} * from.element_size;
        std::byte* b = fresh + to.offset + std::uint64_t{e} * to.element_size;
        if (same || to.element.back() == '*') {
          std::memcpy(b, a, std::min(from.element_size, to.element_size));
          continue;
        }
        number v = read(a, from.number, from.element_size);
        if (!write(v, b, to.number, to.element_size))
          throw schema_error("schema evolution: " + c.name + "::" + to.path + "[" + std::to_string(e) + "] holds " +
                             show(v) + ", which " + to.element + " cannot hold; nothing was converted");
      }
      continue;
    }
    if (from.type == to.type && from.size == to.size) {
      std::memcpy(fresh + to.offset, old + from.offset, to.size);
      continue;
    }
    if (to.k == K::pointer) {
      std::memcpy(fresh + to.offset, old + from.offset, 8);
      continue;
    }
    number v = read(old + from.offset, as_number(from), from.size);
    if (!write(v, fresh + to.offset, as_number(to), to.size))
      throw schema_error("schema evolution: " + c.name + "::" + to.path + " holds " + show(v) + ", which " + to.type +
                         " cannot hold; nothing was converted");
  }
  if (c.user) {
    stored_view view(c, old);
    (*c.user)(view, fresh);
  }
}

std::optional<std::uint32_t> member_typed(const type_change& c, std::uint32_t offset, std::string_view pointee) {
  if (pointee.empty()) return std::nullopt;
  for (auto [i, j] : c.steps) {
    const member_info& from = c.old_members[i];
    const member_info& to = c.new_members[j];
    if (from.k == member_info::kind::bits || from.k == member_info::kind::vptr || from.offset != offset) continue;
    if ((from.k == member_info::kind::array ? from.element : from.type) == pointee) return to.offset;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> map_offset(const type_change& c, std::uint32_t offset, std::string_view pointee) {
  if (offset == c.old_size) return c.program->size;
  if (auto member = member_typed(c, offset, pointee)) return member;
  for (auto [from, to] : c.part_starts)
    if (from == offset) return to;
  for (auto [i, j] : c.steps) {
    const member_info& from = c.old_members[i];
    const member_info& to = c.new_members[j];
    if (from.k == member_info::kind::bits || offset < from.offset || offset >= from.offset + from.size) continue;
    std::uint32_t in = offset - from.offset;
    std::uint32_t e = in / from.element_size, r = in % from.element_size;
    if (e >= to.count) return std::nullopt;
    if (r && from.element_size != to.element_size) return std::nullopt;
    return to.offset + e * to.element_size + r;
  }
  return std::nullopt;
}

}  // namespace qs::detail
