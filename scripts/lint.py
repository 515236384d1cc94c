#!/usr/bin/env python3
"""Error and I/O hygiene (issue 27 item 7), checked on every source file of the programs.

Fails on
  - an empty catch block: `catch (...) {}` or a catch whose body is only blank lines (a failure
    swallowed without a word; use a non-throwing look-up or say what was lost);
  - `std::ofstream` outside core's checked writers (core/src/io/safe_file.cpp): a run-folder or
    export write must be atomic or checked;
  - `json::parse(` outside core's bounded reader (core/src/io/json_input.cpp): untrusted JSON goes
    through read_untrusted_json_file / parse_untrusted_json (size and depth bounded);
  - qt-private (issue 27 item 5), in ui/ and app/: a string naming a private class ("...Private",
    as in a className() comparison that finds Qt's QBarSetPrivate) or an include of a private
    header (`_p.h`, `private/`). Qt's private classes change between any two releases; the
    programs use Qt's public API only. No site is listed as known: any one fails.

With them, scripts/lint_structure.py's shape rules: a file over 600 lines, a function over 150, an
include that runs back up the layers of ui/ or trainer/.

The sites that predate this check are listed in scripts/lint_known.txt with how many each file
has: a file may only go down. A new site anywhere fails, naming the file, line and rule; a
file that has fewer than listed asks for the list to be lowered (so the debt never grows back).
Usage: scripts/lint.py [SOURCE_ROOT]   (exit 0 clean, 1 findings)
"""
import pathlib
import re
import sys

# lint_structure.py sits beside this file; found also when another script loads this one by path.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import lint_structure  # noqa: E402

FOLDERS = ("core", "ui", "app", "trainer", "tokenizer")
ALLOWED = {
    "ofstream": {"core/src/io/safe_file.cpp"},
    "json-parse": {"core/src/io/json_input.cpp"},
    "empty-catch": set(),
}
EMPTY_CATCH = re.compile(r"catch\s*\([^)]*\)\s*\{\s*\}", re.S)
OFSTREAM = re.compile(r"\bstd::ofstream\b")
JSON_PARSE = re.compile(r"\bjson::parse\(")
QT_PRIVATE_FOLDERS = ("ui", "app")
QT_PRIVATE_NAME = re.compile(r'"[^"\n]*Private"')
QT_PRIVATE_INCLUDE = re.compile(r'#\s*include\s*[<"][^>"\n]*(?:_p\.h|\bprivate/[^>"\n]*)[>"]')


def strip_comments(text):
    """Comments and string literals blanked (line breaks kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i + 2)
            end = text.find(")" + text[i + 2:k] + '"', k) if k >= 0 else -1
            j = n if end < 0 else end + (k - i - 2) + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"))):
            # A string or character literal ('{', '"'); a ' after a digit or a letter separates digits.
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            closed = j < n and text[j] == c
            out.append(c + "".join(ch if ch == "\n" else " " for ch in text[i + 1:j]) + (c if closed else ""))
            i = j + 1 if closed else j   # an unclosed literal keeps its line break
        else:
            out.append(c)
            i += 1
    return "".join(out)


def qt_private_findings(root):
    """("qt-private", file, line) for each private Qt class name in a string or private include."""
    found = []
    for folder in QT_PRIVATE_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h") or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            # The same text with comments blanked (and strings emptied): a match whose first
            # character survives there is code, not a comment that mentions the class.
            code = strip_comments(text)
            for pattern in (QT_PRIVATE_NAME, QT_PRIVATE_INCLUDE):
                for m in pattern.finditer(text):
                    if code[m.start()] == text[m.start()]:
                        found.append(("qt-private", path.relative_to(root).as_posix(), text.count("\n", 0, m.start()) + 1))
    return sorted(found)


def findings(root):
    found = qt_private_findings(root)
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h") or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            code = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
            for rule, pattern in (("empty-catch", EMPTY_CATCH), ("ofstream", OFSTREAM), ("json-parse", JSON_PARSE)):
                if rel in ALLOWED[rule]:
                    continue
                for m in pattern.finditer(code):
                    found.append((rule, rel, code.count("\n", 0, m.start()) + 1))
    return found


def structure_findings(root):
    """issue 27's shape rules (scripts/lint_structure.py): file and function length, include order."""
    return (lint_structure.file_length_findings(root)
            + lint_structure.function_length_findings(root, strip_comments)
            + lint_structure.include_order_findings(root, strip_comments))


def known(root):
    table = {}
    listing = root / "scripts" / "lint_known.txt"
    for line in listing.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            rule, rel, count = line.split()
            table[(rule, rel)] = int(count)
    return table


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = findings(root) + structure_findings(root)
    debt = known(root)
    counts = {}
    for rule, rel, _ in found:
        counts[(rule, rel)] = counts.get((rule, rel), 0) + 1
    bad = False
    for (rule, rel), n in sorted(counts.items()):
        allowed = debt.get((rule, rel), 0)
        if n > allowed:
            bad = True
            places = ", ".join(str(place) for r, f, place in found if (r, f) == (rule, rel))
            print(f"{rel}: {n} {rule} (at most {allowed} listed in scripts/lint_known.txt): at {places}")
    for (rule, rel), allowed in sorted(debt.items()):
        if counts.get((rule, rel), 0) < allowed:
            bad = True
            print(f"{rel}: {counts.get((rule, rel), 0)} {rule}, fewer than the {allowed} listed: "
                  "lower scripts/lint_known.txt so none comes back")
    total = sum(debt.values())
    print(f"lint: {len(found)} known sites ({total} listed), "
          + ("findings above" if bad else "nothing new"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
