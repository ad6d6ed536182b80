"""What schema-gen refuses: each case compiles a type with a member that
cannot be made persistent and checks that the tool fails (exit 1, no
traceback) with a message naming the type and the member."""

import unittest

from sgtest import CompilingTest, VARIANTS


class Refusals(CompilingTest):
    def refused(self, source, type_name, member, why, flags=("-O0", "-g")):
        obj = self.compile(source, flags)
        code, out, err = self.run_tool(obj)
        self.assertEqual(code, 1, "expected a refusal, got exit %d\n%s%s" % (code, out, err))
        self.assertIn("type `%s`" % type_name, err)
        if member is not None:
            self.assertIn("member `%s`" % member, err)
        self.assertIn(why, err)
        return err

    def test_union_holding_a_pointer(self):
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                self.refused("""
                    struct Tagged { int tag; union { long number; Tagged* next; } u; };
                    QS_USE(Tagged)""", "Tagged", "u.next", "shares storage with `u.number`",
                             flags)

    def test_union_pointer_against_a_shorter_member(self):
        self.refused("""
            struct Opt { union { char empty; Opt* value; } s; bool engaged; };
            QS_USE(Opt)""", "Opt", "s.value", "in a union")

    def test_union_pointer_against_a_bit_field(self):
        self.refused("""
            struct Bits { union { unsigned long low : 3; Bits* p; } u; };
            QS_USE(Bits)""", "Bits", "u.p", "shares storage with `u.low`")

    def test_union_of_polymorphic_objects(self):
        self.refused("""
            struct V { virtual ~V() {} int x; };
            struct H { union U { V v; int i; U() : v() {} ~U() {} } u; };
            H h;
            QS_USE(H)""", "H", "u.v", "inside a union")

    def test_reference(self):
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                self.refused("""
                    struct Node { int& counter; Node* next; };
                    QS_USE(Node)""", "Node", "counter", "is a reference (int&)", flags)

    def test_rvalue_reference_in_a_nested_struct(self):
        self.refused("""
            struct In { int&& r; };
            struct Out { In inner[2]; };
            QS_USE(Out)""", "Out", "inner[0].r", "is a reference")

    def test_pointer_to_data_member(self):
        self.refused("""
            struct Rec { int a, b; int Rec::* which; };
            QS_USE(Rec)""", "Rec", "which", "pointer to member (int Rec::*)")

    def test_pointer_to_member_function(self):
        self.refused("""
            struct Act { void run(int); void (Act::*handler)(int); };
            QS_USE(Act)""", "Act", "handler", "pointer to member")

    def test_function_pointer(self):
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                self.refused("""
                    namespace app { struct Callback { int id; void (*fn)(int, char*); }; }
                    QS_USE(app::Callback)""", "app::Callback", "fn",
                             "function pointer (void (*)(int, char*))", flags)

    def test_function_pointer_in_a_base(self):
        self.refused("""
            struct Base { int (*cmp)(const void*, const void*); };
            struct Derived : Base { Derived* next; };
            QS_USE(Derived)""", "Derived", "Base::cmp", "function pointer")

    def test_array_of_function_pointers(self):
        self.refused("""
            struct Table { void (*ops[4])(); };
            QS_USE(Table)""", "Table", "ops", "array of function pointers")

    def test_std_function_member(self):
        self.refused("""
            #include <functional>
            struct Job { std::function<void()> run; };
            QS_USE(Job)""", "Job", None, "function pointer")

    def test_unaligned_pointer(self):
        self.refused("""
            struct __attribute__((packed)) Packed { char c; Packed* p; };
            QS_USE(Packed)""", "Packed", "p", "not 8-byte aligned")

    def test_internal_linkage(self):
        err = self.refused("""
            namespace { struct Hidden { Hidden* next; }; }
            QS_USE(Hidden)""", "(anonymous namespace)::Hidden", None, "internal linkage")
        self.assertIn("named namespace", err)

    # What the qs allocation templates do with the slot: read it, never take
    # its address. Optimised, g++ folds the read of a file-local slot to null
    # and drops the slot, so no symbol is left to tell; the DWARF still does.
    READ_SLOT = "const qs::type_descriptor* d() { return qs::detail::descriptor_of<%s>(); }"

    def test_anonymous_namespace_when_the_slot_is_optimised_away(self):
        for flags in VARIANTS:
            with self.subTest(flags=flags):
                err = self.refused("namespace { struct Hidden { Hidden* next; }; }\n" +
                                   self.READ_SLOT % "Hidden",
                                   "(anonymous namespace)::Hidden", None,
                                   "has internal linkage (it is declared in an anonymous "
                                   "namespace)", flags)
                self.assertIn("Move the type out of the anonymous namespace, into a named "
                              "namespace", err)
                self.assertIn("has no schema", err)

    def test_template_of_an_anonymous_namespace_type(self):
        for flags in (VARIANTS[0], VARIANTS[3]):
            with self.subTest(flags=flags):
                self.refused("""
                    namespace { struct Hidden { int x; }; }
                    namespace app { template <class T> struct Box { T* item; }; }
                    """ + self.READ_SLOT % "app::Box<Hidden>",
                             "app::Box<(anonymous namespace)::Hidden>", None,
                             "a template argument of it has internal linkage", flags)

    def test_class_local_to_a_function(self):
        for flags in (VARIANTS[0], VARIANTS[3]):
            with self.subTest(flags=flags):
                err = self.refused("""
                    const qs::type_descriptor* make() {
                      struct Local { Local* next; };
                      return qs::detail::descriptor_of<Local>();
                    }""", "make::Local", None,
                                   "it is a class local to a function that is not inline", flags)
                self.assertIn("Move the type out of the function", err)


if __name__ == "__main__":
    unittest.main()
