#!/usr/bin/env python3
"""Two wingspan-train binaries (say, before and after a kernel change) on the same cell,
alternating A B A B so load on shared cores hits both; prints each run's median step
(first step left out), the medians, the per-pair speed-up and the load average.

    ab_binaries.py --a OLD --b NEW --cell smollm2-135m:bf16-mixed:qlora [--seq 256 --batch 4]
                   [--steps 3] [--repeats 3] [--threads 2]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_trainer import SMOLLM2_135M, run_median, run_wingspan  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="the first binary (e.g. before a change)")
    ap.add_argument("--b", required=True, help="the second binary")
    ap.add_argument("--cell", required=True, help="ARCH:PRECISION:METHOD, ARCH default or smollm2-135m")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rank", type=int, default=8)
    a = ap.parse_args()
    parts = a.cell.split(":")
    if len(parts) != 3 or parts[0] not in ("default", "smollm2-135m"):
        print(f"ab_binaries: bad cell {a.cell!r} (want ARCH:PRECISION:METHOD)", file=sys.stderr)
        sys.exit(2)
    arch, precision, method = parts
    model_dir = None
    if arch != "default":
        model_dir = tempfile.mkdtemp(prefix="wingspan-ab-")
        with open(os.path.join(model_dir, "config.json"), "w") as f:
            json.dump(SMOLLM2_135M, f)
    times = {"a": [], "b": []}
    for rep in range(a.repeats):
        for key in ("a", "b"):
            run = run_wingspan(getattr(a, key), model_dir, method, precision, a.seq, a.batch, a.steps, a.threads, a.rank)
            times[key].append(run_median(run["step_times"]))
            print(f"round {rep + 1} {key}: {times[key][-1]:.2f} s/step, loss {run['losses'][-1]:.5f},"
                  f" allocated peak {run['peak_bytes']} B, load {os.getloadavg()[0]:.1f}", flush=True)
    speedups = [ta / tb for ta, tb in zip(times["a"], times["b"])]
    print(f"{a.cell} {a.seq}x{a.batch}: a {statistics.median(times['a']):.2f} s/step"
          f" ({min(times['a']):.2f}-{max(times['a']):.2f}), b {statistics.median(times['b']):.2f} s/step"
          f" ({min(times['b']):.2f}-{max(times['b']):.2f}); b is x{statistics.median(speedups):.3f} faster"
          f" (pairs {min(speedups):.3f}-{max(speedups):.3f}); load {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
