"""descriptor: what the generated file registers for one persistent type
(name, slot symbol, size, alignment, pointer words, vptrs, member records
and their lines),
built from a layout walk (layout.Acc) by finish(), which checks it.

Invariants of a Descriptor that finish() returned:
  * pointers and vptrs are sorted by offset, 8-byte aligned, lie inside the
    object, and no offset is both a pointer and a vptr;
  * no bit-field's storage unit overlaps a pointer word or a vptr;
  * members are the member-list lines sorted by offset (pointer words after
    what else starts at the same offset, then in walk order); an array of
    pointers is one line, not one per element; records are the same
    members as typed records (Leaf.record), what the program registers and
    the database stores; the lines are their text, for messages;
  * key() is what two descriptors of the same name must agree on.
"""

from .elf import WORD
from .errors import SchemaError
from .layout import Leaf


class Descriptor:
    """The descriptor of one persistent type; `slot` is None for a type
    described for checking only (see schema.py)."""

    def __init__(self, name, slot, size, align, pointers, vptrs, members, origin, records=()):
        self.name, self.slot, self.size, self.align = name, slot, size, align
        self.pointers = pointers      # [offset]
        self.vptrs = vptrs            # [(offset, vtable symbol, address point)]
        self.members = members        # [line]
        self.records = list(records)  # [Leaf.record()], one per line
        self.origin = origin          # where it was first seen, for messages
        self.targets = []             # DIEs of the types it leads to (layout.Acc)

    def key(self):
        return (self.size, self.align, tuple(self.pointers), tuple(self.vptrs),
                tuple(self.members), tuple(self.records))


def describe(d):
    """A one-line summary of a descriptor, for messages."""
    return "size %d align %d pointers %s vptrs %s" % (d.size, d.align, d.pointers,
                                                      [(o, s, a) for o, s, a in d.vptrs])


def finish(tname, slot, size, align, acc, origin):
    """The checked Descriptor of type tname from the walk `acc` of it."""
    ptrs = sorted(acc.pointers())
    vptrs = sorted((o, s, ap) for o, (s, ap, _) in acc.vptrs.items())
    words = {}
    for o in ptrs:
        words[o] = "pointer `%s`" % acc.pointers()[o]
    for o, s, ap in vptrs:
        if o in words:
            raise SchemaError("type `%s`: offset %d is both a vptr and %s" % (tname, o, words[o]))
        words[o] = "a vptr"
    for o in list(words):
        if o % WORD or o + WORD > size:
            raise SchemaError("type `%s`: %s at offset %d lies outside the object or is not "
                              "8-byte aligned" % (tname, words[o], o))
    for start, end, path in acc.units:
        for o in words:
            if start < o + WORD and o < end:
                raise SchemaError("type `%s` member `%s`: a bit-field's storage overlaps %s"
                                  % (tname, path, words[o]))
    leaves = [l for l in acc.leaves]
    order = {id(l): i for i, l in enumerate(leaves)}
    leaves.sort(key=lambda l: (l.offset, l.kind == "ptr", order[id(l)]))
    lines, records = [], []
    arrays = {(l.offset, l.path) for l in leaves if l.kind == "array"}
    for l in leaves:
        if l.kind == "ptr" and any(l.path.startswith(p + "[") for _, p in arrays):
            continue  # a pointer array is one line
        lines.append(l.line() if l.kind != "array" else
                     Leaf(l.offset, l.size, l.path, l.type, "raw").line())
        records.append(l.record())
    return Descriptor(tname, slot, size, align, ptrs, vptrs, lines, origin, records)
