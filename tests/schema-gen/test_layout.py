"""Unit tests of schema-gen's DWARF walking on real g++ output: which types
it emits, their layouts, the member-list format, de-duplication, linked
binaries, and the errors that are not refusals of a member."""

import os
import subprocess
import time
import unittest

from sgtest import CompilingTest, CXX, INCLUDE_FLAGS, VARIANTS, load_tool

tool = load_tool()


class Layout(CompilingTest):
    def schema(self, *objs):
        return {d.name: d for d in tool.build_schema(list(objs))}

    def test_alignment_and_size(self):
        # The static_asserts make the compiler confirm the expected values.
        src = """
            #include <cstddef>
            struct A64 { char c; alignas(64) char buf[3]; A64* p; };
            struct alignas(32) A32 { int x; };
            struct Wide { char c; long double d; __int128 i; };
            struct __attribute__((packed)) Tight { char c; int i; short s; };
            struct Holder { char c; Tight t; A32 a; };
            static_assert(alignof(A64) == 64 && sizeof(A64) == 128);
            static_assert(alignof(A32) == 32 && sizeof(A32) == 32);
            static_assert(alignof(Wide) == 16 && sizeof(Wide) == 48);
            static_assert(alignof(Tight) == 1 && sizeof(Tight) == 7);
            static_assert(alignof(Holder) == 32 && sizeof(Holder) == 64);
            QS_USE(A64) QS_USE(A32) QS_USE(Wide) QS_USE(Tight) QS_USE(Holder)
        """
        want = {"A64": (128, 64), "A32": (32, 32), "Wide": (48, 16), "Tight": (7, 1),
                "Holder": (64, 32)}
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                s = self.schema(self.compile(src, flags))
                self.assertEqual({n: (d.size, d.align) for n, d in s.items()}, want)
                self.assertEqual(s["A64"].pointers, [72])

    def test_member_list_format(self):
        s = self.schema(self.compile("""
            #include <cstdint>
            struct P { int x, y; };
            struct M {
              unsigned a : 3;
              std::uint64_t b : 61;
              P pts[2];
              const char* names[2][2];
              double d;
              M* next;
              char tail[];
            };
            QS_USE(M)"""))
        self.assertEqual(s["M"].members, [
            "0.0 3b a unsigned int:3",
            "0.3 61b b long unsigned int:61",
            "8 4 pts[0].x int",
            "12 4 pts[0].y int",
            "16 4 pts[1].x int",
            "20 4 pts[1].y int",
            "24 32 names const char*[2][2]",
            "56 8 d double",
            "64 8 next M*",
            "72 0 tail char[]",
        ])
        self.assertEqual(s["M"].pointers, [24, 32, 40, 48, 64])

    def test_unusual_members(self):
        src = """
            #include <atomic>
            #include <cstddef>
            struct NE { virtual ~NE() {} };         // nearly empty: a primary virtual base
            struct P1 : virtual NE { int x = 0; };
            struct Q : P1 { Q* q = nullptr; };
            struct Odd {
              struct { int b; Odd* p; };            // anonymous struct: no path component
              union { int i; float f; } u[2];
              std::atomic<Odd*> a;
              Odd* volatile vp;
              const Odd* const* cpp;
              std::nullptr_t n;
            };
            static_assert(offsetof(Odd, p) == 8 && offsetof(Odd, a) == 24 &&
                          offsetof(Odd, vp) == 32 && offsetof(Odd, cpp) == 40 &&
                          sizeof(Odd) == 56);
            Q q;
            QS_USE(Odd) QS_USE(Q)
        """
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                s = self.schema(self.compile(src, flags))
                self.assertEqual(s["Odd"].pointers, [8, 24, 32, 40])
                self.assertIn("8 8 p Odd*", s["Odd"].members)
                self.assertIn("20 4 u[1].f float", s["Odd"].members)
                self.assertIn("48 8 n decltype(nullptr)", s["Odd"].members)
                self.assertEqual((s["Q"].size, s["Q"].pointers, s["Q"].vptrs),
                                 (24, [16], [(0, "_ZTV1Q", 32)]))

    def test_builtin_types_are_left_to_the_runtime(self):
        s = self.schema(self.compile("""
            enum class Color { red };
            struct N { N* next; };
            QS_USE(int) QS_USE(N*) QS_USE(double) QS_USE(Color) QS_USE(N)"""))
        self.assertEqual(list(s), ["N"])

    def test_internal_linkage_that_needs_no_slot(self):
        # Built-ins of internal linkage are left to the runtime, whose
        # fallback needs no slot; a class local to an inline function has a
        # global slot (vague linkage) and is described like any other.
        src = """
            namespace { enum class Mood { calm }; struct Hidden { int x; }; }
            inline const qs::type_descriptor* f() {
              struct InInline { InInline* next; };
              return qs::detail::descriptor_of<InInline>();
            }
            const qs::type_descriptor* (*keep)() = f;
            QS_USE(Mood) QS_USE(Hidden*)
        """
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                s = self.schema(self.compile(src, flags))
                self.assertEqual(list(s), ["f::InInline"])
                self.assertEqual(s["f::InInline"].pointers, [0])

    def test_types_seen_in_two_objects_are_emitted_once(self):
        src = "struct Shared { Shared* next; int v; }; QS_USE(Shared)"
        a = self.compile(src, ("-O0", "-gdwarf-4"))
        b = self.compile(src, ("-O2", "-gdwarf-5"))
        descs = tool.build_schema([a, b])
        self.assertEqual([d.name for d in descs], ["Shared"])

    def test_one_name_two_layouts_is_an_error(self):
        a = self.compile("struct Rec { Rec* next; }; QS_USE(Rec)")
        b = self.compile("struct Rec { long pad; Rec* next; }; QS_USE(Rec)")
        code, _, err = self.run_tool(a, b)
        self.assertEqual(code, 1)
        self.assertIn("type `Rec` has two different layouts", err)

    def test_declaration_only_type_is_found_in_another_object(self):
        # g++ emits a dynamic class's DWARF only where its vtable is.
        hdr = "struct Poly { virtual ~Poly(); Poly* next = nullptr; };\n"
        user = self.compile(hdr + "Poly* make() { return new Poly; } QS_USE(Poly)",
                            ("-O2", "-g"))
        owner = self.compile(hdr + "Poly::~Poly() {}", ("-O2", "-g"))
        code, _, err = self.run_tool(user)
        self.assertEqual(code, 1)
        self.assertIn("`Poly`", err)
        d = self.schema(user, owner)["Poly"]
        self.assertEqual((d.pointers, d.vptrs), ([8], [(0, "_ZTV4Poly", 16)]))

    def test_missing_vtable_names_the_type(self):
        # Key function elsewhere: neither the class's DWARF nor its vtable here.
        obj = self.compile("""
            namespace zoo { struct Cat { virtual void meow(); Cat* next; }; }
            void* f(zoo::Cat* c) { c->meow(); return nullptr; }
            QS_USE(zoo::Cat)""")
        code, _, err = self.run_tool(obj)
        self.assertEqual(code, 1)
        self.assertIn("`zoo::Cat` but never defines it", err)
        self.assertIn("key function", err)
        # Inline virtuals, never constructed: DWARF but no vtable.
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                obj = self.compile("""
                    namespace zoo { struct Dog { virtual ~Dog() {} Dog* next; }; }
                    struct Kennel { int n; zoo::Dog dogs[2]; };
                    QS_USE(Kennel)""", flags)
                code, _, err = self.run_tool(obj)
                self.assertEqual(code, 1)
                self.assertIn("type `Kennel` member `dogs[0]`: the vtable of polymorphic class "
                              "`zoo::Dog` is not in the inputs", err)

    def test_marked_and_reached_types_are_described_for_checking(self):
        # Nothing is allocated here: Part is marked by QS_PERSISTENT, Note is
        # reached through Part's pointer, Tag through a qs::allocator vector;
        # Kennel is marked and holds Dogs whose vtable is never emitted;
        # Shape (abstract, never constructed) is only declared in the DWARF;
        # types reached from nothing persistent stay out.
        src = """
            #include <qs/persistent.hpp>
            #include <vector>
            struct Tag { int id; };
            struct Note { long n; Note* next; };
            struct Shape { QS_PERSISTENT(Shape) virtual ~Shape() = default; virtual int k() = 0; };
            struct Dog { virtual ~Dog() {} Dog* next; };
            struct Kennel { QS_PERSISTENT(Kennel) int n; Dog dogs[2]; };
            int count(Kennel* k) { return k->n; }
            struct Part {
              QS_PERSISTENT(Part)
              int id; Note* note;
              std::vector<Tag, qs::allocator<Tag>> tags;
            };
            struct Unrelated { int u; };
            int read(Part* p) { return p->id + int(p->note->n) + int(p->tags.size()); }
        """
        for flags in (VARIANTS[0], VARIANTS[3]):
            with self.subTest(flags=flags):
                s = self.schema(self.compile(src, flags))
                self.assertIn("Part", s)
                self.assertIsNone(s["Part"].slot)
                self.assertEqual(s["Part"].pointers, [8, 16, 24, 32])
                self.assertEqual(s["Note"].members, ["0 8 n long int", "8 8 next Note*"])
                self.assertEqual(s["Tag"].members, ["0 4 id int"])
                self.assertEqual(s["Kennel"].vptrs, [(8, None, 0), (24, None, 0)])
                self.assertIn("8 8 dogs[0]._vptr.Dog vptr", s["Kennel"].members)
                self.assertNotIn("Shape", s)
                self.assertNotIn("Unrelated", s)

    def test_object_without_dwarf(self):
        obj = self.compile("struct Node { Node* next; }; QS_USE(Node)", ("-O2",))
        code, _, err = self.run_tool(obj)
        self.assertEqual(code, 1)
        self.assertIn("qs::detail::type_key<Node>::slot", err)
        self.assertIn("compile with -g", err)

    def test_standard_nodes_expose_their_values_pointers(self):
        src = """
            #include <qs/persistent.hpp>
            #include <list>
            #include <unordered_map>
            struct Item { int v; Item* next; };
            std::list<Item*, qs::allocator<Item*>> items;
            std::unordered_map<int, Item*, std::hash<int>, std::equal_to<int>,
                               qs::allocator<std::pair<const int, Item*>>> index;
            void fill() { items.push_back(nullptr); index[1] = nullptr; }
        """
        for flags in (VARIANTS[0], VARIANTS[3]):
            with self.subTest(flags=flags):
                s = self.schema(self.compile(src, flags))
                node = s["std::_List_node<Item*>"]
                self.assertEqual(node.pointers, [0, 8, 16])
                self.assertIn("16 8 _M_storage Item*", node.members)
                hnode = s["std::__detail::_Hash_node<std::pair<int const, Item*>, false>"]
                self.assertEqual(hnode.pointers, [0, 16])

    def test_linked_binaries(self):
        # From a PIE and a non-PIE program, the same schema as from the object.
        src = """
            struct V { virtual ~V() {} V* up = nullptr; };
            struct L : virtual V { L* l = nullptr; };
            struct R : virtual V { R* r = nullptr; };
            struct J : L, R { J* j = nullptr; };
            QS_USE(J)
            int main() { J j; return j.j != nullptr; }
        """
        obj = tool.build_schema([self.compile(src)])
        for flags in (("-O0", "-g", "-pie", "-fPIE"), ("-O0", "-g", "-no-pie", "-fno-pie")):
            with self.subTest(flags=flags):
                exe = tool.build_schema([self.compile(src, flags, link=True)])
                self.assertEqual([(d.name, d.key()) for d in exe], [(d.name, d.key()) for d in obj])
        self.assertEqual(len(obj[0].vptrs), 3)

    def test_generated_code_compiles_cleanly_and_is_stable(self):
        obj = self.compile("""
            namespace ns { template <class T> struct Box { virtual ~Box() {} T* item; }; }
            struct S { ns::Box<int> b; S* next; const char* msg; };
            S s;
            QS_USE(S)""")
        out = os.path.join(self.dir, "schema.cpp")
        self.assertEqual(self.run_tool(obj, output=out)[0], 0)
        r = subprocess.run([CXX, "-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                            *INCLUDE_FLAGS, "-c", out, "-o", out + ".o"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            text = f.read()
        self.assertIn('__asm__("_ZN2qs6detail8type_keyI1SE4slotE")', text)
        self.assertIn('__asm__("_ZTVN2ns3BoxIiEE")', text)
        before = os.stat(out).st_mtime_ns
        time.sleep(0.01)
        self.assertEqual(self.run_tool(obj, output=out)[0], 0)
        self.assertEqual(os.stat(out).st_mtime_ns, before, "unchanged output was rewritten")


if __name__ == "__main__":
    unittest.main()
