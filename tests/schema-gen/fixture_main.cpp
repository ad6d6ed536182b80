// The schema-gen fixture: every descriptor that the generated code registered
// is checked against what the compiler says about the type: sizeof, alignof,
// the offset of every pointer word (taken from the addresses of the members
// of a real object), and for every vptr, the word the constructor stored.
#include "fixture_types.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

namespace {

int failures = 0;

#define FAIL(...)             \
  do {                        \
    std::printf("FAIL: ");    \
    std::printf(__VA_ARGS__); \
    std::printf("\n");        \
    ++failures;               \
  } while (0)

template <class T, class M>
std::uint32_t at(const T& object, const M& member) {
  return static_cast<std::uint32_t>(reinterpret_cast<const char*>(&member) - reinterpret_cast<const char*>(&object));
}

std::string show(const std::set<std::uint32_t>& s) {
  std::string r;
  for (auto v : s) r += std::to_string(v) + " ";
  return r;
}

template <class T>
void check(const char* what, const T& object, const char* name, std::set<std::uint32_t> pointers,
           std::set<std::uint32_t> vptrs, std::initializer_list<const char*> lines) {
  const qs::type_descriptor* d = qs::detail::type_key<T>::slot.desc;
  if (!d) {
    FAIL("%s: no descriptor registered", what);
    return;
  }
  if (std::strcmp(d->name, name) != 0) FAIL("%s: name '%s', expected '%s'", what, d->name, name);
  if (d->size != sizeof(T)) FAIL("%s: size %u, sizeof %zu", what, d->size, sizeof(T));
  if (d->align != alignof(T)) FAIL("%s: align %u, alignof %zu", what, d->align, alignof(T));
  std::set<std::uint32_t> got;
  for (std::uint32_t i = 0; i < d->pointer_count; ++i) {
    if (i && d->pointers[i] <= d->pointers[i - 1]) FAIL("%s: pointer offsets not sorted", what);
    got.insert(d->pointers[i]);
  }
  if (got != pointers) FAIL("%s: pointers at { %s}, expected { %s}", what, show(got).c_str(), show(pointers).c_str());
  std::set<std::uint32_t> vgot;
  for (std::uint32_t i = 0; i < d->vptr_count; ++i) {
    const qs::vptr_entry& e = d->vptrs[i];
    vgot.insert(e.offset);
    const void* stored;
    std::memcpy(&stored, reinterpret_cast<const char*>(&object) + e.offset, sizeof stored);
    const void* want = static_cast<const char*>(e.vtable) + e.address_point;
    if (stored != want)
      FAIL("%s: vptr at %u holds %p, descriptor says %s+%u = %p", what, e.offset, stored, e.vtable_name,
           e.address_point, want);
    if (!e.vtable_name || std::strncmp(e.vtable_name, "_ZTV", 4) != 0)
      FAIL("%s: vptr at %u: vtable name '%s'", what, e.offset, e.vtable_name);
  }
  if (vgot != vptrs) FAIL("%s: vptrs at { %s}, expected { %s}", what, show(vgot).c_str(), show(vptrs).c_str());
  // The member records as the text messages quote (qs/format/members.hpp's
  // member_line), each record's kind checked against its type.
  std::string members;
  for (std::uint32_t i = 0; i < d->member_count; ++i) {
    const qs::member_record& r = d->members[i];
    char line[1200];
    if (r.kind == qs::member_kind::bits)
      std::snprintf(line, sizeof line, "%u.%u %ub %s %s", r.first_bit / 8, r.first_bit % 8, r.bit_count, r.path,
                    r.type);
    else std::snprintf(line, sizeof line, "%u %u %s %s", r.offset, r.size, r.path, r.type);
    members += std::string(i ? "\n" : "") + line;
    std::string type = r.type;
    for (const char* q : {" const", " volatile"})
      if (type.size() > std::strlen(q) && type.ends_with(q)) type.resize(type.size() - std::strlen(q));
    const bool pointer = r.kind == qs::member_kind::pointer;
    if (!pointer && type.back() == '*' && type.find('[') == std::string::npos)
      FAIL("%s: member '%s' is spelled as a pointer but not recorded as one", what, line);
    if (pointer && (!r.element || !*r.element)) FAIL("%s: pointer member '%s' has no pointee", what, line);
    if (r.kind == qs::member_kind::array && (r.count == 0 || r.count * r.element_size != r.size))
      FAIL("%s: array member '%s' has %u elements of %u bytes", what, line, r.count, r.element_size);
    if (r.kind == qs::member_kind::vptr && type != "vptr") FAIL("%s: member '%s' is recorded as a vptr", what, line);
  }
  // Every line is "offset size path type" and lies inside the object
  // (bit-fields: "byte.bit bitsb path type").
  for (std::size_t at = 0; at < members.size();) {
    std::size_t end = members.find('\n', at);
    if (end == std::string::npos) end = members.size();
    std::string line = members.substr(at, end - at);
    unsigned off = 0, size = 0, bit = 0;
    char path[512];
    if (std::sscanf(line.c_str(), "%u %u %511s", &off, &size, path) == 3) {
      if (off + size > sizeof(T)) FAIL("%s: member line '%s' lies outside the object", what, line.c_str());
    } else if (std::sscanf(line.c_str(), "%u.%u %ub %511s", &off, &bit, &size, path) == 4) {
      if (off * 8 + bit + size > 8 * sizeof(T)) FAIL("%s: bit-field '%s' lies outside the object", what, line.c_str());
    } else {
      FAIL("%s: malformed member line '%s'", what, line.c_str());
    }
    at = end + 1;
  }
  std::string padded = "\n" + members + "\n";
  for (const char* l : lines)
    if (padded.find("\n" + std::string(l) + "\n") == std::string::npos)
      FAIL("%s: member list lacks the line '%s'; it is:\n%s", what, l, members.c_str());
}

template <class T, class E>
std::set<std::uint32_t> pointer_array(const T& object, E* const* first, std::size_t n,
                                      std::set<std::uint32_t> more = {}) {
  for (std::size_t i = 0; i < n; ++i) more.insert(at(object, first[i]));
  return more;
}

}  // namespace

