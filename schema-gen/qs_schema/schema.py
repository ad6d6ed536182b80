"""schema: the pipeline of schema-gen, from input files to the sorted
descriptors of a program's persistent types. It reads the inputs (elf),
demangles their slot and vtable symbols (names), reads their DWARF (dwarf),
and for every type_key<T> whose slot an input defines, walks T (layout) and
checks the result (descriptor).

Invariants:
  * every type_key<T>::slot symbol defined in the inputs is covered: T gets
    a descriptor, or it is a built-in the runtime describes (pointer,
    arithmetic or enum), or the run fails naming the slot;
  * a type_key<T> whose slot the DWARF shows without external linkage (T in
    an anonymous namespace, a class local to a non-inline function, or a
    template instantiated with such a type) is refused unless T is a
    built-in, whether or not an input still defines the slot: the generated
    file could never fill it (see internal_linkage);
  * a type_key<T> whose slot no input defines is otherwise skipped: nothing
    reads it;
  * besides the slot types, every class T of a type_seen<T> (marked by
    QS_PERSISTENT) and every class a described type leads to (pointer
    targets, qs::allocator<T> arguments, transitively) gets a descriptor
    without a slot, for checking only: the program may read such objects
    though it never allocates one. A marked type that cannot be described is
    an error, unless its vtable is missing (which only makes its vptrs
    unknown, and then whatever cannot be placed without it) or no input
    defines it (a polymorphic class nothing here constructs); a type reached
    through a pointer that cannot be described or has internal linkage is
    left out: it is not one the program declares persistent;
  * a type name has one layout; a slot has one descriptor;
  * the inputs are closed when the run ends, whatever happens.
"""

import re

from .descriptor import describe, finish
from .dwarf import CLASS_TAGS, Dwarf, attr, die_name, die_ref, ref, strip
from .elf import Input
from .errors import SchemaError
from .layout import Layouter
from .names import demangle, normalize_name
from .spelling import Speller
from .typeprops import TypeProps
from .vtables import Vtables


def is_builtin(t):
    """Types the runtime describes itself: pointers, arithmetic types, enums."""
    return t is not None and t.tag in ("DW_TAG_pointer_type", "DW_TAG_base_type",
                                       "DW_TAG_enumeration_type")


def internal_linkage(t, tname):
    """The refusal of persistent type tname (DIE t), whose type_key<T>::slot
    has internal linkage.

    Such a slot is a local symbol of one object: the generated file, another
    translation unit, cannot name it, and an optimising compiler, which sees
    every access to it and no write, folds its reads to null and often drops
    it. Either way the type would be allocated without a descriptor and fail
    at run time ("has no schema"). Its name is not even unique in the
    program (each source file may have its own `(anonymous namespace)::Node`),
    while a database knows stored types by name."""
    why = "a template argument of it has internal linkage"
    fix = "Move that argument out of its anonymous namespace or function"
    d = t.get_parent()
    while d is not None and d.tag != "DW_TAG_compile_unit":
        if d.tag == "DW_TAG_namespace" and die_name(d) is None:
            why = "it is declared in an anonymous namespace"
            fix = "Move the type out of the anonymous namespace"
            break
        if d.tag == "DW_TAG_subprogram":
            why = "it is a class local to a function that is not inline"
            fix = "Move the type out of the function"
        d = d.get_parent()
    return SchemaError("type `%s` has internal linkage (%s): its descriptor slot "
                       "qs::detail::type_key<T>::slot is local to its source file, so the "
                       "generated schema cannot fill it (an optimising compiler even folds the "
                       "slot's reads to null) and the program would fail at run time with "
                       "\"has no schema\". %s, into a named namespace" % (tname, why, fix))


def build_schema(paths):
    """Reads the inputs; returns the descriptors, sorted by name."""
    inputs = []
    try:
        for i, p in enumerate(paths):
            inputs.append(Input(p, i))
        return _build_schema(inputs)
    finally:
        for inp in inputs:
            inp.close()


