"""Unit tests of the DWARF stages (qs_schema/dwarf.py, spelling.py,
typeprops.py) on real g++ output: the type_keys found and the linkage of
their slots, qualified names, definitions found by name, the spelling of
member types, and sizes, alignments and dynamic classes."""

import unittest

from sgtest import CompilingTest, VARIANTS
from qs_schema.dwarf import Dwarf, attr, die_name, ref, strip
from qs_schema.elf import Input
from qs_schema.errors import SchemaError
from qs_schema.spelling import Speller
from qs_schema.typeprops import TypeProps


class DwarfTest(CompilingTest):
    def read(self, *sources, flags=("-O0", "-g")):
        """Dwarf and Speller of the objects compiled from sources."""
        self.inputs = [Input(self.compile(s, flags), i) for i, s in enumerate(sources)]
        self.addCleanup(lambda: [inp.close() for inp in self.inputs])
        dwarf = Dwarf(self.inputs)
        return dwarf, Speller(dwarf)

    def members(self, dwarf, cls):
        """{member name: member DIE} of the definition of class cls."""
        d = dwarf.definitions[cls][0]
        return {die_name(c): c for c in d.iter_children() if c.tag == "DW_TAG_member"}

    def test_type_keys_and_the_linkage_of_their_slots(self):
        # The refusal of internal linkage relies on g++ marking a slot
        # DW_AT_external exactly when its symbol is global.
        src = """
            namespace ns { struct Outer { struct In { In* next; }; }; }
            namespace { struct Hidden { Hidden* next; }; }
            inline void* f() {
              struct InInline { int x; };
              return &qs::detail::type_key<InInline>::slot;
            }
            void* g() { struct InPlain { int x; }; return &qs::detail::type_key<InPlain>::slot; }
            void* (*keep)() = f;
            QS_USE(ns::Outer::In) QS_USE(int) QS_USE(Hidden) QS_USE(Hidden*)
        """
        want = {"ns::Outer::In": True, "int": True, "(anonymous namespace)::Hidden": False,
                "(anonymous namespace)::Hidden*": False, "f::InInline": True,
                "g::InPlain": False}
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                dwarf, speller = self.read(src, flags=flags)
                got = {speller.spell(strip(t)): bool(attr(slot, "DW_AT_external"))
                       for _, _, slot, t in dwarf.type_keys}
                self.assertEqual(got, want)
                defined = self.inputs[0].defined
                symbols = {s for s in defined if defined[s].bind != "STB_LOCAL"}
                self.assertIn("_ZN2qs6detail8type_keyIN2ns5Outer2InEE4slotE", symbols)
                self.assertNotIn("_ZN2qs6detail8type_keyIN12_GLOBAL__N_16HiddenEE4slotE",
                                 symbols)

    def test_a_declaration_is_defined_by_another_input(self):
        decl = "namespace zoo { struct Cat; } zoo::Cat* cat;"
        dwarf, _ = self.read(decl, "namespace zoo { struct Cat { int lives; }; } zoo::Cat c;")
        cat = ref(ref(self.variable("cat"), "DW_AT_type"), "DW_AT_type")
        self.assertTrue(attr(cat, "DW_AT_declaration"))
        d = dwarf.definition(cat, "here")
        self.assertIs(d.cu.dwarfinfo._qs_input, self.inputs[1])
        self.assertEqual(dwarf.qualname(d), "zoo::Cat")
        dwarf, _ = self.read(decl)
        cat = ref(ref(self.variable("cat"), "DW_AT_type"), "DW_AT_type")
        with self.assertRaisesRegex(SchemaError, "here: the DWARF of the inputs declares "
                                                 "`zoo::Cat` but never defines it"):
            dwarf.definition(cat, "here")

    def variable(self, name):
        """The DIE of global variable `name` in the first input."""
        for cu in self.inputs[0].dwarf.iter_CUs():
            for c in cu.get_top_DIE().iter_children():
                if c.tag == "DW_TAG_variable" and die_name(c) == name:
                    return c
        self.fail("no variable %s" % name)

    def test_spelling(self):
        dwarf, speller = self.read("""
            #include <cstddef>
            namespace ns { struct Rec; template <int N> struct Tag {}; }
            struct Spell {
              using Alias = long;
              const char* const cp;
              int (*fn)(char, ...);
              int ns::Rec::* pm;
              void (ns::Rec::*pmf)(int);
              unsigned long arr[2][3];
              volatile int* vp;
              int& ref;
              std::nullptr_t n;
              Alias a;
              ns::Tag<5> t;
              struct { int x; } anon;
            };
            QS_USE(Spell)""")
        got = {n: speller.spell(ref(m, "DW_AT_type"))
               for n, m in self.members(dwarf, "Spell").items()}
        self.assertEqual(got, {
            "cp": "const char* const", "fn": "int (*)(char, ...)", "pm": "int ns::Rec::*",
            "pmf": "void (ns::Rec::*)(int)", "arr": "long unsigned int[2][3]",
            "vp": "volatile int*", "ref": "int&", "n": "decltype(nullptr)", "a": "long int",
            "t": "ns::Tag<5>", "anon": "{anonymous structure}"})

    def test_sizes_alignments_and_dynamic_classes(self):
        src = """
            struct Plain { char c; short s; };
            struct Poly { virtual ~Poly() {} };
            struct FromPoly : Poly { int x; };
            struct VBase : virtual Plain {};
            struct alignas(32) Wide { char c; };
            struct __attribute__((packed)) Tight { char c; long l; };
            struct Holder { Tight t[3]; Wide w; };
            static_assert(sizeof(Plain) == 4 && alignof(Plain) == 2);
            static_assert(sizeof(Wide) == 32 && alignof(Wide) == 32);
            static_assert(sizeof(Tight) == 9 && alignof(Tight) == 1);
            static_assert(sizeof(Holder) == 64 && alignof(Holder) == 32);
            FromPoly fp; VBase vb;
            QS_USE(Plain) QS_USE(Poly) QS_USE(FromPoly) QS_USE(VBase) QS_USE(Holder)
        """
        for flags in (VARIANTS[0], VARIANTS[3]):
            with self.subTest(flags=flags):
                dwarf, _ = self.read(src, flags=flags)
                props = TypeProps(dwarf)
                cls = {n: dwarf.definitions[n][0] for n in
                       ("Plain", "Poly", "FromPoly", "VBase", "Wide", "Tight", "Holder")}
                self.assertEqual({n: props.is_dynamic(d) for n, d in cls.items()}, {
                    "Plain": False, "Poly": True, "FromPoly": True, "VBase": True,
                    "Wide": False, "Tight": False, "Holder": False})
                self.assertEqual({n: (props.size_of(d, n, ""), props.alignment(d))
                                  for n, d in cls.items() if n not in ("Poly", "FromPoly",
                                                                       "VBase")},
                                 {"Plain": (4, 2), "Wide": (32, 32), "Tight": (9, 1),
                                  "Holder": (64, 32)})
                t = self.members(dwarf, "Holder")["t"]
                self.assertEqual(props.size_of(ref(t, "DW_AT_type"), "Holder", "t"), 27)


if __name__ == "__main__":
    unittest.main()
