#!/usr/bin/env python3
"""qs_schema_gen: the schema generator of qs, the command the build runs
(schema-gen/cmake/QsSchema.cmake).

Reads the DWARF of object files or a linked binary and writes a C++ file
that registers a qs::type_descriptor for every persistent type. The work is
done by the package qs_schema next to this file (see its __init__.py for the
stages and their invariants); this file only finds it and runs its command
line, so that the command stays `qs_schema_gen.py -o schema.cpp INPUT...`.

Usage: qs_schema_gen.py -o schema.cpp INPUT... (an argument @FILE reads more
arguments from FILE, one per line).

Invariant: importing this file as a module (as the tests do) gives
build_schema, generate and main of the package, and runs nothing.
"""

import os
import sys

# The build runs this from the source tree: leave no __pycache__ there.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from qs_schema.cli import main  # noqa: E402
from qs_schema.emit import generate  # noqa: E402
from qs_schema.errors import SchemaError  # noqa: E402
from qs_schema.schema import build_schema  # noqa: E402

__all__ = ["SchemaError", "build_schema", "generate", "main"]

if __name__ == "__main__":
    sys.exit(main())
