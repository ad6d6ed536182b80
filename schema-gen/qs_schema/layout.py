"""layout: the walk of one persistent type T as a complete object at offset
0, through base classes (virtual ones once), members, nested structs, arrays
and unions, collecting every leaf: pointer words, vptrs (with the vtable
group and address point each needs), bit-fields and plain bytes.

Invariants:
  * every leaf carries its offset in T, its size, its member path (see
    schema-gen/README.md, "The member list") and its spelled type;
  * a pointer word is 8-byte aligned and never a function pointer; a
    reference, a pointer to member, a function or void is refused naming
    the type and the member;
  * a dynamic complete object (T, or a member or array element of class
    type) takes its vptrs from its own vtable group, and the offsets found
    there equal those of the `_vptr.X` members of its DWARF;
  * in a union, a pointer word is kept only when every alternative has that
    same pointer there and nothing else overlaps it; an object with a vtable
    in a union is refused;
  * libstdc++'s raw node storage (__aligned_membuf<V>, __aligned_buffer<V>)
    is walked as the V it holds;
  * `targets` collects the types the walked type leads to: what its pointer
    words point to and the T of every qs::allocator<T> inside it;
  * with check_only set, a dynamic class whose vtable group is not in the
    inputs is still described: its vptrs' offsets come from the DWARF and
    their vtable is None (the program can check such a type against a
    database, not make or fix its objects).
"""

from .dwarf import (CLASS_TAGS, NULLPTR_NAMES, array_shape, attr, constant, die_name, die_ref,
                    ref, strip)
from .elf import WORD
from .errors import SchemaError, refuse, where
from .location import Complete, location, member_offset_const

# libstdc++ node types keep their value in raw aligned bytes; the value's type
# is their template parameter, and a live node always holds a value there.
RAW_STORAGE_TEMPLATES = ("__gnu_cxx::__aligned_membuf<", "__gnu_cxx::__aligned_buffer<")


def index_suffix(i, dims):
    """The subscripts of flat element i of an array of shape dims: "[1][2]"."""
    idx = []
    for d in reversed(dims):
        idx.append(i % d)
        i //= d
    return "".join("[%d]" % k for k in reversed(idx))


# DW_AT_encoding of a base type -> the member record's number kind.
ENCODINGS = {0x02: "bool", 0x04: "float", 0x05: "sint", 0x06: "sint", 0x07: "uint", 0x08: "uint",
             0x10: "uint"}


def number_of(t, size):
    """The number kind of base type t of `size` bytes ("none" for anything
    the runtime does not convert as a number: enums, 128-bit integers,
    complex numbers)."""
    if t is None or t.tag != "DW_TAG_base_type":
        return "none"
    k = ENCODINGS.get(constant(t, "DW_AT_encoding"))
    if k is None:
        return "none"
    if k == "float":
        return k if size in (4, 8, 16) else "none"
    return k if size in (1, 2, 4, 8) else "none"