def _build_schema(inputs):
    """build_schema on opened inputs."""
    slot_syms = {}
    for inp in inputs:
        for s in inp.slot_symbols():
            slot_syms.setdefault(s, []).append(inp)
    names = set(slot_syms)
    for inp in inputs:
        names.update(inp.vtable_symbols())
    demangled = demangle(sorted(names))
    dwarf = Dwarf(inputs)
    speller = Speller(dwarf)
    vtables = Vtables(inputs, demangled)
    props = TypeProps(dwarf)
    lay = Layouter(dwarf, vtables, speller, props)

    result = {}    # slot symbol -> Descriptor
    by_name = {}   # type name -> Descriptor
    covered = set()
    for inp, key_die, slot_die, tdie in dwarf.type_keys:
        linkage = attr(slot_die, "DW_AT_linkage_name") or attr(slot_die, "DW_AT_MIPS_linkage_name")
        linkage = linkage.decode() if linkage else dwarf.spec_linkage.get((inp.index,
                                                                           slot_die.offset))
        t = strip(tdie)
        tname = speller.spell(t) if t is not None else "void"
        if t is not None and not attr(slot_die, "DW_AT_external") and not is_builtin(t):
            # g++ marks the slot external exactly when its symbol is global.
            # Checked before looking for the symbol: when the compiler folded
            # the slot away, nothing else would tell.
            raise internal_linkage(t, tname)
        if not linkage:
            # Match the demangled slot symbols against the DWARF spelling.
            want = normalize_name("qs::detail::type_key<%s>::slot" % tname)
            linkage = next((s for s in slot_syms if normalize_name(demangled[s]) == want), None)
            if linkage is None:
                continue  # no object defines this slot: nothing reads it
        if linkage not in slot_syms:
            continue  # instantiated, but optimised away: nothing reads the slot
        covered.add(linkage)
        if is_builtin(t):
            continue
        owner = slot_syms[linkage][0]
        if owner.defined[linkage].bind == "STB_LOCAL":
            raise internal_linkage(t, tname)  # a local symbol the DWARF calls external
        if t.tag in CLASS_TAGS + ("DW_TAG_union_type",):
            t = dwarf.definition(t, "type `%s`" % tname)
        dm = demangled.get(linkage, "")
        m = re.match(r"qs::detail::type_key<(.*)>::slot$", dm)
        try:
            acc = lay.layout(t, tname, m.group(1).strip() if m else None)
            size = props.size_of(t, tname, "")
            align = props.alignment(t)
        except SchemaError:
            raise
        except Exception as e:  # never a traceback for DWARF we do not understand
            raise SchemaError("type `%s` (%s): schema-gen failed on its DWARF: %s: %s"
                              % (tname, die_ref(t), type(e).__name__, e))
        d = finish(tname, linkage, size, align, acc, "%s" % inp)
        d.targets = acc.targets
        prev = by_name.get(tname)
        if prev is not None and prev.key() != d.key():
            raise SchemaError("type `%s` has two different layouts: one in %s, one in %s "
                              "(an ODR violation: check macros and flags)\n  %s\n  %s"
                              % (tname, prev.origin, d.origin, describe(prev), describe(d)))
        by_name.setdefault(tname, d)
        result.setdefault(linkage, d)
    _add_checked(dwarf, speller, props, lay, result, by_name, [t for t in dwarf.marked],
                 [d for d in list(result.values())])
    missing = sorted(set(slot_syms) - covered)
    if missing:
        where = ", ".join(sorted({str(i) for s in missing for i in slot_syms[s]}))
        raise SchemaError("no DWARF type information for %s (defined in %s): compile "
                          "with -g (not -g1, not -gsplit-dwarf)"
                          % (", ".join("`%s`" % demangled.get(s, s) for s in missing), where))
    return sorted(result.values(), key=lambda d: (d.name, d.slot or ""))


def _has_internal_linkage(t):
    """Whether class DIE t is in an anonymous namespace or local to a function."""
    d = t.get_parent()
    while d is not None and d.tag != "DW_TAG_compile_unit":
        if (d.tag == "DW_TAG_namespace" and die_name(d) is None) or d.tag == "DW_TAG_subprogram":
            return True
        d = d.get_parent()
    return False


def _class_of(die):
    """The class or union a target DIE leads to through pointers, or None."""
    t = strip(die)
    hops = 0
    while t is not None and t.tag == "DW_TAG_pointer_type" and hops < 16:
        t = strip(ref(t, "DW_AT_type"))
        hops += 1
    if t is None or t.tag not in CLASS_TAGS + ("DW_TAG_union_type",):
        return None
    return t


def _add_checked(dwarf, speller, props, lay, result, by_name, marked, described):
    """Adds check-only descriptors (slot None) to result for the marked types
    and, transitively, the types that described ones lead to."""
    work = [(t, True) for t in marked]
    for d in described:
        work.extend((t, False) for t in d.targets)
    seen = set()
    lay.check_only = True
    try:
        while work:
            die, strict = work.pop(0)
            t = _class_of(die)
            if t is None:
                continue
            tname = speller.spell(t)
            if tname in by_name or tname in seen:
                continue
            seen.add(tname)
            if _has_internal_linkage(t):
                continue  # never stored by name: each file may have its own
            try:
                t = dwarf.definition(t, "type `%s`" % tname)
            except SchemaError:
                # No input defines it (a polymorphic class no code here
                # constructs): no code here reads its objects' members.
                continue
            lay.missed_vtable = False
            try:
                acc = lay.layout(t, tname)
                size = props.size_of(t, tname, "")
                align = props.alignment(t)
                d = finish(tname, None, size, align, acc, "%s" % die_ref(t))
            except SchemaError:
                if strict and not lay.missed_vtable:
                    raise
                continue
            except Exception as e:  # never a traceback for DWARF we do not understand
                if strict and not lay.missed_vtable:
                    raise SchemaError("type `%s` (%s): schema-gen failed on its DWARF: %s: %s"
                                      % (tname, die_ref(t), type(e).__name__, e))
                continue
            d.targets = acc.targets
            by_name[tname] = d
            result[("check", tname)] = d
            work.extend((x, False) for x in acc.targets)
    finally:
        lay.check_only = False
