#!/usr/bin/env python3
# bench_published's `line` cases (bench/published/cases.json): a published table whose rows lie on one
# straight line is compared as its fixed bytes and its bytes per token. Checks the published side's
# arithmetic on the real cases, that the planner's side is its own line at those contexts, and that a
# table which is not one line, or a malformed case, is a clear error (exit 2 with a sentence).
#   check_published_bench.py BENCH_PUBLISHED CASES_JSON
import json, os, re, subprocess, sys, tempfile

bench, cases_path = sys.argv[1], sys.argv[2]
cases = json.load(open(cases_path))
tmp = tempfile.mkdtemp(prefix="published-bench-")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(doc, name):
    path = os.path.join(tmp, name + ".json")
    json.dump(doc, open(path, "w"))
    out = os.path.join(tmp, name + ".md")
    p = subprocess.run([bench, "--cases", path, "--out", out], capture_output=True, text=True, timeout=300)
    return p, (open(out).read() if p.returncode == 0 else "")


def row(report, case_id):
    for line in report.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 6 and cells[1] == case_id:
            return cells
    return None


def case(case_id):
    return next(c for c in cases["cases"] if c["id"] == case_id)


per_token_id = "unsloth llama-3.1-8b qlora max-context line: bytes per token"
fixed_id = "unsloth llama-3.1-8b qlora max-context line: fixed bytes"
line_case = case(per_token_id)
rows = line_case["line"]["rows"]
(m0, c0), (m1, c1) = rows[0], rows[-1]
unit = line_case["line"]["unit_bytes"]
published_per_token = unit * (m1 - m0) / (c1 - c0)
published_fixed = m0 * unit - published_per_token * c0

# The published side: the line through the first and last rows, 227.5 kB per token and 7.91 GB.
p, report = run({"cases": [line_case, case(fixed_id)]}, "line")
check(p.returncode == 0, f"the real line cases run (exit {p.returncode}: {p.stderr.strip()})")
r = row(report, per_token_id)
check(r is not None and r[4] == "%.1f kB per token" % (published_per_token / 1e3) == "227.5 kB per token",
      f"published bytes per token: {r}")
f = row(report, fixed_id)
check(f is not None and f[4] == "%.2f GB at no context" % (published_fixed / 1e9) == "7.91 GB at no context",
      f"published fixed bytes: {f}")

# The planner's side: the same setup as peak cases at the first and last contexts; its least-squares
# line over all seven rows runs between them (a peak that moves between phases bends it only a little).
peaks = []
for ctx in (c0, c1):
    peak = {k: v for k, v in line_case.items() if k not in ("kind", "line", "line_part")}
    peak.update(id=f"peak at {ctx}", measured_bytes=1e12, setup=dict(line_case["setup"], seq_len=ctx))
    peaks.append(peak)
p, report = run({"cases": peaks}, "peaks")
check(p.returncode == 0, f"peak cases run (exit {p.returncode}: {p.stderr.strip()})")
gb = [float(row(report, c["id"])[5].split()[0]) * 1e9 for c in peaks] if p.returncode == 0 else [0, 1]
two_point = (gb[1] - gb[0]) / (c1 - c0)
predicted = float(r[5].split()[0]) * 1e3 if r else 0
check(abs(predicted - two_point) <= 0.02 * two_point,
      f"the planner's bytes per token {predicted:.0f} within 2 % of its slope between the end rows {two_point:.0f}")

# Hostile tables: each one exit 2 with a sentence naming the case, nothing written.
def broken(change, expect):
    bad = json.loads(json.dumps(line_case))
    change(bad)
    p, _ = run({"cases": [bad]}, "bad")
    check(p.returncode == 2 and re.search(expect, p.stderr) and "Traceback" not in p.stderr,
          f"expected exit 2 /{expect}/, got {p.returncode}: {p.stderr.strip()}")


broken(lambda c: c["line"]["rows"][3].__setitem__(1, rows[3][1] + 500), r"is 50[01] tokens off the line .*not one line")
broken(lambda c: c["line"].__setitem__("rows", rows[:2]), r"at least three \[memory, context\] rows")
broken(lambda c: c.__setitem__("line_part", "slope"), r"line_part is 'slope' \(fixed or per_token\)")
broken(lambda c: c.__setitem__("kind", "curve"), r"kind is 'curve' \(peak or line\)")
broken(lambda c: c["line"].__setitem__("unit_bytes", -1), r"unit_bytes > 0")
broken(lambda c: c["line"]["rows"].__setitem__(2, "8 GB"), r"bench_published: ")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "bench_published line cases: all checks pass")
sys.exit(1 if failures else 0)
