"""cli: the command line of schema-gen (qs_schema_gen.py).

  qs_schema_gen.py [-v] [-o schema.cpp] INPUT...

An argument @FILE reads more arguments from FILE, one per line.

Invariants:
  * exit status 0: the output is written (or unchanged); 1: the inputs were
    refused or unreadable, with a message naming the type or input; 2: an OS
    error (a missing file, c++filt failing) or no pyelftools; 3: an
    unexpected failure, without a traceback unless QS_SCHEMA_GEN_DEBUG is set;
  * every message goes to stderr prefixed with "qs_schema_gen: ";
  * the output file is replaced atomically, and only when its text changes,
    so that an unchanged schema recompiles nothing.
"""

import argparse
import os
import subprocess
import sys

from .emit import generate
from .errors import PROG, SchemaError
from .schema import build_schema


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
