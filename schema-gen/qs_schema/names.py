"""names: the names of symbols, demangled, and a spelling of C++ type names
that DWARF and the demangler agree on.

Invariants:
  * demangle() runs c++filt (binutils, or $QS_CXXFILT) once for all names
    and returns one demangled name per input name, or fails;
  * normalize_name() maps g++'s DWARF spelling and c++filt's spelling of the
    same type to the same string (spaces, integer literal suffixes and
    character literals differ between them); it is used only to compare.
"""

import os
import re
import shutil
import subprocess

from .errors import SchemaError


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
