"""Unit tests of the ELF stages (qs_schema/elf.py, names.py, vtables.py) on
real g++ output: the DWARF relocation done by the tool against pyelftools'
own, the slot and vtable symbols of an input, demangling and the names DWARF
and the demangler share, and vtable address points in objects, PIEs and
non-PIE programs."""

import unittest

from elftools.elf.elffile import ELFFile

from sgtest import CompilingTest, VARIANTS
from qs_schema.elf import Input
from qs_schema.names import demangle, normalize_name
from qs_schema.vtables import Vtables

# Two strings, a namespace, a template, a global with an address and a
# function: what .debug_info, .debug_str(_offsets), .debug_addr and
# .debug_line_str hold relocations for.
DWARF_SOURCE = """
    namespace geo { template <class T> struct Pt { T x, y; Pt* next; }; }
    geo::Pt<int> origin;
    int sum(geo::Pt<int>* p) { return p->x + p->y; }
    QS_USE(geo::Pt<int>) QS_USE(geo::Pt<long>)
"""

# Multiple inheritance: the group of C holds a primary vtable and one for
# its B part at offset 16.
VTABLE_SOURCE = """
    struct A { virtual ~A() {} long a = 0; };
    struct B { virtual ~B() {} long b = 0; };
    struct C : A, B { ~C() override {} };
    int main() { C c; return c.a != 0; }
"""


def dies(elf):
    """Every DIE of elf's DWARF as (offset, tag, attributes)."""
    out = []
    for cu in elf.get_dwarf_info().iter_CUs():
        for die in cu.iter_DIEs():
            out.append((die.offset, die.tag,
                        sorted((k, repr(a.value)) for k, a in die.attributes.items())))
    return out


class Elf(CompilingTest):
    def test_fast_dwarf_relocation_matches_pyelftools(self):
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                obj = self.compile(DWARF_SOURCE, flags)
                inp = Input(obj, 0)
                try:
                    with open(obj, "rb") as f:
                        want = dies(ELFFile(f))
                    got = dies(inp.elf)
                finally:
                    inp.close()
                self.assertGreater(len(want), 20)
                self.assertEqual(got, want)

    def test_slot_and_vtable_symbols(self):
        obj = self.compile(DWARF_SOURCE + VTABLE_SOURCE)
        inp = Input(obj, 0)
        try:
            self.assertTrue(inp.relocatable)
            self.assertEqual(sorted(inp.slot_symbols()),
                             ["_ZN2qs6detail8type_keyIN3geo2PtIiEEE4slotE",
                              "_ZN2qs6detail8type_keyIN3geo2PtIlEEE4slotE"])
            self.assertEqual(sorted(inp.vtable_symbols()), ["_ZTV1A", "_ZTV1B", "_ZTV1C"])
        finally:
            inp.close()

    def test_demangle_and_normalize(self):
        self.assertEqual(demangle([]), {})
        slot = "_ZN2qs6detail8type_keyIN3geo2PtIiEEE4slotE"
        self.assertEqual(demangle([slot, "_ZTV1C"]), {
            slot: "qs::detail::type_key<geo::Pt<int> >::slot", "_ZTV1C": "vtable for C"})
        # DWARF's spelling and the demangler's of the same types.
        for dwarf, demangled in (("P<5, 'a'>", "P<5ul, (char)97>"),
                                 ("Q<-1, '\\n'>", "Q<-1l, (char)10>"),
                                 ("std::array<int, 4>", "std::array<int, 4ul>"),
                                 ("geo::Pt<int>", "geo::Pt<int> ")):
            with self.subTest(dwarf=dwarf):
                self.assertEqual(normalize_name(dwarf), normalize_name(demangled))
        self.assertNotEqual(normalize_name("P<5>"), normalize_name("P<6>"))

    def test_vtable_address_points(self):
        # Object offset -> address point: after offset-to-top and typeinfo;
        # the B part's vtable follows C's primary one (2 + 2 destructors).
        want = {0: 16, 16: 48}
        for flags in (("-O0", "-g"), ("-O0", "-g", "-pie", "-fPIE"),
                      ("-O0", "-g", "-no-pie", "-fno-pie")):
            with self.subTest(flags=flags):
                path = self.compile(VTABLE_SOURCE, flags, link=len(flags) > 2)
                inp = Input(path, 0)
                try:
                    symbols = inp.vtable_symbols()
                    vt = Vtables([inp], demangle(symbols))
                    group = vt.find(["C"])
                    self.assertEqual((group.symbol, group.points), ("_ZTV1C", want))
                    self.assertEqual(vt.find(["A"]).points, {0: 16})
                    self.assertIsNone(vt.find(["D", "E"]))
                finally:
                    inp.close()


if __name__ == "__main__":
    unittest.main()
