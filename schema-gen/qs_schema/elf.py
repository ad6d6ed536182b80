"""elf: the ELF inputs of schema-gen (relocatable objects, executables and
shared objects, x86-64 only): their defined symbols, their DWARF with its
relocations applied, and the words of a vtable with what each one points to.

Invariants:
  * an Input holds its file open until close(); it is opened once per run;
  * `defined` holds defined symbols only (the first of a name wins: .symtab
    before .dynsym);
  * in a relocatable object addresses are (section index, offset) pairs; in a
    linked binary they are virtual addresses (section index None);
  * the DWARF sections the tool reads (NEEDED_DWARF) are relocated, fast and
    exactly, for R_X86_64_64/_32/_32S; the others are never read, so they are
    handed to pyelftools unrelocated.
"""

from io import BytesIO
import struct

from elftools.common.exceptions import ELFError, DWARFError
from elftools.dwarf.dwarfinfo import DebugSectionDescriptor
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from .errors import SchemaError

# The symbol of qs::detail::type_key<T>::slot is SLOT_PREFIX <T> SLOT_SUFFIX.
SLOT_PREFIX = "_ZN2qs6detail8type_keyI"
SLOT_SUFFIX = "E4slotE"
# The size of a pointer, a vptr and a vtable word.
WORD = 8

# The x86-64 relocation of a PIE's pointers to its own data (vtables).
R_X86_64_RELATIVE = 8


class Symbol:
    """A defined ELF symbol."""
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
