"""dwarf: reading g++'s DWARF (versions 4 and 5) of all inputs: attributes
of a DIE, the qualified names of types, the definitions of classes by name,
and the instantiations of qs::detail::type_key<T> that make T persistent.

Invariants:
  * every DIE read belongs to an Input; its DWARFInfo carries that Input as
    `_qs_input`, so that messages (die_ref) name the file;
  * a qualified name is computed once per (input, DIE) and is the same for a
    type in every input: namespaces and enclosing classes joined by "::",
    "(anonymous namespace)" for an unnamed namespace;
  * `definitions` holds complete class and union types only, by qualified
    name, in input order; a declaration is resolved through it
    (Dwarf.definition) or the run fails naming the type;
  * `type_keys` holds one (input, type_key DIE, slot DIE, T DIE) per defining
    type_key<T> structure (declarations skipped), in input and DIE order;
    `marked` holds one T DIE per defining type_seen<T> structure (the mark
    of QS_PERSISTENT), in the same order;
  * split DWARF, type units and DWARF pyelftools cannot read are errors
    naming the input, never a traceback.
"""

from elftools.common.exceptions import DWARFError

from .errors import SchemaError

CLASS_TAGS = ("DW_TAG_structure_type", "DW_TAG_class_type")
# Tags a type is seen through: typedefs and qualifiers.
TRANSPARENT_TAGS = ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type",
                    "DW_TAG_restrict_type", "DW_TAG_atomic_type",
                    "DW_TAG_immutable_type", "DW_TAG_packed_type")
CONST_FORMS = ("DW_FORM_data1", "DW_FORM_data2", "DW_FORM_data4", "DW_FORM_data8",
               "DW_FORM_udata", "DW_FORM_sdata", "DW_FORM_implicit_const",
               "DW_FORM_data16")
BLOCK_FORMS = ("DW_FORM_exprloc", "DW_FORM_block", "DW_FORM_block1", "DW_FORM_block2",
               "DW_FORM_block4")
# g++'s DW_TAG_unspecified_type for std::nullptr_t, which has no byte size.
NULLPTR_NAMES = ("decltype(nullptr)", "nullptr_t")


def attr(die, name, default=None):
    """The value of attribute `name` of die, or default."""
    a = die.attributes.get(name)
    return default if a is None else a.value


def die_name(die):
    """DW_AT_name as a str, or None."""
    v = attr(die, "DW_AT_name")
    if v is None:
        return None
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def die_ref(die):
    """How a message names a DIE: its offset, tag and input."""
    return "DIE <0x%x> (%s) in %s" % (die.offset, die.tag, die.cu.dwarfinfo._qs_input)


def constant(die, name):
    """An integer attribute, or None; fails on a form it cannot read."""
    a = die.attributes.get(name)
    if a is None:
        return None
    if a.form in CONST_FORMS:
        return a.value
    raise SchemaError("%s: attribute %s has form %s, expected a constant"
                      % (die_ref(die), name, a.form))


def ref(die, name):
    """The DIE that reference attribute `name` points to, or None."""
    if name not in die.attributes:
        return None
    try:
        return die.get_DIE_from_attribute(name)
    except (NotImplementedError, DWARFError, KeyError) as e:
        raise SchemaError("%s: cannot follow %s (%s); type units (-fdebug-types-section) "
                          "and split DWARF are not supported" % (die_ref(die), name, e))


