#!/usr/bin/env python3
"""qs_schema_gen: the schema generator of qs.

Reads the DWARF debug information (versions 4 and 5, as g++ emits it) of
object files or a linked binary, finds every persistent type of the program
and writes a C++ source file that registers a qs::type_descriptor for each.

Which types are persistent: every T for which the program instantiates
qs::detail::type_key<T> (see libqs/include/qs/schema.hpp). All qs allocation
templates (QS_PERSISTENT, qs::make<T>, qs::allocator<T>) do, so the DWARF holds
a structure `type_key<T>` in namespaces qs::detail whose template type
parameter is T, and the object file defines the variable type_key<T>::slot.
The generated file fills that slot through its linkage name (an `__asm__`
label), so T is never spelled in C++.

Invariants this tool keeps (it fails with a message naming the type, and the
member or DIE, rather than break one):
  * every type_key<T>::slot symbol defined in the inputs is registered, or
    it is a built-in (pointer, arithmetic or enum T), or the run fails;
  * pointer words and vptrs are 8-byte aligned, lie inside the object, and
    are listed sorted; a pointer word never shares storage with anything that
    is not that same pointer (unions, bit-fields);
  * members whose value cannot be made valid in another run of the program
    are refused: references, pointers to members, function pointers, unions
    that overlap a pointer or a vptr with anything else;
  * every vptr comes with the vtable group symbol (_ZTV...) and the address
    point in it that the constructor stores, read from the vtable's bytes and
    relocations; the vptr offsets found there must agree with the `_vptr.X`
    members of the DWARF;
  * a type seen in several inputs is emitted once; the same name with two
    different layouts is an error;
  * the output is deterministic and rewritten only when its text changes.

Usage: qs_schema_gen.py -o schema.cpp INPUT... (an argument @FILE reads more
arguments from FILE, one per line).
"""

import argparse
from io import BytesIO
import os
import re
import shutil
import struct
import subprocess
import sys

try:
    from elftools.common.exceptions import ELFError, DWARFError
    from elftools.dwarf.dwarf_expr import DWARFExprParser
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection
except ImportError:  # pragma: no cover - reported to the user
    sys.stderr.write("qs_schema_gen: error: this Python (%s) lacks pyelftools; "
                     "install the Debian package python3-pyelftools and run it "
                     "with /usr/bin/python3\n" % sys.executable)
    sys.exit(2)

PROG = "qs_schema_gen"
SLOT_PREFIX = "_ZN2qs6detail8type_keyI"
SLOT_SUFFIX = "E4slotE"
WORD = 8

# The x86-64 relocation of a PIE's pointers to its own data (vtables).
R_X86_64_RELATIVE = 8

# libstdc++ node types keep their value in raw aligned bytes; the value's type
# is their template parameter, and a live node always holds a value there.
RAW_STORAGE_TEMPLATES = ("__gnu_cxx::__aligned_membuf<", "__gnu_cxx::__aligned_buffer<")

# g++'s DW_TAG_unspecified_type for std::nullptr_t, which has no byte size.
NULLPTR_NAMES = ("decltype(nullptr)", "nullptr_t")
CLASS_TAGS = ("DW_TAG_structure_type", "DW_TAG_class_type")
TRANSPARENT_TAGS = ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type",
                    "DW_TAG_restrict_type", "DW_TAG_atomic_type",
                    "DW_TAG_immutable_type", "DW_TAG_packed_type")
CONST_FORMS = ("DW_FORM_data1", "DW_FORM_data2", "DW_FORM_data4", "DW_FORM_data8",
               "DW_FORM_udata", "DW_FORM_sdata", "DW_FORM_implicit_const",
               "DW_FORM_data16")
BLOCK_FORMS = ("DW_FORM_exprloc", "DW_FORM_block", "DW_FORM_block1", "DW_FORM_block2",
               "DW_FORM_block4")


class SchemaError(Exception):
    """A failure reported to the user: the message names what is wrong."""


# ----------------------------------------------------------------------------
# ELF inputs: symbols, and the words of a vtable with what each one points to.

class Symbol:
    __slots__ = ("name", "value", "size", "shndx", "bind", "type")

    def __init__(self, name, value, size, shndx, bind, typ):
        self.name, self.value, self.size = name, value, size
        self.shndx, self.bind, self.type = shndx, bind, typ


# DWARF sections the tool reads. The others (line tables, frames, location
# lists...) are handed to pyelftools unrelocated: it never looks at them here.
NEEDED_DWARF = (".debug_info", ".debug_abbrev", ".debug_str", ".debug_str_offsets",
                ".debug_line_str", ".debug_addr", ".debug_types")
