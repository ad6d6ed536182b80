"""errors: how schema-gen fails.

A SchemaError is a failure reported to the user as "qs_schema_gen: error:
<message>" with exit status 1; its message names what is wrong (the input,
the DIE, or the type and member path).

Invariants: the stages raise SchemaError for every input they refuse or do
not understand (an OSError, such as a missing file, and c++filt's failure
are left as they are; cli reports all of them without a traceback), and every message spells a type and a
member as where() does: type `T` member `a.b[1]`.
"""

PROG = "qs_schema_gen"


class SchemaError(Exception):
    """A failure reported to the user: the message names what is wrong."""


def where(top, path):
    """How a message names type `top` and, when path is not empty, its member."""
    return "type `%s` member `%s`" % (top, path) if path else "type `%s`" % top


def refuse(top, path, what):
    raise SchemaError("%s: %s" % (where(top, path), what))
