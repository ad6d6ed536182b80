"""Unit tests of the descriptor stage (qs_schema/descriptor.py): finish()
turning the leaves of a layout walk into a checked Descriptor, on walks built
by hand, without a compiler: the order of the member lines, pointer arrays
as one line, the bit-field format, and what it refuses."""

import unittest

import sgtest  # noqa: F401  (puts the package on sys.path)
from qs_schema.descriptor import finish
from qs_schema.errors import SchemaError
from qs_schema.layout import Acc, Leaf


def walk(*leaves, vptrs=None, units=()):
    acc = Acc()
    acc.leaves.extend(leaves)
    acc.vptrs.update(vptrs or {})
    acc.units.extend(units)
    return acc


class Finish(unittest.TestCase):
    def test_lines_sorted_by_offset_and_pointer_arrays_are_one_line(self):
        acc = walk(Leaf(8, 8, "next", "N*", "ptr"),
                   Leaf(0, 4, "a", "int", "raw"),
                   Leaf(16, 8, "arr[0]", "N*[2]", "ptr"),
                   Leaf(24, 8, "arr[1]", "N*[2]", "ptr"),
                   Leaf(16, 16, "arr", "N*[2]", "array"))
        d = finish("N", "slot", 32, 8, acc, "n.o")
        self.assertEqual(d.pointers, [8, 16, 24])
        self.assertEqual(d.members, ["0 4 a int", "8 8 next N*", "16 16 arr N*[2]"])
        self.assertEqual((d.name, d.slot, d.size, d.align, d.vptrs), ("N", "slot", 32, 8, []))

    def test_pointers_sharing_a_word_keep_the_walk_order(self):
        # union { A* a; B* b; }: two lines, one pointer word.
        acc = walk(Leaf(0, 8, "u.a", "A*", "ptr"), Leaf(0, 8, "u.b", "B*", "ptr"),
                   Leaf(8, 4, "n", "int", "raw"))
        d = finish("U", "slot", 16, 8, acc, "u.o")
        self.assertEqual(d.members, ["0 8 u.a A*", "0 8 u.b B*", "8 4 n int"])
        self.assertEqual(d.pointers, [0])

    def test_bit_fields_and_vptrs(self):
        acc = walk(Leaf(0, 8, "_vptr.V", "vptr", "vptr"),
                   Leaf(8, 1, "a", "unsigned int:3", "bits", (64, 3)),
                   Leaf(8, 8, "b", "long unsigned int:61", "bits", (67, 61)),
                   Leaf(16, 8, "up", "V*", "ptr"),
                   vptrs={0: ("_ZTV1V", 16, "")}, units=[(8, 12, "a"), (8, 16, "b")])
        d = finish("V", "slot", 24, 8, acc, "v.o")
        self.assertEqual(d.vptrs, [(0, "_ZTV1V", 16)])
        self.assertEqual(d.pointers, [16])
        self.assertEqual(d.members, ["0 8 _vptr.V vptr", "8.0 3b a unsigned int:3",
                                     "8.3 61b b long unsigned int:61", "16 8 up V*"])

    def test_key_is_what_two_layouts_of_one_name_must_share(self):
        a = finish("N", "s1", 16, 8, walk(Leaf(8, 8, "next", "N*", "ptr")), "a.o")
        b = finish("N", "s2", 16, 8, walk(Leaf(8, 8, "next", "N*", "ptr")), "b.o")
        c = finish("N", "s1", 16, 8, walk(Leaf(8, 8, "link", "N*", "ptr")), "a.o")
        self.assertEqual(a.key(), b.key())
        self.assertNotEqual(a.key(), c.key())

    def refused(self, acc, size, *wants):
        with self.assertRaises(SchemaError) as cm:
            finish("T", "slot", size, 8, acc, "t.o")
        for want in wants:
            self.assertIn(want, str(cm.exception))

    def test_a_word_both_vptr_and_pointer(self):
        self.refused(walk(Leaf(0, 8, "p", "T*", "ptr"), vptrs={0: ("_ZTV1T", 16, "")}), 16,
                     "type `T`: offset 0 is both a vptr and pointer `p`")

    def test_a_pointer_outside_the_object_or_misaligned(self):
        self.refused(walk(Leaf(8, 8, "p", "T*", "ptr")), 12,
                     "pointer `p` at offset 8 lies outside the object")
        self.refused(walk(Leaf(4, 8, "p", "T*", "ptr")), 16,
                     "pointer `p` at offset 4", "not 8-byte aligned")
        self.refused(walk(vptrs={16: ("_ZTV1T", 16, "")}), 16, "a vptr at offset 16")

    def test_a_bit_field_unit_over_a_pointer(self):
        self.refused(walk(Leaf(0, 8, "u.p", "T*", "ptr"), units=[(4, 8, "u.bits")]), 8,
                     "type `T` member `u.bits`: a bit-field's storage overlaps pointer `u.p`")


if __name__ == "__main__":
    unittest.main()