# x86-64 relocation types met in DWARF sections -> bytes: R_X86_64_64, _32, _32S.
DWARF_RELOCS = {1: 8, 10: 4, 11: 4}


class FastELFFile(ELFFile):
    """ELFFile whose DWARF relocation is fast: pyelftools applies relocations
    one construct-parsed entry at a time (seconds for an object that includes
    <map>); this does it with struct, for the sections the tool reads."""

    def _read_dwarf_section(self, section, relocate_dwarf_sections):
        if (not relocate_dwarf_sections or self["e_type"] != "ET_REL"
                or section.name not in NEEDED_DWARF):
            return super()._read_dwarf_section(section, False)
        data = bytearray(section.data())
        rela = self.get_section_by_name(".rela" + section.name)
        if rela is not None and rela["sh_type"] == "SHT_RELA":
            values = self._symbol_values(rela["sh_link"])
            for off, info, addend in struct.iter_unpack("<QQq", rela.data()):
                size = DWARF_RELOCS.get(info & 0xffffffff)
                if size is None:
                    continue  # e.g. TLS offsets in variable locations: never read here
                v = (values[info >> 32] + addend) % (1 << (8 * size))
                data[off:off + size] = v.to_bytes(size, "little")
        return DebugSectionDescriptor(stream=BytesIO(bytes(data)), name=section.name,
                                      global_offset=section["sh_offset"],
                                      size=section.data_size, address=section["sh_addr"])

    def _symbol_values(self, index):
        cache = self.__dict__.setdefault("_qs_symvalues", {})
        if index not in cache:
            raw = self.get_section(index).data()
            cache[index] = [e[4] for e in struct.iter_unpack("<IBBHQQ", raw)]
        return cache[index]


