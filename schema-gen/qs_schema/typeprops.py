"""typeprops: the properties of a type DIE that a layout needs besides its
members: sizeof, alignof, and whether a class is dynamic (has a vptr).

Invariants:
  * a class or union is always measured through its definition
    (dwarf.Dwarf.definition), never a declaration;
  * alignment is DW_AT_alignment when g++ emitted it (alignas), else the
    natural one, lowered for packed members and classes; answers for classes
    are cached per (input, DIE), and so are is_dynamic's;
  * a type whose size or alignment cannot be known is an error naming the
    DIE (and the type and member for sizes), never a guess.
"""

from . import errors
from .dwarf import (CLASS_TAGS, NULLPTR_NAMES, TRANSPARENT_TAGS, array_shape, attr, constant,
                    die_name, die_ref, ref, strip)
from .elf import WORD
from .errors import SchemaError
from .location import member_offset_const


class TypeProps:
    """Sizes, alignments and dynamic-ness of the type DIEs of a dwarf.Dwarf."""

    def __init__(self, dwarf):
        self.dwarf = dwarf
        self._dynamic = {}
        self._align = {}

    def is_dynamic(self, die):
        """Has the class a vptr (own, or in a base)?"""
        key = (die.cu.dwarfinfo._qs_input.index, die.offset)
        if key in self._dynamic:
            return self._dynamic[key]
        self._dynamic[key] = False
        dyn = False
        for c in die.iter_children():
            if c.tag == "DW_TAG_member" and attr(c, "DW_AT_artificial") and \
                    (die_name(c) or "").startswith("_vptr"):
                dyn = True
            elif c.tag == "DW_TAG_inheritance":
                if attr(c, "DW_AT_virtuality"):
                    dyn = True
                else:
                    b = self.dwarf.definition(ref(c, "DW_AT_type"), die_ref(c))
                    dyn = dyn or self.is_dynamic(b)
            if dyn:
                break
        self._dynamic[key] = dyn
        return dyn

    def alignment(self, die):
        """alignof for a type DIE (g++ emits DW_AT_alignment when it was raised)."""
        if die is None:
            return 1
        a = constant(die, "DW_AT_alignment")
        if a:
            return a
        if die.tag in TRANSPARENT_TAGS:
            return self.alignment(ref(die, "DW_AT_type"))
        tag = die.tag
        if tag in ("DW_TAG_pointer_type", "DW_TAG_reference_type",
                   "DW_TAG_rvalue_reference_type", "DW_TAG_ptr_to_member_type"):
            return WORD
        if tag == "DW_TAG_base_type":
            size = constant(die, "DW_AT_byte_size") or 1
            if attr(die, "DW_AT_encoding") in (0x3,):  # DW_ATE_complex_float
                size //= 2
            return min(size, 16) if size & (size - 1) == 0 else 16
        if tag == "DW_TAG_unspecified_type":
            return constant(die, "DW_AT_byte_size") or WORD
        if tag == "DW_TAG_enumeration_type":
            t = ref(die, "DW_AT_type")
            return self.alignment(t) if t is not None else (constant(die, "DW_AT_byte_size") or 4)
        if tag == "DW_TAG_array_type":
            return self.alignment(ref(die, "DW_AT_type"))
        if tag in CLASS_TAGS + ("DW_TAG_union_type",):
            die = self.dwarf.definition(die, die_ref(die))
            key = (die.cu.dwarfinfo._qs_input.index, die.offset)
            if key in self._align:
                return self._align[key]
            a = constant(die, "DW_AT_alignment")
            if not a:
                a = 1
                for c in die.iter_children():
                    if c.tag == "DW_TAG_inheritance":
                        a = max(a, self.alignment(ref(c, "DW_AT_type")))
                    elif c.tag == "DW_TAG_member" and not attr(c, "DW_AT_declaration") \
                            and not attr(c, "DW_AT_external"):
                        ma = constant(c, "DW_AT_alignment") or self.alignment(ref(c, "DW_AT_type"))
                        off = member_offset_const(c)
                        if off is not None and off % ma and "DW_AT_bit_size" not in c.attributes:
                            ma = 1  # a packed member
                        a = max(a, ma)
                size = constant(die, "DW_AT_byte_size") or 0
                while a > 1 and size % a:
                    a //= 2  # a packed class
            self._align[key] = a
            return a
        raise SchemaError("%s: no alignment known for this type" % die_ref(die))

    def size_of(self, die, top, path):
        """sizeof for a type DIE; top and path name it in messages."""
        if die.tag in CLASS_TAGS + ("DW_TAG_union_type",):
            die = self.dwarf.definition(die, errors.where(top, path))
        if die.tag == "DW_TAG_array_type":
            elem, dims = array_shape(die)
            n = 1
            for d in dims:
                n *= d or 0
            return n * self.size_of(strip(elem), top, path)
        size = constant(die, "DW_AT_byte_size")
        if size is None and die.tag == "DW_TAG_enumeration_type":
            size = constant(strip(ref(die, "DW_AT_type")), "DW_AT_byte_size")
        if size is None and (die.tag in ("DW_TAG_pointer_type", "DW_TAG_reference_type",
                                         "DW_TAG_rvalue_reference_type")
                             or die_name(die) in NULLPTR_NAMES):
            size = WORD
        if size is None:
            raise SchemaError("%s: %s: no byte size" % (die_ref(die), errors.where(top, path)))
        return size
