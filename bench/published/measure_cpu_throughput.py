#!/usr/bin/env python3
"""Measures wingspan-train's tokens/s on this CPU for the six cells of throughput.json's
`this-cpu` cases (the built-in default model and a SmolLM2-135M-class model; full, LoRA and
QLoRA; fp32) and writes them back into the cases, with the sgemm peak the `this-cpu` machine
profile uses, so bench_throughput compares the planner with them.

The machine is shared: every round runs all six cells once (round-robin, so a stretch of
background load hits every cell alike), measures the sgemm peak in the same round, and records
the 1-minute load average before and after each run. Background load only ever slows a run (the
same run varied up to 50x here), so a cell's figure is its fastest run (each run's median step, the
first, warm-up step left out) and the peak is the fastest round's sgemm: the least disturbed
measurements. The cases keep every run and the load.

    measure_cpu_throughput.py --bin build/bin/wingspan-train [--rounds 3] [--steps 4]
                              [--cases bench/published/throughput.json] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "trainer"))
import bench_trainer as bt  # noqa: E402  (run_wingspan, matmul_peaks, SMOLLM2_135M)

# (case-id arch, model dir or None for the built-in default, seq, batch): the shapes bench_trainer.py uses.
ARCHS = [("default", None, 128, 4), ("smollm2-135m", "smollm2-135m", 256, 4)]
METHODS = ["full", "lora", "qlora"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the wingspan-train binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4, help="steps per run; the first is a warm-up and left out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--cases", default=os.path.join(HERE, "throughput.json"))
    ap.add_argument("--json", help="write every run here")
    ap.add_argument("--no-update", action="store_true", help="measure only; leave the cases as they are")
    ap.add_argument("--apply", help="measure nothing: write the runs of an earlier --json file into the cases")
    a = ap.parse_args()
    if a.apply:
        with open(a.apply) as f:
            saved = json.load(f)
        update_cases(a, saved["runs"], saved["sgemm_gflops"], saved["started"], saved["finished"])
        return

    tmp = tempfile.mkdtemp(prefix="wingspan-speed-")
    smol = os.path.join(tmp, "smollm2-135m")
    os.makedirs(smol)
    with open(os.path.join(smol, "config.json"), "w") as f:
        json.dump(bt.SMOLLM2_135M, f)

    runs = []      # one dict per run
    peaks = []     # sgemm GFLOP/s per round
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for rnd in range(a.rounds):
        peak = bt.matmul_peaks(a.threads)
        peaks.append(max(peak.get("fp32_onednn", 0), peak.get("fp32_torch", 0)))
        print(f"round {rnd + 1}/{a.rounds}: sgemm {peaks[-1]:.1f} GFLOP/s (load {os.getloadavg()[0]:.1f})", flush=True)
        for arch, model, seq, batch in ARCHS:
            for method in METHODS:
                before = os.getloadavg()[0]
                r = bt.run_wingspan(a.bin, smol if model else None, method, "fp32", seq, batch, a.steps, a.threads,
                                    a.rank)
                tps = seq * batch / bt.run_median(r["step_times"])
                runs.append({"round": rnd + 1, "arch": arch, "method": method, "seq": seq, "batch": batch,
                             "tokens_per_s": tps, "step_times": r["step_times"],
                             "load_before": before, "load_after": os.getloadavg()[0]})
                print(f"  {arch:>13} {method:>5}: {tps:9.1f} tok/s (load {before:.1f} -> {runs[-1]['load_after']:.1f})",
                      flush=True)
    finished = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "sgemm_gflops": peaks, "started": started, "finished": finished}, f, indent=1)
    if not a.no_update:
        update_cases(a, runs, peaks, started, finished)


def update_cases(a, runs, peaks, started, finished):
    """Prints each cell's fastest run and spread and writes them (and the sgemm peak) into the cases."""
    cells = {}
    for arch, _, seq, batch in ARCHS:
        for method in METHODS:
            mine = [r for r in runs if r["arch"] == arch and r["method"] == method]
            tps = [r["tokens_per_s"] for r in mine]
            loads = [x for r in mine for x in (r["load_before"], r["load_after"])]
            cells[(arch, method)] = {"fastest": max(tps), "all": tps, "load": (min(loads), max(loads))}
            print(f"{arch:>13} {method:>5}: fastest {max(tps):9.1f} tok/s, median {statistics.median(tps):9.1f} over {len(tps)} runs "
                  f"({', '.join(f'{t:.1f}' for t in tps)}); load {min(loads):.1f}-{max(loads):.1f}")
    peak = max(peaks)
    print(f"sgemm peak: fastest {peak:.1f} GFLOP/s over rounds ({', '.join(f'{p:.1f}' for p in peaks)})")

    with open(a.cases) as f:
        doc = json.load(f)
    doc["machines"]["this-cpu"]["tflops_fp32"] = round(peak / 1000, 4)
    doc["machines"]["this-cpu"]["sources"]["tflops_fp32"] = (
        f"measured: oneDNN sgemm 512x1536x1536 on {a.threads} threads, the fastest of the {len(peaks)} rounds of "
        f"measure_cpu_throughput.py ({started})")
    how = (f"our own runs of wingspan-train on this shared 2-core VM, {started} to {finished}: python3 "
           f"bench/published/measure_cpu_throughput.py --bin build/bin/wingspan-train --rounds {len(peaks)} "
           f"--steps {a.steps}; rounds run all six cells round-robin; each run's median step (the first left out), "
           f"the fastest run (load only slows a run)")
    for c in doc["cases"]:
        if c.get("machine") != "this-cpu":
            continue
        arch = "default" if " default " in c["id"] else "smollm2-135m"
        method = c["setup"]["method"]
        cell = cells[(arch, method)]
        c["measured_tokens_per_s"] = round(cell["fastest"], 1)
        c["measured_text"] = (f"fastest of {len(cell['all'])} runs: {', '.join(f'{t:.1f}' for t in cell['all'])} tok/s; "
                              f"1-minute load average {cell['load'][0]:.1f}-{cell['load'][1]:.1f} on 2 cores")
        c["source"] = how
    with open(a.cases, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"updated the this-cpu cases in {a.cases}")


if __name__ == "__main__":
    main()