class Leaf:
    """One leaf of a walk: a pointer word, a vptr, a bit-field, an array of
    scalars or pointers, or plain bytes. record() is its member record
    (qs/format/members.hpp), line() its text for messages."""
    __slots__ = ("offset", "size", "path", "type", "kind", "bits", "rkind", "number", "count",
                 "esize", "element")

    def __init__(self, offset, size, path, typ, kind, bits=None, rkind=None, number="none",
                 count=1, esize=None, element=""):
        self.offset, self.size, self.path, self.type = offset, size, path, typ
        self.kind = kind  # "raw", "ptr", "vptr", "bits" or "array"
        self.bits = bits  # (first bit from the object start, bit count) for "bits"
        # The record's kind: vptr, pointer, array, number, opaque or bits.
        self.rkind = rkind or {"ptr": "pointer", "vptr": "vptr", "bits": "bits",
                               "array": "array"}.get(kind, "opaque")
        self.number = number
        self.count = count
        self.esize = size if esize is None else esize
        self.element = element

    def line(self):
        if self.kind == "bits":
            first, count = self.bits
            return "%d.%d %db %s %s" % (first // 8, first % 8, count, self.path, self.type)
        return "%d %d %s %s" % (self.offset, self.size, self.path, self.type)

    def record(self):
        """The member record's fields, in the order of qs::member_record:
        (kind, number, offset, size, count, element size, first bit, bit
        count, path, type, element)."""
        first, nbits = self.bits if self.kind == "bits" else (0, 0)
        return (self.rkind, self.number, self.offset, self.size, self.count, self.esize, first,
                nbits, self.path, self.type, self.element)


class Acc:
    """What a walk found: leaves (pointers, vptrs, the rest) and bit-field
    storage units."""

    def __init__(self):
        self.leaves = []
        self.vptrs = {}     # offset -> (vtable symbol, address point, path)
        self.units = []     # (start, end, path): storage units of bit-fields
        self.targets = []   # DIEs of the types this one leads to

    def merge(self, other):
        self.leaves.extend(other.leaves)
        self.vptrs.update(other.vptrs)
        self.units.extend(other.units)
        self.targets.extend(other.targets)

    def pointers(self):
        """{offset: member path} of the pointer words found."""
        return {l.offset: l.path for l in self.leaves if l.kind == "ptr"}


class Layouter:
    """Walks types: the DWARF (dwarf.Dwarf) names and defines them, the
    vtables (vtables.Vtables) give their vptrs' values, the speller spells
    member types and props (typeprops.TypeProps) measures them."""

    def __init__(self, dwarf, vtables, speller, props):
        self.dwarf, self.vtables, self.speller, self.props = dwarf, vtables, speller, props
        self.check_only = False
        self.missed_vtable = False  # set when check_only let a missing vtable pass

    def class_def(self, die, top, path):
        return self.dwarf.definition(die, where(top, path))

    def vtable_group(self, cls, names, top, path):
        group = self.vtables.find(names)
        if group is None and self.check_only:
            self.missed_vtable = True
            return None
        if group is None:
            refuse(top, path, "the vtable of polymorphic class `%s` is not in the inputs "
                   "(it is emitted where the class's key function is defined, or where "
                   "an object of it is constructed; link that code into this target)"
                   % names[0])
        return group

    # -- the walk ------------------------------------------------------------
    def layout(self, tdie, top, demangled=None):
        """Walks type T (a complete object at offset 0)."""
        acc = Acc()
        self.value(tdie, 0, "", acc, top, demangled)
        return acc

    def value(self, tdie, off, path, acc, top, demangled=None):
        t = strip(tdie)
        if t is None:
            refuse(top, path, "has type void")
        tag = t.tag
        typ = self.speller.spell(tdie)
        if tag == "DW_TAG_pointer_type":
            target = strip(ref(t, "DW_AT_type"))
            if target is not None and target.tag == "DW_TAG_subroutine_type":
                refuse(top, path, "is a function pointer (%s); code addresses change "
                       "between runs, so it cannot be stored persistently" % typ)
            if off % WORD:
                refuse(top, path, "is a pointer at offset %d, which is not 8-byte aligned "
                       "(packed?)" % off)
            pointee = ref(t, "DW_AT_type")
            acc.leaves.append(Leaf(off, WORD, path, typ, "ptr",
                                   element=self.speller.spell(pointee) if pointee is not None
                                   else "void"))
            if target is not None:
                acc.targets.append(target)
        elif tag in ("DW_TAG_reference_type", "DW_TAG_rvalue_reference_type"):
            refuse(top, path, "is a reference (%s); make it a pointer" % typ)
        elif tag == "DW_TAG_ptr_to_member_type":
            refuse(top, path, "is a pointer to member (%s), which cannot be made "
                   "persistent" % typ)
        elif tag in ("DW_TAG_base_type", "DW_TAG_enumeration_type", "DW_TAG_unspecified_type"):
            size = constant(t, "DW_AT_byte_size")
            if size is None and tag == "DW_TAG_enumeration_type":
                size = constant(strip(ref(t, "DW_AT_type")), "DW_AT_byte_size")
            if size is None and die_name(t) in NULLPTR_NAMES:
                size = WORD
            if size is None:
                raise SchemaError("%s: %s: no size" % (die_ref(t), where(top, path)))
            number = number_of(t, size)
            acc.leaves.append(Leaf(off, size, path, typ, "raw",
                                   rkind="number" if number != "none" else "opaque",
                                   number=number))
        elif tag == "DW_TAG_array_type":
            self.array(t, off, path, acc, top, typ)
        elif tag in CLASS_TAGS:
            d = self.class_def(t, top, path)
            name = self.dwarf.qualname(d) if die_name(d) else None
            if name and name.startswith(RAW_STORAGE_TEMPLATES):
                inner = [ref(c, "DW_AT_type") for c in d.iter_children()
                         if c.tag == "DW_TAG_template_type_param"]
                if len(inner) != 1:
                    raise SchemaError("%s: `%s` has no single template type parameter"
                                      % (die_ref(d), name))
                self.value(inner[0], off, path, acc, top)
                return
            self.complete(d, off, path, acc, top, demangled)
        elif tag == "DW_TAG_union_type":
            self.union(self.class_def(t, top, path), off, path, acc, top)
        elif tag == "DW_TAG_subroutine_type":
            refuse(top, path, "is a function")
        else:
            raise SchemaError("%s: type `%s` member `%s`: schema-gen does not understand "
                              "a member of this kind" % (die_ref(t), top, path))

    def array(self, t, off, path, acc, top, typ):
        elem, dims = array_shape(t)
        count = 1
        for d in dims:
            count = count * d if d is not None else None
            if count is None:
                break
        es = strip(elem)
        if es is None:
            refuse(top, path, "is an array of void")
        esize = self.props.size_of(es, top, path)
        if count is None:
            # Flexible array member: harmless when its elements hold no pointers.
            probe = Acc()
            self.value(elem, off, path + "[0]", probe, top)
            if any(l.kind != "raw" for l in probe.leaves) or probe.units:
                refuse(top, path, "is an array of unknown bound holding pointers (%s)" % typ)
            acc.leaves.append(Leaf(off, 0, path, typ, "raw"))
            return
        if es.tag in ("DW_TAG_base_type", "DW_TAG_enumeration_type", "DW_TAG_unspecified_type"):
            if count == 0 or esize == 0:
                acc.leaves.append(Leaf(off, 0, path, typ, "raw"))
                return
            acc.leaves.append(Leaf(off, esize * count, path, typ, "raw", rkind="array",
                                   number=number_of(es, esize), count=count, esize=esize,
                                   element=self.speller.spell(elem)))
            return
        if es.tag == "DW_TAG_pointer_type":
            target = strip(ref(es, "DW_AT_type"))
            if target is not None and target.tag == "DW_TAG_subroutine_type":
                refuse(top, path, "is an array of function pointers (%s)" % typ)
            if off % WORD:
                refuse(top, path, "is an array of pointers at offset %d, not 8-byte "
                       "aligned (packed?)" % off)
            if target is not None:
                acc.targets.append(target)
            # One line for the whole array, one pointer word per element.
            for i in range(count):
                acc.leaves.append(Leaf(off + i * WORD, WORD, path + index_suffix(i, dims), typ,
                                       "ptr"))
            acc.leaves.append(Leaf(off, esize * count, path, typ, "array", count=count,
                                   esize=esize, element=self.speller.spell(elem)))
            return
        # Arrays of classes, unions, pointers to members...: element by element.
        for i in range(count):
            self.value(elem, off + i * esize, path + index_suffix(i, dims), acc, top)

    def complete(self, d, off, path, acc, top, demangled=None):
        """A complete object of class d at offset off: places its vptrs from
        its own vtable group, then walks its bases and members."""
        name = self.dwarf.qualname(d) if die_name(d) else self.speller.spell(d)
        group = None
        dynamic = self.props.is_dynamic(d)
        if dynamic:
            names = [name] + ([demangled] if demangled else [])
            group = self.vtable_group(d, names, top, path)
        if group is not None:
            for k, ap in sorted(group.points.items()):
                acc.vptrs[off + k] = (group.symbol, ap, path)
        ctx = Complete(name, group, path + "." if path else "")
        self.body(d, off, 0, ctx.pre, acc, top, ctx)
        if dynamic and group is None:  # check_only: no vtable in the inputs
            for k in sorted(ctx.vptr_members):
                acc.vptrs[off + k] = (None, 0, path)
        if group is not None:
            found = set(ctx.vptr_members)
            want = set(group.points)
            if found != want:
                raise SchemaError(
                    "%s: the vtable group %s (in %s) puts vptrs at offsets %s of `%s`, but its "
                    "DWARF shows `_vptr` members at %s"
                    % (where(top, path), group.symbol, group.input, sorted(want),
                       name, sorted(found)))
        if dynamic:
            for k, p in ctx.vptr_members.items():
                acc.leaves.append(Leaf(off + k, WORD, p, "vptr", "vptr"))

    def body(self, d, off, rel, pre, acc, top, ctx):
        """The bases and members of class d, a subobject at `rel` inside the
        complete object ctx, which is at `off` in T. `pre` prefixes member
        paths: "" at the top, "pos." in a member, "Shape::" in a base."""
        path = pre.rstrip(".:")
        allocator = (self.dwarf.qualname(d) or "").startswith("qs::allocator<")
        for c in d.iter_children():
            if allocator and c.tag == "DW_TAG_template_type_param":
                acc.targets.append(ref(c, "DW_AT_type"))
            elif c.tag == "DW_TAG_inheritance":
                b = self.class_def(strip(ref(c, "DW_AT_type")), top, path)
                bname = self.dwarf.qualname(b) if die_name(b) else "{anonymous}"
                brel = location(c, rel, ctx, top, path)
                if attr(c, "DW_AT_virtuality"):
                    if (brel, bname) in ctx.vbases:
                        continue  # a virtual base is placed once
                    ctx.vbases.add((brel, bname))
                short = (die_name(b) or "{anonymous}").split("<")[0]
                # A virtual base belongs to the complete object, once.
                bpre = ctx.pre if attr(c, "DW_AT_virtuality") else pre
                self.body(b, off, brel, bpre + short + "::", acc, top, ctx)
            elif c.tag == "DW_TAG_member":
                if attr(c, "DW_AT_declaration") or attr(c, "DW_AT_external"):
                    continue  # a static data member (DWARF 4)
                mname = die_name(c)
                mpath = pre + mname if mname else path
                if attr(c, "DW_AT_artificial") and (mname or "").startswith("_vptr"):
                    mrel = location(c, rel, ctx, top, path)
                    ctx.vptr_members[mrel] = mpath
                    continue
                if "DW_AT_bit_size" in c.attributes:
                    self.bitfield(c, off + rel, mpath, acc, top)
                    continue
                mrel = location(c, rel, ctx, top, path)
                self.value(ref(c, "DW_AT_type"), off + mrel, mpath, acc, top)

    def bitfield(self, c, base, path, acc, top):
        t = ref(c, "DW_AT_type")
        s = strip(t)
        if s is None or s.tag not in ("DW_TAG_base_type", "DW_TAG_enumeration_type"):
            refuse(top, path, "is a bit-field of a type schema-gen does not know")
        bits = constant(c, "DW_AT_bit_size")
        unit = self.props.size_of(s, top, path)
        first = constant(c, "DW_AT_data_bit_offset")
        if first is None:  # DWARF 2/3 style, big-endian bit numbering
            loc = member_offset_const(c) or 0
            bsize = constant(c, "DW_AT_byte_size") or unit
            bo = constant(c, "DW_AT_bit_offset") or 0
            first = loc * 8 + bsize * 8 - bo - bits
        first += base * 8
        ustart = (first // (unit * 8)) * unit
        acc.units.append((ustart, ustart + unit, path))
        typ = "%s:%d" % (self.speller.spell(t), bits)
        acc.leaves.append(Leaf(first // 8, (first % 8 + bits + 7) // 8, path, typ, "bits",
                               (first, bits), number=number_of(s, unit)))

    def union(self, d, off, path, acc, top):
        alts = []
        for c in d.iter_children():
            if c.tag != "DW_TAG_member" or attr(c, "DW_AT_declaration") or \
                    attr(c, "DW_AT_external"):
                continue
            mname = die_name(c)
            mpath = (path + "." if path else "") + mname if mname else path
            a = Acc()
            if "DW_AT_bit_size" in c.attributes:
                self.bitfield(c, off, mpath, a, top)
            else:
                moff = member_offset_const(c) or 0
                self.value(ref(c, "DW_AT_type"), off + moff, mpath, a, top)
            alts.append((mpath, a))
        # A pointer or vptr in a union is safe only when every alternative has
        # that same pointer word and nothing else overlaps it.
        for mpath, a in alts:
            if a.vptrs:
                refuse(top, mpath, "an object with a vtable inside a union: schema-gen "
                       "cannot tell whether it is the live member")
        sets = [a.pointers() for _, a in alts]
        words = set().union(*sets) if sets else set()
        why = "a pointer shares storage with `%s` in a union; schema-gen cannot tell which " \
              "member is live"
        for (mpath, a), s in zip(alts, sets):
            missing = words - set(s)
            if missing:
                w = min(missing)
                holder = next(x for x in sets if w in x)[w]
                refuse(top, holder, why % mpath)
            spans = [(l.offset, l.size, l.path) for l in a.leaves if l.kind not in ("ptr", "array")]
            spans += [(u[0], u[1] - u[0], u[2]) for u in a.units]
            for o, size, lpath in spans:
                for w in words:
                    if o < w + WORD and w < o + max(size, 1):
                        holder = next(x for x in sets if w in x)[w]
                        refuse(top, holder, why % lpath)
        for _, a in alts:
            acc.merge(a)