// Never called: instantiates the persistent allocations of the containers
// (type_key of their node types) and of QS_PERSISTENT. External, so that it
// is compiled although nothing calls it.
Plain* instantiate(qs::database& db, Bag& bag);
Plain* instantiate(qs::database& db, Bag& bag) {
  bag.v.push_back(nullptr);
  bag.s += "a string too long for the small-string buffer";
  bag.m[1] = nullptr;
  return new (db) Plain{1, nullptr, nullptr, 0};
}

int main() {
  {
    static Plain p{};
    check("Plain", p, "Plain", {at(p, p.next), at(p, p.name)}, {},
          {"0 4 value int", "8 8 next Plain*", "16 8 name const char*"});
  }
  {
    static Square s{};
    check("Square", s, "Square", {at(s, s.parent), at(s, s.label), at(s, s.twin)}, {},
          {"8 8 Shape::parent Shape*", "16 8 Named::label char*", "32 8 twin Square*"});
  }
  {
    static Rect r{};
    check("Rect", r, "Rect", {at(r, r.pos.link), at(r, r.size.link), at(r, r.next)}, {},
          {"4 4 pos.y int", "24 8 size.link Point*"});
  }
  {
    static Polygon g{};
    check("Polygon", g, "Polygon", {at(g, g.pts[0].link), at(g, g.pts[1].link), at(g, g.pts[2].link), at(g, g.next)},
          {}, {"40 8 pts[2].link Point*", "48 4 n int"});
  }
  {
    static Grid g{};
    std::set<std::uint32_t> p = {at(g, g.self)};
    for (auto& row : g.cells)
      for (auto& c : row) p.insert(at(g, c));
    for (auto& row : g.corners)
      for (auto& c : row) p.insert(at(g, c.link));
    check("Grid", g, "Grid", p, {},
          {"8 48 cells int*[2][3]", "96 4 corners[1][0].x int", "104 8 corners[1][0].link Point*"});
  }
  {
    static Bag b{};
    // libstdc++: a vector is three pointers; a string's first word is its
    // data pointer; a map ends with its header node (color, parent, left,
    // right) and a count.
    static_assert(sizeof(b.v) == 3 * sizeof(void*));
    std::uint32_t v = at(b, b.v), s = at(b, b.s);
    std::uint32_t h = at(b, b.m) + sizeof(plain_map) - sizeof(std::_Rb_tree_header);
    std::uint32_t links = offsetof(std::_Rb_tree_header, _M_header._M_parent);
    if (*reinterpret_cast<const char* const*>(&b.s) != b.s.data())
      FAIL("Bag: a string's first word is not its data pointer");
    std::set<std::uint32_t> p = {v, v + 8, v + 16, s, h + links, h + links + 8, h + links + 16, at(b, b.next)};
    check("Bag", b, "Bag", p, {}, {"24 8 s._M_dataplus._M_p char*"});
    // The map's node type was registered by qs::allocator's instantiation.
    using node = std::_Rb_tree_node<std::pair<const int, Plain*>>;
    static node n;
    check("map node", n, "std::_Rb_tree_node<std::pair<int const, Plain*> >",
          {at(n, n._M_parent), at(n, n._M_left), at(n, n._M_right), at(n, n._M_valptr()->second)}, {},
          {"40 8 _M_storage.second Plain*"});
  }
  {
    static Dog d;
    check("Dog", d, "Dog", {at(d, d.mate), at(d, d.pup)}, {0},
          {"0 8 Animal::_vptr.Animal vptr", "8 8 Animal::mate Animal*", "24 8 pup Dog*"});
  }
  {
    static Button b;
    const Clickable& c = b;
    check("Button", b, "Button", {at(b, b.target), at(b, b.text)}, {0, at(b, c)},
          {"16 8 Clickable::_vptr.Clickable vptr", "24 8 Clickable::target Clickable*"});
  }
  {
    static Join j;
    const Right& r = j;
    const Vertex& v = j;
    check("Join", j, "Join", {at(j, j.l), at(j, j.r), at(j, j.j), at(j, j.parent)}, {0, at(j, r), at(j, v)},
          {"8 8 Left::l Left*", "48 8 Vertex::parent Vertex*"});
    static Left l;
    const Vertex& lv = l;
    check("Left", l, "Left", {at(l, l.l), at(l, l.parent)}, {0, at(l, lv)}, {});
  }
  {
    static Ring<Plain, 4> r{};
    check("Ring", r, "Ring<Plain, 4>", pointer_array(r, r.items, 4, {at(r, r.next)}), {},
          {"0 32 items Plain*[4]", "40 8 next Ring<Plain, 4>*"});
  }
  {
    static geo::detail::Seg s{};
    check("Seg", s, "geo::detail::Seg", {at(s, s.a.link), at(s, s.b.link), at(s, s.next)}, {},
          {"32 8 next geo::detail::Seg*"});
  }
  {
    static Frame f;
    const Clickable& c = f.button;
    const Right& r = f.join;
    const Vertex& v = f.join;
    check("Frame", f, "Frame",
          {at(f, f.button.target), at(f, f.button.text), at(f, f.join.l), at(f, f.join.r), at(f, f.join.j),
           at(f, f.join.parent), at(f, f.tag.self), at(f, f.next)},
          {at(f, f.button), at(f, c), at(f, f.join), at(f, r), at(f, v), at(f, f.tag)},
          {"8 8 button.Drawable::_vptr.Drawable vptr", "112 8 tag._vptr.Tagged vptr", "120 5 tag.buf char[5]"});
  }
  {
    static Flags f{};
    check("Flags", f, "Flags", {at(f, f.link)}, {},
          {"0.0 3b a unsigned int:3", "0.3 5b b unsigned int:5", "8.0 64b bits long unsigned int:64", "16 4 u.i int",
           "16 4 u.f float", "24 8 link.as_flags Flags*", "24 8 link.as_plain Plain*"});
  }
  {
    static Aligned a{};
    check("Aligned", a, "Aligned", {at(a, a.p)}, {}, {"8 8 p Aligned*"});
  }
  if (other_checks() != 3) FAIL("fixture_other.cpp does not see its descriptors");
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("schema-gen fixture: all descriptors match the compiler\n");
  return 0;
}