class Input:
    """One ELF file (relocatable object, executable or shared object)."""

    def __init__(self, path, index):
        self.path = path
        self.index = index
        self._file = open(path, "rb")
        try:
            self._load()
        except BaseException:
            self._file.close()
            raise

    def _load(self):
        path = self.path
        try:
            self.elf = FastELFFile(self._file)
        except ELFError as e:
            raise SchemaError("%s: not an ELF file (%s)" % (path, e))
        if self.elf.get_machine_arch() != "x64":
            raise SchemaError("%s: qs supports x86-64 only, this is %s"
                              % (path, self.elf.get_machine_arch()))
        self.relocatable = self.elf["e_type"] == "ET_REL"
        self.defined = {}    # name -> Symbol (defined symbols only)
        self.by_address = {}  # (shndx or None, value) -> [names]
        for secname in (".symtab", ".dynsym"):
            sec = self.elf.get_section_by_name(secname)
            if not isinstance(sec, SymbolTableSection):
                continue
            for s in sec.iter_symbols():
                shndx = s["st_shndx"]
                if not s.name or shndx == "SHN_UNDEF":
                    continue
                sym = Symbol(s.name, s["st_value"], s["st_size"], shndx,
                             s["st_info"]["bind"], s["st_info"]["type"])
                self.defined.setdefault(s.name, sym)
                key = (shndx if self.relocatable else None, s["st_value"])
                self.by_address.setdefault(key, []).append(s.name)
        self.dwarf = None
        if self.elf.has_dwarf_info():
            try:
                self.dwarf = self.elf.get_dwarf_info()
            except (ELFError, DWARFError, NotImplementedError, ValueError) as e:
                raise SchemaError("%s: cannot read its DWARF: %s" % (path, e))

    def __str__(self):
        return self.path

    def close(self):
        self._file.close()

    def slot_symbols(self):
        return [n for n in self.defined if n.startswith(SLOT_PREFIX) and n.endswith(SLOT_SUFFIX)]

    def vtable_symbols(self):
        return [n for n in self.defined if n.startswith("_ZTV") and self.defined[n].size > 0]

    def _symbol_at(self, shndx, value, prefix):
        for n in self.by_address.get((shndx if self.relocatable else None, value), ()):
            if n.startswith(prefix):
                return n
        return None

    def _relocations(self, shndx):
        """RELA entries applying to section shndx (an object) or to any
        address (a binary, shndx None): {offset: (type, symtab, sym, addend)}.
        Parsed with struct, once: a binary's .rela.dyn can be long."""
        cache = self.__dict__.setdefault("_relocs", {})
        if shndx in cache:
            return cache[shndx]
        out = {}
        for rsec in self.elf.iter_sections():
            if rsec["sh_type"] != "SHT_RELA":
                continue
            target = rsec["sh_info"]
            if shndx is not None:
                if target != shndx:
                    continue
            elif target and not self.elf.get_section(target)["sh_flags"] & 0x2:  # SHF_ALLOC
                continue  # e.g. a binary linked with --emit-relocs: debug sections
            symtab = self.elf.get_section(rsec["sh_link"]) if rsec["sh_link"] else None
            for off, info, addend in struct.iter_unpack("<QQq", rsec.data()):
                out[off] = (info & 0xffffffff, symtab, info >> 32, addend)
        cache[shndx] = out
        return out

    def vtable_words(self, name):
        """The words of vtable symbol `name`: a list of (raw int64, target)
        where target is the symbol name a relocated word points to (or, in a
        non-PIE binary, the typeinfo symbol whose address the word holds)."""
        sym = self.defined[name]
        if not isinstance(sym.shndx, int):
            raise SchemaError("%s: vtable %s is not in a section (%s)" % (self, name, sym.shndx))
        sec = self.elf.get_section(sym.shndx)
        if sec["sh_type"] == "SHT_NOBITS":
            raise SchemaError("%s: vtable %s has no bytes in the file" % (self, name))
        start = sym.value if self.relocatable else sym.value - sec["sh_addr"]
        data = sec.data()[start:start + sym.size]
        if len(data) != sym.size or sym.size % WORD:
            raise SchemaError("%s: vtable %s has an odd size %d" % (self, name, sym.size))
        raw = [struct.unpack_from("<q", data, i)[0] for i in range(0, sym.size, WORD)]
        targets = [None] * len(raw)
        base = sym.value  # the address (or section offset) of word 0
        relocs = self._relocations(sym.shndx if self.relocatable else None)
        for i in range(len(raw)):
            r = relocs.get(base + i * WORD)
            if r is None:
                continue
            rtype, symtab, symidx, addend = r
            target = None
            if rtype == R_X86_64_RELATIVE:
                target = self._symbol_at(None, addend, "_ZTI")
            elif symtab is not None and symidx:
                rs = symtab.get_symbol(symidx)
                if rs["st_info"]["type"] == "STT_SECTION":
                    target = self._symbol_at(rs["st_shndx"], addend, "_ZTI")
                else:
                    target = rs.name
            targets[i] = target or "<relocated>"
        if not self.relocatable:
            # Non-PIE binary: words hold final addresses.
            for i, v in enumerate(raw):
                if targets[i] is None and v:
                    t = self._symbol_at(None, v, "_ZTI")
                    if t:
                        targets[i] = t
        return raw, targets


def demangle(names):
    """Demangles with c++filt (binutils), in one batch."""
    names = list(names)
    if not names:
        return {}
    tool = os.environ.get("QS_CXXFILT") or shutil.which("c++filt")
    if not tool:
        raise SchemaError("c++filt (binutils) not found; set QS_CXXFILT")
    out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True,
                         text=True, check=True).stdout.splitlines()
    if len(out) != len(names):
        raise SchemaError("c++filt returned %d lines for %d names" % (len(out), len(names)))
    return dict(zip(names, out))


def normalize_name(name):
    """A spelling of a C++ type name on which DWARF (g++) and the demangler
    agree: no spaces, no integer literal suffixes, character literals as
    numbers (DWARF: P<5, 'a'>, demangler: P<5ul, (char)97>)."""
    escapes = {"n": 10, "t": 9, "r": 13, "0": 0, "a": 7, "b": 8, "f": 12, "v": 11}
    n = re.sub(r"'(\\?.)'", lambda m: str(
        escapes.get(m.group(1)[1], ord(m.group(1)[1])) if len(m.group(1)) == 2
        else ord(m.group(1))), name)
    n = re.sub(r"\((?:unsigned |signed )?(?:char|short|int|long|bool|wchar_t|char8_t|"
               r"char16_t|char32_t)\)(-?\d)", r"\1", n)
    n = re.sub(r"(?<![\w])(-?\d+)(?:ull|ll|ul|lu|u|l)\b", r"\1", n, flags=re.I)
    return re.sub(r"\s+", "", n)


# ----------------------------------------------------------------------------
# DWARF: attributes, names, definitions.

def attr(die, name, default=None):
    a = die.attributes.get(name)
    return default if a is None else a.value


def die_name(die):
    v = attr(die, "DW_AT_name")
    if v is None:
        return None
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def die_ref(die):
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


