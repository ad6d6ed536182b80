"""location: where a member or base class lies in an object, from its
DW_AT_data_member_location: a constant, or (for a virtual base) a DWARF
expression that reads the vbase offset out of the vtable the object's vptr
points to.

The expression is evaluated symbolically: the object is at address
Complete.OBJ, its vtable group at Complete.VT; reading a vptr gives the
group's address point for it, reading a vtable word gives that word's value
in the group's bytes.

Invariants:
  * a location is an offset in the complete object (0 <= offset < 2**32), or
    the run fails naming the DIE, the type and the member;
  * only words the vtable group holds as plain numbers (not relocated) are
    read; anything else (unknown operation, unknown word) is an error;
  * member_offset_const() never evaluates: it reads a constant or a lone
    DW_OP_plus_uconst, and says None otherwise.
"""

from elftools.dwarf.dwarf_expr import DWARFExprParser

from . import errors
from .dwarf import BLOCK_FORMS, CONST_FORMS, die_ref
from .elf import WORD
from .errors import SchemaError


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
        """The word at symbolic address addr (see the module docstring)."""
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


def location(c, rel, ctx, top, path):
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
    where = "%s: %s" % (die_ref(c), errors.where(top, path))
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


def member_offset_const(c):
    """The offset of member c in its class when it is a plain constant
    (0 without a location, as for union members), else None."""
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