class Dwarf:
    """Every input's DWARF: qualified names, class definitions, type_keys."""

    def __init__(self, inputs):
        self.names = {}        # (input index, DIE offset) -> qualified name
        self.definitions = {}  # qualified name -> [DIE] (complete class/union types)
        self.type_keys = []    # (input, type_key DIE, slot DIE, T DIE)
        self.marked = []       # T DIE of each type_seen<T>
        self.spec_linkage = {}  # (input index, member DIE offset) -> linkage name
        for inp in inputs:
            if inp.dwarf is None:
                continue
            inp.dwarf._qs_input = inp
            try:
                for cu in inp.dwarf.iter_CUs():
                    top = cu.get_top_DIE()
                    if top.tag in ("DW_TAG_skeleton_unit", "DW_TAG_type_unit") or \
                            "DW_AT_dwo_name" in top.attributes or \
                            "DW_AT_GNU_dwo_name" in top.attributes:
                        raise SchemaError("%s: split DWARF (-gsplit-dwarf) and type units are "
                                          "not supported: compile with plain -g" % inp)
                    self._walk(inp, top, [])
            except SchemaError:
                raise
            except Exception as e:  # DWARF pyelftools or this tool cannot read
                raise SchemaError("%s: cannot read its DWARF (%s: %s); split DWARF and type "
                                  "units are not supported" % (inp, type(e).__name__, e))

    def _walk(self, inp, parent, scope):
        for die in parent.iter_children():
            tag = die.tag
            if tag == "DW_TAG_variable" and "DW_AT_specification" in die.attributes:
                ln = attr(die, "DW_AT_linkage_name") or attr(die, "DW_AT_MIPS_linkage_name")
                if ln:
                    spec = ref(die, "DW_AT_specification")
                    self.spec_linkage[(inp.index, spec.offset)] = ln.decode()
                continue
            if tag not in ("DW_TAG_namespace",) + CLASS_TAGS + (
                    "DW_TAG_union_type", "DW_TAG_enumeration_type", "DW_TAG_typedef"):
                continue
            name = die_name(die)
            if name is None:
                name = "(anonymous namespace)" if tag == "DW_TAG_namespace" else None
            qual = "::".join(scope + [name]) if name is not None else None
            if qual is not None:
                self.names[(inp.index, die.offset)] = qual
            if tag in CLASS_TAGS or tag == "DW_TAG_union_type":
                if qual is not None and not attr(die, "DW_AT_declaration"):
                    self.definitions.setdefault(qual, []).append(die)
                if (scope == ["qs", "detail"] and name and name.startswith("type_key<")
                        and tag in CLASS_TAGS):
                    self._type_key(inp, die)
                elif (scope == ["qs", "detail"] and name and name.startswith("type_seen<")
                        and tag in CLASS_TAGS and not attr(die, "DW_AT_declaration")):
                    t = next((ref(c, "DW_AT_type") for c in die.iter_children()
                              if c.tag == "DW_TAG_template_type_param"), None)
                    if t is not None:
                        self.marked.append(t)
            if die.has_children and tag != "DW_TAG_typedef":
                self._walk(inp, die, scope + [name if name is not None else "{anonymous}"])

    def _type_key(self, inp, die):
        slot = t = None
        for c in die.iter_children():
            if c.tag in ("DW_TAG_variable", "DW_TAG_member") and die_name(c) == "slot":
                slot = c
            elif c.tag == "DW_TAG_template_type_param":
                t = ref(c, "DW_AT_type")
        if "DW_AT_signature" in die.attributes:
            raise SchemaError("%s: %s is described in a type unit (-fdebug-types-section), "
                              "which is not supported: compile without it"
                              % (die_ref(die), die_name(die)))
        if attr(die, "DW_AT_declaration"):
            return  # a declaration only: the CU that uses the slot defines it
        if slot is None or t is None:
            raise SchemaError("%s: %s has no `slot` member or no template type parameter"
                              % (die_ref(die), die_name(die)))
        self.type_keys.append((inp, die, slot, t))

    def qualname(self, die):
        key = (die.cu.dwarfinfo._qs_input.index, die.offset)
        q = self.names.get(key)
        if q is not None:
            return q
        parts = []
        d = die
        while d is not None and d.tag != "DW_TAG_compile_unit":
            n = die_name(d)
            if d.tag == "DW_TAG_namespace":
                parts.append(n or "(anonymous namespace)")
            elif d.tag in CLASS_TAGS + ("DW_TAG_union_type", "DW_TAG_enumeration_type",
                                        "DW_TAG_typedef", "DW_TAG_subprogram"):
                parts.append(n or "{anonymous}")
            elif d.tag == "DW_TAG_lexical_block":
                pass
            else:
                parts.append(n or d.tag)
            d = d.get_parent()
        q = "::".join(reversed(parts))
        self.names[key] = q
        return q

    def definition(self, die, where):
        """The complete definition of a class/union DIE (itself, or one found by
        name in any input when this one is a declaration)."""
        if not attr(die, "DW_AT_declaration"):
            return die
        if "DW_AT_signature" in die.attributes:
            raise SchemaError("%s: type units (-fdebug-types-section) are not supported"
                              % die_ref(die))
        q = self.qualname(die)
        defs = self.definitions.get(q)
        if not defs:
            raise SchemaError("%s: the DWARF of the inputs declares `%s` but never defines it "
                              "(g++ describes a class with virtual functions only in the object "
                              "that holds its vtable, where its key function is defined: compile "
                              "that file, with -g, into the same target)" % (where, q))
        return defs[0]


def strip(die):
    """Follows typedefs and cv-qualifiers to the underlying type (None: void)."""
    seen = 0
    while die is not None and die.tag in TRANSPARENT_TAGS:
        die = ref(die, "DW_AT_type")
        seen += 1
        if seen > 64:
            raise SchemaError("%s: typedef cycle" % die_ref(die))
    return die


def array_shape(die):
    """(element type DIE, [count or None for an unknown bound, ...])."""
    dims = []
    for c in die.iter_children():
        if c.tag not in ("DW_TAG_subrange_type", "DW_TAG_enumeration_type"):
            continue
        for a in ("DW_AT_count", "DW_AT_upper_bound", "DW_AT_lower_bound"):
            f = c.attributes.get(a)
            if f is not None and f.form not in CONST_FORMS:
                raise SchemaError("%s: array bound %s is not a constant (form %s)"
                                  % (die_ref(c), a, f.form))
        count = constant(c, "DW_AT_count")
        if count is None:
            ub = constant(c, "DW_AT_upper_bound")
            lb = constant(c, "DW_AT_lower_bound") or 0
            if ub is None:
                count = None  # flexible array member / unknown bound
            else:
                if ub >= 1 << 63:
                    ub -= 1 << 64
                count = max(ub - lb + 1, 0)
        dims.append(count)
    if not dims:
        dims.append(None)
    return ref(die, "DW_AT_type"), dims
