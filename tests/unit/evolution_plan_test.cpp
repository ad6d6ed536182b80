// Unit tests of evolution_plan: member lists matched by name, values
// converted or refused, offsets mapped, hostile stored layouts refused.
#include "evolution/evolution_plan.hpp"

#include <qs/error.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

using namespace qs::detail;
using qs::type_descriptor;

namespace {

// Layouts written as member lines ("offset size path type", the older text
// form a database's schema records may hold), converted as the registry
// converts them.
type_layout stored(const char* name, std::uint32_t size, const char* members) {
  type_layout l;
  l.name = name;
  l.size = size;
  l.align = 8;
  l.members = convert_text_members(members, name);
  return l;
}

// A program's descriptor with the members `members` lists, as records; the
// records and their strings live as long as the test program.
type_descriptor program(const char* name, std::uint32_t size, const char* members) {
  static std::deque<std::vector<stored_member>> strings;
  static std::deque<std::vector<qs::member_record>> records;
  std::vector<stored_member>& s = strings.emplace_back();
  for (const member_info& m : parse_members(members, name)) s.push_back(to_stored(m));
  std::vector<qs::member_record>& r = records.emplace_back();
  for (const stored_member& m : s)
    r.push_back({m.kind, m.number, m.offset, m.size, m.count, m.element_size, m.first_bit, m.bit_count, m.path.c_str(),
                 m.type.c_str(), m.element.c_str()});
  return type_descriptor{name, size, 8, nullptr, 0, nullptr, 0, r.data(), static_cast<std::uint32_t>(r.size())};
}

bool unrelated(const std::string&, const std::string&) { return false; }

template <class T>
void put(std::vector<std::byte>& b, std::uint32_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}
template <class T>
T get(const std::vector<std::byte>& b, std::uint32_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

}  // namespace

TEST_CASE("evolution plan: parsing a member list", "[unit][evolution]") {
  auto ms = parse_members(
      "0 8 Shape::_vptr.Shape vptr\n8 4 id const int\n16 8 next Part*\n24 24 cells int*[3]\n48 12 v short int[2][3]\n"
      "60.3 5b bits unsigned int:5\n64 4 kind Color\n",
      "T");
  REQUIRE(ms.size() == 7);
  CHECK(ms[0].k == member_info::kind::vptr);
  CHECK((ms[1].k == member_info::kind::number && ms[1].number == number_kind::sint && ms[1].type == "int"));
  CHECK((ms[2].k == member_info::kind::pointer && ms[2].element == "Part"));
  CHECK((ms[3].k == member_info::kind::array && ms[3].count == 3 && ms[3].element == "int*"));
  CHECK((ms[4].count == 6 && ms[4].element_size == 2 && ms[4].number == number_kind::sint));
  CHECK((ms[5].k == member_info::kind::bits && ms[5].first_bit == 483 && ms[5].bit_count == 5));
  CHECK(ms[6].k == member_info::kind::opaque);
  CHECK_THROWS_AS(parse_members("zero 4 x int\n", "T"), qs::schema_error);
  CHECK_THROWS_AS(parse_members("0 4 x\n", "T"), qs::schema_error);
}

TEST_CASE("evolution plan: members added, removed, moved and widened", "[unit][evolution]") {
  type_layout old = stored("Part", 24, "0 4 id int\n4 4 mass int\n8 4 ratio float\n16 8 next Part*\n");
  type_descriptor now = program("Part", 32, "0 8 next Part*\n8 8 id long int\n16 8 ratio double\n24 8 weight double\n");
  type_change c = plan_change("db", old, 20, &now, nullptr, unrelated);
  CHECK_THAT(c.summary, Catch::Contains("+ weight (double)"));
  CHECK_THAT(c.summary, Catch::Contains("- mass (int)"));
  CHECK_THAT(c.summary, Catch::Contains("~ id (int -> long int)"));
  CHECK_THAT(c.summary, Catch::Contains("moved next (offset 16 -> 0)"));
  std::vector<std::byte> a(24), b(32);
  put<std::int32_t>(a, 0, -7);
  put<std::int32_t>(a, 4, 99);
  put<float>(a, 8, 0.25f);
  put<std::uint64_t>(a, 16, 0x1234);
  convert_element(c, a.data(), b.data());
  CHECK(get<std::uint64_t>(b, 0) == 0x1234);
  CHECK(get<long>(b, 8) == -7);
  CHECK(get<double>(b, 16) == 0.25);
  CHECK(get<double>(b, 24) == 0.0);
  // Offsets: the object, a member, one past the end; a dropped member maps
  // nowhere.
  CHECK(map_offset(c, 16) == 0u);
  CHECK(map_offset(c, 8) == 16u);
  CHECK(map_offset(c, 24) == 32u);
  CHECK_FALSE(map_offset(c, 4).has_value());
}

TEST_CASE("evolution plan: narrowing converts values that fit and refuses the first that does not",
          "[unit][evolution]") {
  type_layout old = stored("N", 24, "0 8 n long int\n8 8 d double\n16 4 flag int\n");
  type_descriptor now = program("N", 16, "0 2 n short int\n4 4 d float\n8 1 flag bool\n");
  type_change c = plan_change("db", old, 20, &now, nullptr, unrelated);
  std::vector<std::byte> a(24), b(16);
  put<long>(a, 0, -32768);
  put<double>(a, 8, 1.5);
  put<std::int32_t>(a, 16, 1);
  convert_element(c, a.data(), b.data());
  CHECK(get<short>(b, 0) == -32768);
  CHECK(get<float>(b, 4) == 1.5f);
  CHECK(get<bool>(b, 8));
  put<long>(a, 0, 40000);
  CHECK_THROWS_WITH(convert_element(c, a.data(), b.data()), Catch::Contains("N::n holds 40000"));
  put<long>(a, 0, 1);
  put<double>(a, 8, 0.1);  // not a float
  CHECK_THROWS_WITH(convert_element(c, a.data(), b.data()), Catch::Contains("N::d holds 0.1"));
  put<double>(a, 8, 2.0);
  put<std::int32_t>(a, 16, 2);
  CHECK_THROWS_WITH(convert_element(c, a.data(), b.data()), Catch::Contains("N::flag holds 2"));
}

TEST_CASE("evolution plan: nested parts, arrays and enums", "[unit][evolution]") {
  type_layout old = stored("H", 40,
                           "0 4 pair[0].id int\n8 8 pair[0].next P*\n16 4 pair[1].id int\n24 8 pair[1].next P*\n"
                           "32 8 v int[2]\n");
  type_descriptor now = program("H", 64,
                                "0 8 pair[0].next P*\n8 8 pair[0].id long int\n16 8 pair[1].next P*\n"
                                "24 8 pair[1].id long int\n32 24 v long int[3]\n56 4 kind Color\n");
  type_change c = plan_change("db", old, 20, &now, nullptr, unrelated);
  // A pointer to pair[1] points to pair[1], not to its first member.
  CHECK(map_offset(c, 16) == 16u);
  CHECK(map_offset(c, 24) == 16u);
  CHECK(map_offset(c, 36) == 40u);  // v[1]
  std::vector<std::byte> a(40), b(64);
  put<std::int32_t>(a, 32, 5);
  put<std::int32_t>(a, 36, -6);
  convert_element(c, a.data(), b.data());
  CHECK(get<long>(b, 32) == 5);
  CHECK(get<long>(b, 40) == -6);
  CHECK(get<long>(b, 48) == 0);
}

TEST_CASE("evolution plan: a pointer typed as a member follows the member, else the part", "[unit][evolution]") {
  type_layout old = stored("S", 16, "0 4 sides int\n4 4 pos.x int\n8 8 peer S*\n");
  type_descriptor now = program("S", 32,
                                "0 8 S::_vptr.S vptr\n8 8 tag long int\n16 4 sides int\n20 4 pos.x int\n"
                                "24 8 peer S*\n");
  type_change c = plan_change("db", old, 20, &now, nullptr, unrelated);
  CHECK(member_typed(c, 0, "int") == 16u);           // an int* to `sides`
  CHECK_FALSE(member_typed(c, 0, "S").has_value());  // an S*: the object
  CHECK(map_offset(c, 4, "int") == 20u);             // an int* to pos.x
  CHECK(map_offset(c, 4) == 20u);                    // the part pos (starts at pos.x)
  type_layout holder = stored("H", 24, "0 8 s S*\n8 16 ints int*[2]\n");
  holder.pointers = {0, 8, 16};
  CHECK(pointees_of(holder) == std::vector<std::string>{"S", "int", "int"});
}

TEST_CASE("evolution plan: changes qs cannot make are refused, naming type and member", "[unit][evolution]") {
  type_layout old = stored("P", 16, "0 8 next P*\n8 4 n int\n");
  type_descriptor retarget = program("P", 16, "0 8 next Tool*\n8 4 n int\n");
  CHECK_THROWS_WITH(plan_change("db", old, 20, &retarget, nullptr, unrelated),
                    Catch::Contains("type P, member next: a pointer retargeted from P to the unrelated type Tool"));
  auto base_of = [](const std::string& from, const std::string& to) { return from == "P" && to == "Base"; };
  type_descriptor to_base = program("P", 16, "0 8 next Base*\n8 4 n int\n");
  CHECK_NOTHROW(plan_change("db", old, 20, &to_base, nullptr, base_of));
  type_descriptor to_pointer = program("P", 16, "0 8 next P*\n8 8 n P*\n");
  CHECK_THROWS_WITH(plan_change("db", old, 20, &to_pointer, nullptr, unrelated),
                    Catch::Contains("member n: a pointer and a non-pointer"));
  type_descriptor with_union = program("P", 16, "0 8 next P*\n8 4 u.i int\n8 4 u.f float\n");
  CHECK_THROWS_WITH(plan_change("db", old, 20, &with_union, nullptr, unrelated), Catch::Contains("union"));
  // A converter takes what qs cannot do, and reads the stored members.
  qs::converter conv = [](const qs::stored_object& o, void* fresh) {
    double f = static_cast<double>(o.get<int>("n")) / 2;
    std::memcpy(static_cast<char*>(fresh) + 8, &f, sizeof f);
    CHECK(o.type_of("next") == "P*");
    CHECK_FALSE(o.has("missing"));
    CHECK_THROWS_AS(o.get<char>("n"), qs::schema_error);  // 300 is no char
  };
  type_descriptor to_text = program("P", 16, "0 8 next P*\n8 8 n Text\n");
  type_change c = plan_change("db", old, 20, &to_text, &conv, unrelated);
  std::vector<std::byte> a(16), b(16);
  put<std::int32_t>(a, 8, 300);
  convert_element(c, a.data(), b.data());
  CHECK(get<double>(b, 8) == 150.0);
}

TEST_CASE("evolution plan: an unchanged union moves whole, a changed one is refused", "[unit][evolution]") {
  // A std::string's members, behind a member that grew.
  type_layout old = stored("S", 40,
                           "0 4 n int\n8 8 s._M_p char*\n16 8 s._M_len long unsigned int\n"
                           "24 16 s._M_buf char[16]\n24 8 s._M_cap long unsigned int\n");
  type_descriptor now = program("S", 48,
                                "0 8 n long int\n16 8 s._M_p char*\n24 8 s._M_len long unsigned int\n"
                                "32 16 s._M_buf char[16]\n32 8 s._M_cap long unsigned int\n");
  type_change c = plan_change("db", old, 20, &now, nullptr, unrelated);
  std::vector<std::byte> a(40), b(48);
  std::memcpy(a.data() + 24, "fifteen letters", 16);
  convert_element(c, a.data(), b.data());
  CHECK(std::memcmp(b.data() + 32, "fifteen letters", 16) == 0);
  CHECK(map_offset(c, 24) == 32u);  // the string's pointer to its own buffer
  type_descriptor changed = program("S", 48,
                                    "0 8 n long int\n16 8 s._M_p char*\n24 8 s._M_len long unsigned int\n"
                                    "32 16 s._M_buf char[16]\n32 4 s._M_cap unsigned int\n");
  CHECK_THROWS_WITH(plan_change("db", old, 20, &changed, nullptr, unrelated),
                    Catch::Contains("member s._M_cap: a union (members that overlap) changed"));
}

TEST_CASE("evolution plan: a standard container's node converts unless its key changed", "[unit][evolution]") {
  const char* map_node = "std::_Rb_tree_node<std::pair<int const, Part> >";
  type_layout old = stored(map_node, 48,
                           "0 8 _Rb_tree_node_base::_M_parent std::_Rb_tree_node_base*\n"
                           "8 4 _M_storage.first const int\n12 4 _M_storage.second.id int\n"
                           "16 8 _M_storage.second.next Part*\n");
  // The value changed, the key widened: order holds.
  type_descriptor value = program(map_node, 40,
                                  "0 8 _Rb_tree_node_base::_M_parent std::_Rb_tree_node_base*\n"
                                  "8 8 _M_storage.first const long int\n16 8 _M_storage.second.id long int\n"
                                  "24 8 _M_storage.second.next Part*\n32 8 _M_storage.second.w double\n");
  CHECK_NOTHROW(plan_change("db", old, 20, &value, nullptr, unrelated));
  type_descriptor rekeyed = program(map_node, 40,
                                    "0 8 _Rb_tree_node_base::_M_parent std::_Rb_tree_node_base*\n"
                                    "8 8 _M_storage.first Part*\n16 8 _M_storage.second.id long int\n"
                                    "24 8 _M_storage.second.next Part*\n");
  CHECK_THROWS_AS(plan_change("db", old, 20, &rekeyed, nullptr, unrelated), qs::schema_mismatch);
  const char* hash_node = "std::__detail::_Hash_node<std::pair<int const, Part>, false>";
  type_layout hold = stored(hash_node, 16,
                            "0 8 _Hash_node_base::_M_nxt std::__detail::_Hash_node_base*\n"
                            "8 4 _M_storage.first const int\n12 4 _M_storage.second.id int\n");
  type_descriptor hnow = program(hash_node, 24,
                                 "0 8 _Hash_node_base::_M_nxt std::__detail::_Hash_node_base*\n"
                                 "8 8 _M_storage.first const long int\n16 4 _M_storage.second.id int\n");
  CHECK_THROWS_WITH(plan_change("db", hold, 20, &hnow, nullptr, unrelated),
                    Catch::Contains("hashing would not hold") && Catch::Contains("_M_storage.first"));
}

TEST_CASE("evolution plan: a damaged stored layout is refused before it is used", "[unit][evolution]") {
  type_descriptor now = program("P", 16, "0 8 next P*\n8 4 n int\n");
  for (const char* bad : {"0 8 next P*\n8 400 n int\n", "0 8 next P*\n4294967290 8 n long int\n",
                          "4 8 next P*\n8 4 n int\n", "0 8 next P*\n1.7 90b bits int:90\n", "0 8 next\n"}) {
    INFO(bad);
    CHECK_THROWS_AS(plan_change("db", stored("P", 16, bad), 20, &now, nullptr, unrelated), qs::corrupt_page);
  }
}
