"""vtables: the vtable groups (_ZTV symbols) of all inputs, by class name,
and the address point of every vptr of a complete object in its group.

Each word of a group relocated against the class's typeinfo (_ZTI) is an
RTTI slot; the word before it is offset-to-top (-k), and the vptr at object
offset k points just past the RTTI slot: that is its address point.

Invariants:
  * a class is found by its normalized demangled name (names.normalize_name);
    the first input holding its vtable wins;
  * a group's address points are read once per (input, symbol) and cached;
  * a group with internal linkage (a local symbol), one without typeinfo
    (-fno-rtti) or one with two vtables for the same offset is an error
    naming the class.
"""

from .elf import WORD
from .errors import SchemaError
from .names import normalize_name


class VtableGroup:
    """A vtable group: its symbol, its input, its words (raw values and
    relocation targets, see elf.Input.vtable_words) and address points."""

    def __init__(self, symbol, inp, raw, targets, points):
        self.symbol, self.input = symbol, inp
        self.raw, self.targets = raw, targets
        self.points = points  # object offset -> address point


class Vtables:
    """The vtable groups of all inputs, found by class name."""

    def __init__(self, inputs, demangled):
        self.by_name = {}  # normalized class name -> [(input, symbol)]
        for inp in inputs:
            for s in inp.vtable_symbols():
                d = demangled.get(s, s)
                if d.startswith("vtable for "):
                    self.by_name.setdefault(normalize_name(d[len("vtable for "):]), []).append(
                        (inp, s))
        self._groups = {}

    def find(self, names):
        """The group of the first of `names` (spellings of one class) that has
        one in the inputs, or None."""
        for n in names:
            hits = self.by_name.get(normalize_name(n))
            if hits:
                return self.group(*hits[0], cls=n)
        return None

    def group(self, inp, symbol, cls):
        key = (inp.index, symbol)
        if key in self._groups:
            return self._groups[key]
        sym = inp.defined[symbol]
        if sym.bind == "STB_LOCAL":
            raise SchemaError("class `%s` has internal linkage (anonymous namespace or local "
                              "class): its vtable %s cannot be referenced from generated code; "
                              "give the class a named namespace" % (cls, symbol))
        raw, targets = inp.vtable_words(symbol)
        rtti = "_ZTI" + symbol[len("_ZTV"):]
        points = {}
        for i, t in enumerate(targets):
            if t != rtti:
                continue
            if i == 0 or targets[i - 1] is not None:
                raise SchemaError("%s: vtable %s: typeinfo at word %d without an "
                                  "offset-to-top before it" % (inp, symbol, i))
            k = -raw[i - 1]
            if k in points:
                raise SchemaError("%s: vtable %s: two vtables for the vptr at offset %d of `%s`"
                                  % (inp, symbol, k, cls))
            points[k] = (i + 1) * WORD
        if not points:
            raise SchemaError("%s: vtable %s of `%s` has no typeinfo pointer %s (compiled with "
                              "-fno-rtti?); schema-gen needs RTTI to find address points"
                              % (inp, symbol, cls, rtti))
        g = VtableGroup(symbol, inp, raw, targets, points)
        self._groups[key] = g
        return g
