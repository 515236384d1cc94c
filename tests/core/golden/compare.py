#!/usr/bin/env python3
# Compares two dump.py outputs field by field: prints the setups that differ (the first N, default
# 5) and the count. Exit status 1 when any differs.
import sys, json
a = open(sys.argv[1]).read().split("\n====\n"); b = open(sys.argv[2]).read().split("\n====\n")
show = int(sys.argv[3]) if len(sys.argv) > 3 else 5
diff = 0
for x, y in zip(a, b):
    hx, rx, bx = x.split("\n", 2); hy, ry, by = y.split("\n", 2)
    try: jx = json.loads(bx); jy = json.loads(by)
    except Exception: jx, jy = bx, by
    if jx != jy or rx != ry or hx != hy:
        diff += 1
        if diff <= show: print("DIFF:", hx)
print("cases", len(a), "differ", diff)
sys.exit(1 if diff or len(a) != len(b) else 0)
