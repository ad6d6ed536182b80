"""spelling: the C++ spelling of a type DIE, as it appears in descriptor
names, member lines and messages.

Invariants:
  * typedefs are resolved (a type is spelled by what it is, not by alias),
    cv-qualifiers are kept, classes are spelled by their qualified name
    (dwarf.Dwarf.qualname) and anonymous ones as "{anonymous struct}";
  * the spelling is g++'s DWARF spelling of template arguments (5, not 5ul);
    it is what the stored schema records, so it must not change for a type
    whose layout did not.
"""

from .dwarf import CLASS_TAGS, array_shape, attr, die_name, ref, strip


class Speller:
    """Spells type DIEs, naming classes through a dwarf.Dwarf."""

    def __init__(self, dwarf):
        self.dwarf = dwarf

    def spell(self, die):
        """The C++ spelling of a type, typedefs resolved."""
        if die is None:
            return "void"
        tag = die.tag
        if tag in ("DW_TAG_typedef", "DW_TAG_restrict_type", "DW_TAG_atomic_type",
                   "DW_TAG_immutable_type", "DW_TAG_packed_type"):
            return self.spell(ref(die, "DW_AT_type"))
        if tag in ("DW_TAG_const_type", "DW_TAG_volatile_type"):
            q = "const" if tag == "DW_TAG_const_type" else "volatile"
            inner = ref(die, "DW_AT_type")
            s = strip(inner)
            if s is not None and s.tag in ("DW_TAG_pointer_type",):
                return self.spell(inner) + " " + q
            return q + " " + self.spell(inner)
        if tag == "DW_TAG_base_type" or tag == "DW_TAG_unspecified_type":
            return die_name(die) or "?"
        if tag == "DW_TAG_pointer_type":
            t = strip(ref(die, "DW_AT_type"))
            if t is not None and t.tag == "DW_TAG_subroutine_type":
                return self.spell_function(t, "(*)")
            return self.spell(ref(die, "DW_AT_type")) + "*"
        if tag in ("DW_TAG_reference_type", "DW_TAG_rvalue_reference_type"):
            amp = "&" if tag == "DW_TAG_reference_type" else "&&"
            return self.spell(ref(die, "DW_AT_type")) + amp
        if tag == "DW_TAG_ptr_to_member_type":
            cls = self.spell(ref(die, "DW_AT_containing_type"))
            t = strip(ref(die, "DW_AT_type"))
            if t is not None and t.tag == "DW_TAG_subroutine_type":
                return self.spell_function(t, "(%s::*)" % cls)
            return "%s %s::*" % (self.spell(ref(die, "DW_AT_type")), cls)
        if tag == "DW_TAG_subroutine_type":
            return self.spell_function(die, "")
        if tag == "DW_TAG_array_type":
            elem, dims = array_shape(die)
            return self.spell(elem) + "".join("[%s]" % ("" if d is None else d) for d in dims)
        if tag in CLASS_TAGS + ("DW_TAG_union_type", "DW_TAG_enumeration_type"):
            if die_name(die) is None:
                return "{anonymous %s}" % tag[len("DW_TAG_"):-len("_type")]
            return self.dwarf.qualname(die)
        return "<%s>" % tag

    def spell_function(self, die, declarator):
        """A function type around `declarator`: "int (*)(char)"."""
        params = [self.spell(ref(c, "DW_AT_type")) for c in die.iter_children()
                  if c.tag == "DW_TAG_formal_parameter" and not attr(c, "DW_AT_artificial")]
        if any(c.tag == "DW_TAG_unspecified_parameters" for c in die.iter_children()):
            params.append("...")
        return "%s %s(%s)" % (self.spell(ref(die, "DW_AT_type")), declarator, ", ".join(params))
