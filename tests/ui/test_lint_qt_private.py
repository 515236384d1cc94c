#!/usr/bin/env python3
"""scripts/lint.py's qt-private rule (issue 27 item 5): it finds each way ui/ or app/ could reach a
private Qt class (a class name in a string, as the memory chart's className() comparison with
"QBarSetPrivate" did; a private header), not a comment or an ordinary string, and the source tree
has none. Usage: test_lint_qt_private.py SOURCE_ROOT (exit 0 pass, 1 fail)."""
import importlib.util
import pathlib
import sys
import tempfile

PLANTED = {
    "ui/src/chart.cpp": (
        '// A comment may name QBarSetPrivate, even "QBarSetPrivate" in quotes.\n'      # 1: no
        "#include <QtCharts/private/qbarset_p.h>\n"                                    # 2: yes
        '#include "qchart_p.h"\n'                                                      # 3: yes
        "bool quiet(QObject* o) {\n"                                                   # 4
        '    return qstrcmp(o->metaObject()->className(), "QBarSetPrivate") == 0;\n'   # 5: yes
        "}\n"                                                                          # 6
        'const char* note = "Private to ui/src";\n'                                    # 7: no
        '#include "run_top_bar.hpp"\n'                                                 # 8: no
        "/* #include <private/qobject_p.h> */\n"                                       # 9: no
    ),
    "app/cli/main.cpp": 'bool b(QObject* o) { return o->inherits("QObjectPrivate"); }\n',   # 1: yes
    "core/src/other.cpp": 'const char* c = "QObjectPrivate";\n',   # outside ui/ and app/: not this rule's
}
EXPECTED = [("qt-private", "app/cli/main.cpp", 1), ("qt-private", "ui/src/chart.cpp", 2),
            ("qt-private", "ui/src/chart.cpp", 3), ("qt-private", "ui/src/chart.cpp", 5)]


def load_lint(source_root):
    spec = importlib.util.spec_from_file_location("lint", source_root / "scripts" / "lint.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    source_root = pathlib.Path(sys.argv[1]).resolve()
    lint = load_lint(source_root)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for rel, text in PLANTED.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        found = sorted(lint.qt_private_findings(root))
        if found != EXPECTED:
            failures.append(f"planted sites: found {found}, expected {EXPECTED}")
        # The whole lint fails on them: no qt-private site is ever listed as known.
        (root / "scripts").mkdir()
        (root / "scripts" / "lint_known.txt").write_text("", encoding="utf-8")
        sys.argv = ["lint.py", str(root)]
        if lint.main() != 1:
            failures.append("lint.py passed a tree with private Qt sites")
    in_tree = lint.qt_private_findings(source_root)
    if in_tree:
        failures.append(f"the source tree reaches private Qt: {in_tree}")
    for f in failures:
        print("FAIL:", f)
    print("test_lint_qt_private:", "failed" if failures else "4 planted sites found, none in the tree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
