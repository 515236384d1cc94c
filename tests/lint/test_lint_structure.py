#!/usr/bin/env python3
"""scripts/lint_structure.py's rules on small trees written here: each rule finds what it must, at
the line it must, and passes what it must not count (the brace, quote and preprocessor cases that
a naive scan gets wrong). Usage: test_lint_structure.py (exit 0 pass, 1 fail)."""
import pathlib
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parent.parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

import lint  # noqa: E402
import lint_structure  # noqa: E402


def body(lines):
    """`lines` statements, one a line."""
    return "".join(f"    x += {i};\n" for i in range(lines))


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class FunctionLength(unittest.TestCase):
    def long_functions(self, text):
        return lint_structure.long_functions(lint_structure.without_preprocessor(lint.strip_comments(text)))

    def test_a_function_over_the_limit_is_named_at_its_line(self):
        # 148 statements + the braces' lines = 150: at the limit; one more is over it.
        at_limit = "int f(int x) {\n" + body(148) + "}\n"
        over = "\nint Widget::g(int x) const {\n" + body(149) + "}\n"
        self.assertEqual(self.long_functions(at_limit), [])
        self.assertEqual(self.long_functions(at_limit + over), [(152, "Widget::g", 151)])

    def test_braces_in_literals_comments_and_initialisers_do_not_count(self):
        text = ("namespace n {\n"
                "const char kOpen = '{';\n"            # a character literal
                "const char* kText = \"}}{\";\n"      # a string
                "// } a comment\n"
                "const int kTable[] = {1, 2, {3}};\n"  # an initialiser at namespace scope
                "struct S {\n"
                "    int a_{0};\n"
                "    S(int a) : a_{a} {\n" + body(150) + "    }\n"   # a constructor with brace initialisers
                "};\n"
                "}  // namespace n\n")
        self.assertEqual(self.long_functions(text), [(8, "S", 152)])

    def test_two_branches_of_an_if_count_once(self):
        text = ("int f(int x) {\n"
                "#if A\n    if (x) {\n#else\n    if (!x) {\n#endif\n        x = 1;\n    }\n"
                + body(100) + "}\n")
        self.assertEqual(self.long_functions(text), [])
        lint_structure.MAX_FUNCTION_LINES, saved = 50, lint_structure.MAX_FUNCTION_LINES
        try:
            self.assertEqual(self.long_functions(text), [(1, "f", 109)])
        finally:
            lint_structure.MAX_FUNCTION_LINES = saved

    def test_operators_and_lambdas_at_namespace_scope(self):
        text = ("bool operator==(const A& a, const B& b) {\n" + body(150) + "}\n"
                "const auto kMake = [] {\n" + body(150) + "};\n")   # an initialiser, not a function
        self.assertEqual(self.long_functions(text), [(1, "operator==", 152)])


class FileLengthAndIncludeOrder(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_file_length(self):
        write(self.root, "core/src/short.cpp", "\n" * 600)
        write(self.root, "tests/core/long.cpp", "\n" * 601)
        self.assertEqual(lint_structure.file_length_findings(self.root),
                         [("file-length", "tests/core/long.cpp", "601 lines")])

    def test_an_include_up_the_layers_and_one_back_to_the_includer(self):
        write(self.root, "ui/include/wingspan/ui/chart.hpp", '#pragma once\n#include "wingspan/ui/main_window.hpp"\n')
        write(self.root, "ui/include/wingspan/ui/main_window.hpp", '#pragma once\n#include "wingspan/ui/chart.hpp"\n')
        write(self.root, "ui/src/window/main_window.cpp", '#include "wingspan/ui/main_window.hpp"\n// #include "x.hpp"\n')
        write(self.root, "trainer/src/model/linear.hpp", "#pragma once\n")
        write(self.root, "trainer/src/model/linear.cpp", '#include "linear.hpp"\n#include "model.hpp"\n')
        write(self.root, "trainer/src/model/model.hpp", '#pragma once\n#include "linear.hpp"\n#include "wingspan/setup.hpp"\n')
        write(self.root, "trainer/src/brand_new.cpp", "\n")
        found = sorted(lint_structure.include_order_findings(self.root, lint.strip_comments))
        self.assertEqual(found, [
            ("include-order", "trainer/src/brand_new.cpp", "1 (brand_new has no layer in scripts/lint_structure.py)"),
            ("include-order", "trainer/src/model/linear.cpp", "2 (trainer/src/model/model.hpp includes this file's header)"),
            ("include-order", "ui/include/wingspan/ui/chart.hpp",
             "2 (primitives includes window: ui/include/wingspan/ui/main_window.hpp)"),
            # Down the layers, but into a header that includes this one: a cycle, reported at both ends.
            ("include-order", "ui/include/wingspan/ui/main_window.hpp",
             "2 (ui/include/wingspan/ui/chart.hpp includes this file's header)"),
        ])


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
