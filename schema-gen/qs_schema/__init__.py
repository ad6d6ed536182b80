"""qs_schema: the schema generator of qs, as a package (the command is
../qs_schema_gen.py).

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

The stages, one module each, in the order a run goes through them:
  errors    SchemaError and how messages name a type and member;
  elf       the ELF inputs: symbols, DWARF relocation, vtable words;
  names     demangling and the spelling of names DWARF and c++filt share;
  vtables   vtable groups by class name, and their address points;
  dwarf     DIE attributes, qualified names, definitions, the type_keys;
  spelling  the C++ spelling of a type DIE;
  typeprops size, alignment and dynamic-ness of a type DIE;
  location  member locations, virtual-base expressions included;
  layout    the walk of one type: pointer words, vptrs, member records;
  descriptor  a walk's result checked and turned into a descriptor;
  schema    the pipeline: inputs to the sorted descriptors of a program;
  emit      the generated C++ text;
  cli       the command line: arguments, exit codes, the output file.

Invariants the package keeps (it fails with a message naming the type, and
the member or DIE, rather than break one):
  * every type_key<T>::slot symbol defined in the inputs is registered, or
    it is a built-in (pointer, arithmetic or enum T), or the run fails;
  * a persistent T with internal linkage, whose slot the generated file
    could not reach, is refused, whether or not the compiler kept the slot;
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

Importing the package checks for pyelftools first, so that a Python without
it gets a message saying what to install rather than a traceback.
"""

import sys

try:
    # What the modules import from pyelftools, checked here once.
    from elftools.common.exceptions import ELFError, DWARFError  # noqa: F401
    from elftools.dwarf.dwarf_expr import DWARFExprParser  # noqa: F401
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor  # noqa: F401
    from elftools.elf.elffile import ELFFile  # noqa: F401
    from elftools.elf.sections import SymbolTableSection  # noqa: F401
except ImportError:  # pragma: no cover - reported to the user
    sys.stderr.write("qs_schema_gen: error: this Python (%s) lacks pyelftools; "
                     "install the Debian package python3-pyelftools and run it "
                     "with /usr/bin/python3\n" % sys.executable)
    sys.exit(2)
