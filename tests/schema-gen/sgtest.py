"""Helpers of the schema-gen Python tests: compile C++ snippets with the real
compiler in a temporary directory and run qs_schema_gen on the objects, or
import the stages of its package qs_schema.

Environment (set by ctest, with defaults for a run from this folder):
QS_SCHEMA_GEN (the tool), QS_INCLUDE_DIR (libqs/include and common, separated by ':'), CXX (g++).
"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.environ.get("QS_SCHEMA_GEN") or os.path.join(HERE, "..", "..", "schema-gen",
                                                        "qs_schema_gen.py")
INCLUDE = (os.environ.get("QS_INCLUDE_DIR") or os.pathsep.join(
    os.path.join(HERE, "..", "..", d) for d in ("libqs/include", "common"))).split(os.pathsep)
# The compiler's -I arguments for them.
INCLUDE_FLAGS = [a for d in INCLUDE for a in ("-I", d)]
CXX = os.environ.get("CXX") or "g++"

# The package the tool runs (schema-gen/qs_schema), for the tests of its
# stages: `from qs_schema import emit`.
sys.path.insert(0, os.path.dirname(os.path.abspath(TOOL)))

# The flag sets the tool must understand: g++'s default DWARF 5 and DWARF 4,
# unoptimised and optimised.
VARIANTS = (("-O0", "-gdwarf-4"), ("-O0", "-gdwarf-5"), ("-O2", "-gdwarf-4"), ("-O2", "-gdwarf-5"))

PRELUDE = """
#include <qs/schema.hpp>
// Instantiates type_key<T>::slot as every qs allocation template does.
#define QS_CAT2(a, b) a##b
#define QS_CAT(a, b) QS_CAT2(a, b)
#define QS_USE(...) \
  void* QS_CAT(qs_use_, __COUNTER__)() { return &qs::detail::type_key<__VA_ARGS__>::slot; }
"""


def load_tool():
    spec = importlib.util.spec_from_file_location("qs_schema_gen", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class CompilingTest(unittest.TestCase):
    """A test case with a temporary directory and a compiler."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="qs-schema-gen-test-")
        self.dir = self._tmp.name
        self._n = 0

    def tearDown(self):
        self._tmp.cleanup()

    def compile(self, source, flags=("-O0", "-g"), link=False, prelude=True):
        """Compiles `source` to an object (or, with link=True, a program);
        returns its path."""
        self._n += 1
        src = os.path.join(self.dir, "t%d.cpp" % self._n)
        out = os.path.join(self.dir, "t%d.%s" % (self._n, "out" if link else "o"))
        with open(src, "w") as f:
            f.write((PRELUDE if prelude else "") + source)
        cmd = [CXX, "-std=c++20"] + INCLUDE_FLAGS + list(flags) + [src, "-o", out]
        if not link:
            cmd.insert(1, "-c")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            self.fail("compile failed: %s\n%s" % (" ".join(cmd), r.stderr))
        return out

    def run_tool(self, *inputs, output=None):
        """Runs the tool as a program; returns (exit code, stdout, stderr)."""
        cmd = [sys.executable, TOOL] + list(inputs)
        if output:
            cmd += ["-o", output]
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.assertNotIn("Traceback", r.stderr, r.stderr)
        return r.returncode, r.stdout, r.stderr