# ----------------------------------------------------------------------------
# Type spelling and alignment.

def strip(die):
    """Follows typedefs and cv-qualifiers to the underlying type (None: void)."""
    seen = 0
    while die is not None and die.tag in TRANSPARENT_TAGS:
        die = ref(die, "DW_AT_type")
        seen += 1
        if seen > 64:
            raise SchemaError("%s: typedef cycle" % die_ref(die))
    return die


class Speller:
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
        params = [self.spell(ref(c, "DW_AT_type")) for c in die.iter_children()
                  if c.tag == "DW_TAG_formal_parameter" and not attr(c, "DW_AT_artificial")]
        if any(c.tag == "DW_TAG_unspecified_parameters" for c in die.iter_children()):
            params.append("...")
        return "%s %s(%s)" % (self.spell(ref(die, "DW_AT_type")), declarator, ", ".join(params))


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


# ----------------------------------------------------------------------------
# Layout: pointer words, vptrs and the flattened member list of one type.

def index_suffix(i, dims):
    """The subscripts of flat element i of an array of shape dims: "[1][2]"."""
    idx = []
    for d in reversed(dims):
        idx.append(i % d)
        i //= d
    return "".join("[%d]" % k for k in reversed(idx))


class Leaf:
    __slots__ = ("offset", "size", "path", "type", "kind", "bits")

    def __init__(self, offset, size, path, typ, kind, bits=None):
        self.offset, self.size, self.path, self.type = offset, size, path, typ
        self.kind = kind  # "raw", "ptr", "vptr" or "bits"
        self.bits = bits  # (first bit from the object start, bit count) for "bits"

    def line(self):
        if self.kind == "bits":
            first, count = self.bits
            return "%d.%d %db %s %s" % (first // 8, first % 8, count, self.path, self.type)
        return "%d %d %s %s" % (self.offset, self.size, self.path, self.type)


class Acc:
    """What a walk found: leaves (pointers, vptrs, the rest) and bit-field
    storage units."""

    def __init__(self):
        self.leaves = []
        self.vptrs = {}     # offset -> (vtable symbol, address point, path)
        self.units = []     # (start, end, path): storage units of bit-fields

    def merge(self, other):
        self.leaves.extend(other.leaves)
        self.vptrs.update(other.vptrs)
        self.units.extend(other.units)

    def pointers(self):
        return {l.offset: l.path for l in self.leaves if l.kind == "ptr"}


class VtableGroup:
    def __init__(self, symbol, inp, raw, targets, points):
        self.symbol, self.input = symbol, inp
        self.raw, self.targets = raw, targets
        self.points = points  # object offset -> address point


class Complete:
    """A complete object being walked: its vtable group (if dynamic), the
    virtual bases already placed, the vptr members the DWARF shows."""

    OBJ = 1 << 40  # a symbolic address of the object, for DWARF expressions
    VT = 1 << 50   # and of its vtable group

    def __init__(self, cls_name, group, pre):
        self.cls_name, self.group, self.pre = cls_name, group, pre
        self.vbases = set()
        self.vptr_members = {}  # offset in the complete object -> path

    def deref(self, addr, where):
        if self.group is not None:
            rel = addr - self.OBJ
            if rel in self.group.points:
                return self.VT + self.group.points[rel]
            idx = addr - self.VT
            if 0 <= idx < len(self.group.raw) * WORD and idx % WORD == 0:
                if self.group.targets[idx // WORD] is None:
                    return self.group.raw[idx // WORD]
        raise SchemaError("%s: cannot evaluate the location of a virtual base of `%s` "
                          "(read of an unknown word)" % (where, self.cls_name))


class Layouter:
    def __init__(self, dwarf, vtables, speller):
        self.dwarf, self.vtables, self.speller = dwarf, vtables, speller
        self._dynamic = {}
        self._align = {}

    # -- errors ----------------------------------------------------------
    @staticmethod
    def where(top, path):
        return "type `%s` member `%s`" % (top, path) if path else "type `%s`" % top

    def refuse(self, top, path, what):
        raise SchemaError("%s: %s" % (self.where(top, path), what))

    # -- helpers -----------------------------------------------------------
    def class_def(self, die, top, path):
        return self.dwarf.definition(die, self.where(top, path))

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

    def vtable_group(self, cls, names, top, path):
        group = self.vtables.find(names)
        if group is None:
            self.refuse(top, path, "the vtable of polymorphic class `%s` is not in the inputs "
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
            self.refuse(top, path, "has type void")
        tag = t.tag
        typ = self.speller.spell(tdie)
        if tag == "DW_TAG_pointer_type":
            target = strip(ref(t, "DW_AT_type"))
            if target is not None and target.tag == "DW_TAG_subroutine_type":
                self.refuse(top, path, "is a function pointer (%s); code addresses change "
                            "between runs, so it cannot be stored persistently" % typ)
            if off % WORD:
                self.refuse(top, path, "is a pointer at offset %d, which is not 8-byte aligned "
                            "(packed?)" % off)
            acc.leaves.append(Leaf(off, WORD, path, typ, "ptr"))
        elif tag in ("DW_TAG_reference_type", "DW_TAG_rvalue_reference_type"):
            self.refuse(top, path, "is a reference (%s); make it a pointer" % typ)
        elif tag == "DW_TAG_ptr_to_member_type":
            self.refuse(top, path, "is a pointer to member (%s), which cannot be made "
                        "persistent" % typ)
        elif tag in ("DW_TAG_base_type", "DW_TAG_enumeration_type", "DW_TAG_unspecified_type"):
            size = constant(t, "DW_AT_byte_size")
            if size is None and tag == "DW_TAG_enumeration_type":
                size = constant(strip(ref(t, "DW_AT_type")), "DW_AT_byte_size")
            if size is None and die_name(t) in NULLPTR_NAMES:
                size = WORD
            if size is None:
                raise SchemaError("%s: %s: no size" % (die_ref(t), self.where(top, path)))
            acc.leaves.append(Leaf(off, size, path, typ, "raw"))
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
            self.refuse(top, path, "is a function")
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
            self.refuse(top, path, "is an array of void")
        esize = self.size_of(es, top, path)
        if count is None:
            # Flexible array member: harmless when its elements hold no pointers.
            probe = Acc()
            self.value(elem, off, path + "[0]", probe, top)
            if any(l.kind != "raw" for l in probe.leaves) or probe.units:
                self.refuse(top, path, "is an array of unknown bound holding pointers (%s)" % typ)
            acc.leaves.append(Leaf(off, 0, path, typ, "raw"))
            return
        if es.tag in ("DW_TAG_base_type", "DW_TAG_enumeration_type", "DW_TAG_unspecified_type"):
            acc.leaves.append(Leaf(off, esize * count, path, typ, "raw"))
            return
        if es.tag == "DW_TAG_pointer_type":
            target = strip(ref(es, "DW_AT_type"))
            if target is not None and target.tag == "DW_TAG_subroutine_type":
                self.refuse(top, path, "is an array of function pointers (%s)" % typ)
            if off % WORD:
                self.refuse(top, path, "is an array of pointers at offset %d, not 8-byte "
                            "aligned (packed?)" % off)
            # One line for the whole array, one pointer word per element.
            for i in range(count):
                acc.leaves.append(Leaf(off + i * WORD, WORD, path + index_suffix(i, dims), typ,
                                       "ptr"))
            acc.leaves.append(Leaf(off, esize * count, path, typ, "array"))
            return
        # Arrays of classes, unions, pointers to members...: element by element.
        for i in range(count):
            self.value(elem, off + i * esize, path + index_suffix(i, dims), acc, top)

    def size_of(self, die, top, path):
        if die.tag in CLASS_TAGS + ("DW_TAG_union_type",):
            die = self.class_def(die, top, path)
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
            raise SchemaError("%s: %s: no byte size" % (die_ref(die), self.where(top, path)))
        return size

    def complete(self, d, off, path, acc, top, demangled=None):
        """A complete object of class d at offset off: places its vptrs from
        its own vtable group, then walks its bases and members."""
        name = self.dwarf.qualname(d) if die_name(d) else self.speller.spell(d)
        group = None
        if self.is_dynamic(d):
            names = [name] + ([demangled] if demangled else [])
            group = self.vtable_group(d, names, top, path)
            for k, ap in sorted(group.points.items()):
                acc.vptrs[off + k] = (group.symbol, ap, path)
        ctx = Complete(name, group, path + "." if path else "")
        self.body(d, off, 0, ctx.pre, acc, top, ctx)
        if group is not None:
            found = set(ctx.vptr_members)
            want = set(group.points)
            if found != want:
                raise SchemaError(
                    "%s: the vtable group %s (in %s) puts vptrs at offsets %s of `%s`, but its "
                    "DWARF shows `_vptr` members at %s"
                    % (self.where(top, path), group.symbol, group.input, sorted(want),
                       name, sorted(found)))
            for k, p in ctx.vptr_members.items():
                acc.leaves.append(Leaf(off + k, WORD, p, "vptr", "vptr"))

    def body(self, d, off, rel, pre, acc, top, ctx):
        """The bases and members of class d, a subobject at `rel` inside the
        complete object ctx, which is at `off` in T. `pre` prefixes member
        paths: "" at the top, "pos." in a member, "Shape::" in a base."""
        path = pre.rstrip(".:")
        for c in d.iter_children():
            if c.tag == "DW_TAG_inheritance":
                b = self.class_def(strip(ref(c, "DW_AT_type")), top, path)
                bname = self.dwarf.qualname(b) if die_name(b) else "{anonymous}"
                brel = self.location(c, rel, ctx, top, path)
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
                    mrel = self.location(c, rel, ctx, top, path)
                    ctx.vptr_members[mrel] = mpath
                    continue
                if "DW_AT_bit_size" in c.attributes:
                    self.bitfield(c, off + rel, mpath, acc, top)
                    continue
                mrel = self.location(c, rel, ctx, top, path)
                self.value(ref(c, "DW_AT_type"), off + mrel, mpath, acc, top)

    def location(self, c, rel, ctx, top, path):
        """DW_AT_data_member_location of a member or base, as an offset in the
        complete object (evaluating the expression of a virtual base)."""
        a = c.attributes.get("DW_AT_data_member_location")
        if a is None:
            return rel  # union members, and g++'s first members in DWARF 2
        if a.form in CONST_FORMS:
            return rel + a.value
        if a.form not in BLOCK_FORMS:
            raise SchemaError("%s: type `%s` member `%s`: member location of form %s"
                              % (die_ref(c), top, path, a.form))
        where = "%s: %s" % (die_ref(c), self.where(top, path))
        ops = DWARFExprParser(c.cu.structs).parse_expr(a.value)
        stack = [Complete.OBJ + rel]
        for op in ops:
            n = op.op_name
            try:
                if n == "DW_OP_dup":
                    stack.append(stack[-1])
                elif n == "DW_OP_drop":
                    stack.pop()
                elif n == "DW_OP_over":
                    stack.append(stack[-2])
                elif n == "DW_OP_swap":
                    stack[-1], stack[-2] = stack[-2], stack[-1]
                elif n == "DW_OP_deref":
                    stack.append(ctx.deref(stack.pop(), where))
                elif n.startswith("DW_OP_lit"):
                    stack.append(int(n[len("DW_OP_lit"):]))
                elif n in ("DW_OP_const1u", "DW_OP_const2u", "DW_OP_const4u", "DW_OP_const8u",
                           "DW_OP_const1s", "DW_OP_const2s", "DW_OP_const4s", "DW_OP_const8s",
                           "DW_OP_constu", "DW_OP_consts"):
                    stack.append(op.args[0])
                elif n == "DW_OP_plus":
                    b = stack.pop()
                    stack.append(stack.pop() + b)
                elif n == "DW_OP_minus":
                    b = stack.pop()
                    stack.append(stack.pop() - b)
                elif n == "DW_OP_plus_uconst":
                    stack.append(stack.pop() + op.args[0])
                else:
                    raise SchemaError("%s: unsupported DWARF operation %s in a member location"
                                      % (where, n))
            except IndexError:
                raise SchemaError("%s: malformed member location expression" % where)
        if len(stack) != 1 or not 0 <= stack[0] - Complete.OBJ < 1 << 32:
            raise SchemaError("%s: member location expression gave no offset" % where)
        return stack[0] - Complete.OBJ

    def bitfield(self, c, base, path, acc, top):
        t = ref(c, "DW_AT_type")
        s = strip(t)
        if s is None or s.tag not in ("DW_TAG_base_type", "DW_TAG_enumeration_type"):
            self.refuse(top, path, "is a bit-field of a type schema-gen does not know")
        bits = constant(c, "DW_AT_bit_size")
        unit = self.size_of(s, top, path)
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
                               (first, bits)))

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
                self.refuse(top, mpath, "an object with a vtable inside a union: schema-gen "
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
                self.refuse(top, holder, why % mpath)
            spans = [(l.offset, l.size, l.path) for l in a.leaves if l.kind not in ("ptr", "array")]
            spans += [(u[0], u[1] - u[0], u[2]) for u in a.units]
            for o, size, lpath in spans:
                for w in words:
                    if o < w + WORD and w < o + max(size, 1):
                        holder = next(x for x in sets if w in x)[w]
                        self.refuse(top, holder, why % lpath)
        for _, a in alts:
            acc.merge(a)


def member_offset_const(c):
    a = c.attributes.get("DW_AT_data_member_location")
    if a is None:
        return 0
    if a.form in CONST_FORMS:
        return a.value
    if a.form in BLOCK_FORMS and len(a.value) >= 2 and a.value[0] == 0x23:  # plus_uconst
        v, shift = 0, 0
        for b in a.value[1:]:
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                break
        return v
    return None


# ----------------------------------------------------------------------------
# Vtables of all inputs, by class name.

class Vtables:
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


# ----------------------------------------------------------------------------
# The schema: one descriptor per persistent type.

class Descriptor:
    def __init__(self, name, slot, size, align, pointers, vptrs, members, origin):
        self.name, self.slot, self.size, self.align = name, slot, size, align
        self.pointers = pointers      # [offset]
        self.vptrs = vptrs            # [(offset, vtable symbol, address point)]
        self.members = members        # [line]
        self.origin = origin          # where it was first seen, for messages

    def key(self):
        return (self.size, self.align, tuple(self.pointers), tuple(self.vptrs),
                tuple(self.members))


def is_builtin(t):
    """Types the runtime describes itself: pointers, arithmetic types, enums."""
    return t is not None and t.tag in ("DW_TAG_pointer_type", "DW_TAG_base_type",
                                       "DW_TAG_enumeration_type")


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
    lay = Layouter(dwarf, vtables, speller)

    result = {}    # slot symbol -> Descriptor
    by_name = {}   # type name -> Descriptor
    covered = set()
    for inp, key_die, slot_die, tdie in dwarf.type_keys:
        linkage = attr(slot_die, "DW_AT_linkage_name") or attr(slot_die, "DW_AT_MIPS_linkage_name")
        linkage = linkage.decode() if linkage else dwarf.spec_linkage.get((inp.index,
                                                                           slot_die.offset))
        t = strip(tdie)
        tname = speller.spell(t) if t is not None else "void"
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
            raise SchemaError("type `%s` has internal linkage (anonymous namespace or local "
                              "class): generated code cannot reach its registration slot; "
                              "move it to a named namespace" % tname)
        if t.tag in CLASS_TAGS + ("DW_TAG_union_type",):
            t = dwarf.definition(t, "type `%s`" % tname)
        dm = demangled.get(linkage, "")
        m = re.match(r"qs::detail::type_key<(.*)>::slot$", dm)
        try:
            acc = lay.layout(t, tname, m.group(1).strip() if m else None)
            size = lay.size_of(t, tname, "")
            align = lay.alignment(t)
        except SchemaError:
            raise
        except Exception as e:  # never a traceback for DWARF we do not understand
            raise SchemaError("type `%s` (%s): schema-gen failed on its DWARF: %s: %s"
                              % (tname, die_ref(t), type(e).__name__, e))
        d = finish(tname, linkage, size, align, acc, "%s" % inp)
        prev = by_name.get(tname)
        if prev is not None and prev.key() != d.key():
            raise SchemaError("type `%s` has two different layouts: one in %s, one in %s "
                              "(an ODR violation: check macros and flags)\n  %s\n  %s"
                              % (tname, prev.origin, d.origin, describe(prev), describe(d)))
        by_name.setdefault(tname, d)
        result.setdefault(linkage, d)
    missing = sorted(set(slot_syms) - covered)
    if missing:
        where = ", ".join(sorted({str(i) for s in missing for i in slot_syms[s]}))
        raise SchemaError("no DWARF type information for %s (defined in %s): compile "
                          "with -g (not -g1, not -gsplit-dwarf)"
                          % (", ".join("`%s`" % demangled.get(s, s) for s in missing), where))
    return sorted(result.values(), key=lambda d: (d.name, d.slot))


def describe(d):
    return "size %d align %d pointers %s vptrs %s" % (d.size, d.align, d.pointers,
                                                      [(o, s, a) for o, s, a in d.vptrs])


def finish(tname, slot, size, align, acc, origin):
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
    lines = []
    arrays = {(l.offset, l.path) for l in leaves if l.kind == "array"}
    for l in leaves:
        if l.kind == "ptr" and any(l.path.startswith(p + "[") for _, p in arrays):
            continue  # a pointer array is one line
        lines.append(l.line() if l.kind != "array" else
                     Leaf(l.offset, l.size, l.path, l.type, "raw").line())
    return Descriptor(tname, slot, size, align, ptrs, vptrs, lines, origin)


# ----------------------------------------------------------------------------
# Output.

def c_string(s):
    out = []
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if c == "\\" or c == '"':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif 32 <= ch < 127 and c != "?":
            out.append(c)
        else:
            out.append("\\%03o" % ch)
    return '"' + "".join(out) + '"'


def generate(descs, inputs):
    out = ["// Generated by qs_schema_gen.py; do not edit. One qs::type_descriptor per",
           "// persistent type found in the DWARF of:"]
    out += ["//   %s" % os.path.basename(p) for p in inputs]
    out += ["#include <qs/schema.hpp>", "", "#include <cstdint>", ""]
    vts = sorted({s for d in descs for _, s, _ in d.vptrs})
    vt_index = {s: i for i, s in enumerate(vts)}
    for i, d in enumerate(descs):
        out.append("extern qs::detail::type_slot qs_schema_slot_%d __asm__(%s);  // %s"
                   % (i, c_string(d.slot), d.name.replace("\n", " ")))
    for s, i in vt_index.items():
        out.append("extern const char qs_schema_vt_%d[] __asm__(%s);" % (i, c_string(s)))
    out.append("")
    out.append("namespace {")
    for i, d in enumerate(descs):
        out.append("")
        out.append("// %s" % d.name.replace("\n", " "))
        ptrs = "nullptr"
        if d.pointers:
            out.append("const std::uint32_t qs_ptrs_%d[] = {%s};"
                       % (i, ", ".join(str(p) for p in d.pointers)))
            ptrs = "qs_ptrs_%d" % i
        vps = "nullptr"
        if d.vptrs:
            out.append("const qs::vptr_entry qs_vptrs_%d[] = {" % i)
            for o, s, ap in d.vptrs:
                out.append("    {%d, qs_schema_vt_%d, %d, %s}," % (o, vt_index[s], ap, c_string(s)))
            out.append("};")
            vps = "qs_vptrs_%d" % i
        out.append("const qs::type_descriptor qs_desc_%d = {" % i)
        out.append("    %s, %d, %d," % (c_string(d.name), d.size, d.align))
        out.append("    %s, %d, %s, %d," % (ptrs, len(d.pointers), vps, len(d.vptrs)))
        for j, line in enumerate(d.members):
            out.append("    %s%s" % (c_string(line + ("\n" if j + 1 < len(d.members) else "")),
                                     "" if j + 1 < len(d.members) else ","))
        if not d.members:
            out.append("    \"\",")
        out.append("};")
    out.append("")
    out.append("// Runs before ordinary static initializers (priority 65535), so that")
    out.append("// every type is registered before any allocation and before any")
    out.append("// database opens (which checks the program's types against its schema).")
    out.append("__attribute__((constructor(101))) void qs_schema_register() {")
    for i, _ in enumerate(descs):
        out.append("  qs_schema_slot_%d.desc = &qs_desc_%d;" % (i, i))
        out.append("  qs::detail::note_registered(&qs_desc_%d);" % i)
    out.append("}")
    out.append("")
    out.append("}  // namespace")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, fromfile_prefix_chars="@",
                                 description="Writes qs type descriptors from DWARF.")
    ap.add_argument("inputs", nargs="+", help="object files or a linked binary")
    ap.add_argument("-o", "--output", help="the C++ file to write (default: stdout)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list the types found")
    args = ap.parse_args(argv)
    try:
        descs = build_schema(args.inputs)
    except SchemaError as e:
        sys.stderr.write("%s: error: %s\n" % (PROG, e))
        return 1
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("%s: error: %s\n" % (PROG, e))
        return 2
    except Exception as e:  # a bug, or input nothing above anticipated
        if os.environ.get("QS_SCHEMA_GEN_DEBUG"):
            raise
        sys.stderr.write("%s: error: unexpected failure reading %s (%s: %s); rerun with "
                         "QS_SCHEMA_GEN_DEBUG=1 for a traceback\n"
                         % (PROG, " ".join(args.inputs), type(e).__name__, e))
        return 3
    if args.verbose:
        for d in descs:
            sys.stderr.write("%s: %s: size %d align %d, %d pointers, %d vptrs\n"
                             % (PROG, d.name, d.size, d.align, len(d.pointers), len(d.vptrs)))
    text = generate(descs, args.inputs)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        with open(args.output) as f:
            if f.read() == text:
                return 0  # unchanged: keep the timestamp, nothing recompiles
    except OSError:
        pass
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
