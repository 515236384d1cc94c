#!/usr/bin/env python3
"""Regenerates the README's sample outputs from the wingspan binary, so that none is typed.

Each sample sits between two markers:

    <!-- readme-sample: ARGS [| keep A-B] [| elide A-B] [| console] -->
    ...generated...
    <!-- end readme-sample -->

ARGS are wingspan's arguments (split like a shell's words, no quoting beyond shlex). The
output's lines A..B (1-based) are kept with `keep`; `elide A-B` replaces those lines by "...";
`console` wraps the result in a ```console block headed by the command, else it goes in as is
(a Markdown table). Lines end without trailing spaces.

    scripts/readme_samples.py --wingspan build/bin/wingspan README.md           # rewrite
    scripts/readme_samples.py --wingspan build/bin/wingspan --check README.md   # 1 when stale
"""
import argparse
import re
import shlex
import subprocess
import sys

MARKER = re.compile(r"<!-- readme-sample: (.*?) -->\n(.*?)<!-- end readme-sample -->\n", re.S)


def line_range(spec, what):
    m = re.fullmatch(r"(\d+)-(\d+)", spec.strip())
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < int(m.group(1)):
        sys.exit(f"readme_samples: '{what} {spec}' needs A-B with 1 <= A <= B")
    return int(m.group(1)), int(m.group(2))


def generate(wingspan, spec):
    parts = [p.strip() for p in spec.split("|")]
    args = shlex.split(parts[0])
    run = subprocess.run([wingspan] + args, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        sys.exit(f"readme_samples: wingspan {parts[0]} exited {run.returncode}: {run.stderr.strip()}")
    lines = [l.rstrip() for l in run.stdout.splitlines()]
    console = False
    for p in parts[1:]:
        word, _, rest = p.partition(" ")
        if word == "keep":
            a, b = line_range(rest, word)
            lines = lines[a - 1:b]
        elif word == "elide":
            a, b = line_range(rest, word)
            lines = lines[:a - 1] + ["..."] + lines[b:]
        elif word == "console":
            console = True
        else:
            sys.exit(f"readme_samples: unknown step '{p}' (keep, elide, console)")
    while lines and not lines[-1]:
        lines.pop()
    body = "\n".join(lines) + "\n"
    if console:
        body = f"```console\n$ build/bin/wingspan {parts[0]}\n{body}```\n"
    return body


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wingspan", required=True, help="the wingspan binary")
    ap.add_argument("--check", action="store_true", help="exit 1 (and say where) when a sample is stale")
    ap.add_argument("readme")
    o = ap.parse_args()
    with open(o.readme, encoding="utf-8") as f:
        text = f.read()
    stale = []

    def replace(m):
        fresh = generate(o.wingspan, m.group(1))
        if fresh != m.group(2):
            stale.append(m.group(1))
        return f"<!-- readme-sample: {m.group(1)} -->\n{fresh}<!-- end readme-sample -->\n"

    new_text, count = MARKER.subn(replace, text)
    if count == 0:
        sys.exit(f"readme_samples: no <!-- readme-sample: ... --> marker in {o.readme}")
    if o.check:
        for s in stale:
            print(f"stale sample in {o.readme}: wingspan {s} (run scripts/readme_samples.py to regenerate)")
        print(f"{count} samples, {len(stale)} stale")
        return 1 if stale else 0
    with open(o.readme, "w", encoding="utf-8") as f:
        f.write(new_text)
    print(f"{count} samples, {len(stale)} regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
