#!/usr/bin/env python3
"""Throughput benchmark of wingspan-train against the same model trained in plain PyTorch
(reference_train.py, Debian's python3-torch; bf16-mixed there is eager torch.autocast), in one
invocation, same threads, same shapes.

For the built-in default architecture and a SmolLM2-135M-class architecture (random weights),
each method (full, LoRA, QLoRA) and precision (fp32, bf16-mixed), it runs the two trainers
alternately (A B A B ..., so background load on shared cores hits both) and reports: tokens/s
of both (median over repeats of each run's median step) with the spread (min-max over repeats),
the ratio, achieved GFLOP/s (model FLOPs per token x tokens/s) against the matmul peak measured
in the same invocation (fp32 and bf16, best of libtorch's and oneDNN's kernels), peak RSS of both
processes and wingspan-train's peak allocated bytes.

    bench_trainer.py --bin build/bin/wingspan-train [--threads 2] [--steps 3] [--repeats 2]
                     [--cells smollm2-135m:bf16-mixed:full,...] [--skip-reference qlora]
                     [--markdown bench/results/trainer.md] [--json out.json]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SMOLLM2_135M = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
    "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
    "num_key_value_heads": 3, "vocab_size": 49152, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "tie_word_embeddings": True,
    "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
}


def flops_per_token(c, method, seq, rank):
    """Model FLOPs of one training token (matmuls only; causal attention computed in full)."""
    h, L, i, v = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    d = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * d, c.get("num_key_value_heads", c["num_attention_heads"]) * d
    linear = L * (h * q + 2 * h * kv + q * h + 3 * h * i)
    mm = linear + v * h                                     # + the head
    attn = 4 * L * seq * q                                  # QK^T and AV, forward
    if method == "full":
        return 6 * mm + 3 * attn
    adapters = L * rank * ((h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h))
    return 4 * mm + 6 * adapters + 3 * attn                 # no weight gradients for the base


def run_wingspan(binary, model_dir, method, precision, seq, batch, steps, threads, rank):
    args = [binary, "--method", method, "--precision", precision, "--seq", str(seq), "--batch", str(batch),
            "--steps", str(steps), "--threads", str(threads), "--eval-every", "0", "--eval-fraction", "0",
            "--sample-tokens", "0", "--rank", str(rank), "--sample-every-ms", "100"]
    if model_dir:
        args += ["--model", model_dir]
    p = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    err = [e for e in events if e["event"] == "error"]
    if p.returncode != 0 or err:
        raise RuntimeError(f"wingspan-train failed: {err or p.stderr[-2000:]}")
    hello = next(e for e in events if e["event"] == "hello")
    steps_ev = [e for e in events if e["event"] == "step"]
    done = events[-1]
    return {"step_times": [e["step_time_s"] for e in steps_ev], "losses": [e["loss"] for e in steps_ev],
            "rss_peak_bytes": done["rss_peak_bytes"], "peak_bytes": done["peak_bytes"],
            "config": hello["architecture"], "params": hello["params"]}


# Which implementation the ratios compare to: "pytorch" (reference_train.py, Debian's torch 1.13, plain
# nn.Modules) or "transformers" (peer_transformers.py: transformers + PEFT on the pinned torch 2.x of
# the frameworks venv, the peer a user would pick). Set by --reference.
REFERENCE = {"script": "reference_train.py", "python": None, "long": "PyTorch eager", "short": "PyTorch"}
PEERS = {
    "pytorch": {"script": "reference_train.py", "long": "PyTorch eager", "short": "PyTorch"},
    "transformers": {"script": "peer_transformers.py", "long": "transformers+PEFT (torch 2.x, SDPA, autocast)",
                     "short": "transformers+PEFT"},
}


def run_reference(config_path, method, precision, seq, batch, steps, threads, rank):
    args = [REFERENCE["python"] or PY, os.path.join(HERE, REFERENCE["script"]), "--config", config_path, "--method", method,
            "--precision", precision, "--seq", str(seq), "--batch", str(batch), "--steps", str(steps),
            "--threads", str(threads), "--rank", str(rank), "--alpha", str(2 * rank)]
    p = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    if p.returncode != 0:
        raise RuntimeError(f"reference failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

PEAK_SCRIPT = r"""
import ctypes, json, sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
M, K, N = 512, 1536, 1536
def best(f, reps=8):
    f(); ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return 2 * M * K * N / min(ts) / 1e9
out = {}
for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
    a, b = torch.randn(M, K).to(dt), torch.randn(K, N).to(dt)
    out[name + "_torch"] = best(lambda: a @ b)
try:
    lib = ctypes.CDLL("libdnnl.so.2")
    T = [ctypes.c_char, ctypes.c_char] + [ctypes.c_int64] * 3 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int64,
         ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p, ctypes.c_int64]
    for name, fn, dt in (("fp32", "dnnl_sgemm", torch.float32), ("bf16", "dnnl_gemm_bf16bf16f32", torch.bfloat16)):
        f = getattr(lib, fn); f.argtypes = T; f.restype = ctypes.c_int
        a, b, c = torch.randn(M, K).to(dt), torch.randn(K, N).to(dt), torch.empty(M, N)
        out[name + "_onednn"] = best(lambda: f(b"N", b"N", M, N, K, 1.0, a.data_ptr(), K, b.data_ptr(), N, 0.0,
                                               c.data_ptr(), N))
except OSError:
    pass
print(json.dumps(out))
"""


def matmul_peaks(threads):
    """GFLOP/s of a 512x1536x1536 product, fp32 and bf16, libtorch's matmul and oneDNN's gemm."""
    p = subprocess.run([PY, "-c", PEAK_SCRIPT, str(threads)], capture_output=True, text=True,
                       env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    if p.returncode != 0:
        raise RuntimeError(f"matmul peak failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_median(times):
    """A run's median step, the first (warm-up) step left out."""
    return statistics.median(times[1:] if len(times) > 1 else times)


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {k: k in flags for k in ("avx2", "avx512f", "avx512_bf16", "amx_bf16")}
    except OSError:
        pass
    return {}


def bf16_path(binary):
    """The CPU bf16 path the trainer takes (its `devices` answer): "hardware" or "emulated"."""
    try:
        out = subprocess.run([binary, "devices"], capture_output=True, text=True, timeout=60).stdout
        for d in json.loads(out).get("devices", []):
            if d.get("type") == "cpu":
                return f"{d.get('bf16_path', '?')} (bf16 instructions: {d.get('bf16_isa', '?')})"
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return "unknown"


def parse_cells(a):
    """(arch, precision, [methods]) groups, in run order: --cells ARCH:PRECISION:METHOD,... or the
    product of --archs, --precisions and --methods."""
    if a.cells:
        groups = {}
        for cell in a.cells.split(","):
            parts = cell.strip().split(":")
            if len(parts) != 3:
                print(f"bench_trainer: bad cell {cell!r} (want ARCH:PRECISION:METHOD)", file=sys.stderr)
                sys.exit(2)
            groups.setdefault((parts[0], parts[1]), []).append(parts[2])
        out = [(arch, prec, methods) for (arch, prec), methods in groups.items()]
    else:
        out = [(arch, prec, a.methods.split(",")) for arch in a.archs.split(",") for prec in a.precisions.split(",")]
    for arch, prec, methods in out:
        bad = ([arch] if arch not in ARCHS else []) + ([prec] if prec not in ("fp32", "bf16-mixed") else []) + \
              [m for m in methods if m not in ("full", "lora", "qlora")]
        if bad:
            print(f"bench_trainer: unknown {', '.join(bad)} (archs: {', '.join(ARCHS)}; precisions: fp32,"
                  f" bf16-mixed; methods: full, lora, qlora)", file=sys.stderr)
            sys.exit(2)
    return out


ARCHS = ("default", "smollm2-135m")


def main():
    ap = argparse.ArgumentParser(
        description="wingspan-train against PyTorch eager (reference_train.py) on the same model, shape and threads,"
                    " alternating runs (A B A B) so shared-core load hits both.")
    ap.add_argument("--bin", required=True, help="the wingspan-train binary")
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 2))
    ap.add_argument("--steps", type=int, default=3, help="steps per run; the first is a warm-up and left out")
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--archs", default="default,smollm2-135m", help=f"models, from: {', '.join(ARCHS)}")
    ap.add_argument("--methods", default="full,lora,qlora")
    ap.add_argument("--precisions", default="fp32,bf16-mixed")
    ap.add_argument("--cells", help="only these cells, ARCH:PRECISION:METHOD,... (overrides --archs/--precisions/--methods);"
                                    " e.g. smollm2-135m:bf16-mixed:full,smollm2-135m:bf16-mixed:lora")
    ap.add_argument("--skip-reference", default="",
                    help="methods whose PyTorch run is left out (e.g. qlora: its row then compares to PyTorch's LoRA"
                         " of the same round, which is what the issue's QLoRA target uses)")
    ap.add_argument("--seq-135m", type=int, default=256)
    ap.add_argument("--batch-135m", type=int, default=4)
    ap.add_argument("--seq-default", type=int, default=128)
    ap.add_argument("--batch-default", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs of each implementation (A B A B)")
    ap.add_argument("--reference", choices=sorted(PEERS), default="pytorch",
                    help="what the ratios compare to: pytorch (reference_train.py on Debian's torch) or transformers"
                         " (peer_transformers.py: transformers + PEFT on the frameworks venv's torch 2.x)")
    ap.add_argument("--peer-python", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), "build",
                                                          "venv-frameworks", "bin", "python"),
                    help="the interpreter of --reference transformers (default: build/venv-frameworks)")
    ap.add_argument("--json", help="write all measurements here")
    ap.add_argument("--markdown", help="write the results table here")
    a = ap.parse_args()
    REFERENCE.update(PEERS[a.reference])
    if a.reference == "transformers":
        REFERENCE["python"] = a.peer_python
        if not os.path.exists(a.peer_python):
            sys.exit(f"bench_trainer.py: {a.peer_python} is missing; install it with `scripts/venv.sh frameworks`")
    groups = parse_cells(a)
    skip_ref = set(m for m in a.skip_reference.split(",") if m)

    tmp = tempfile.mkdtemp(prefix="wingspan-bench-")
    peaks_before = matmul_peaks(a.threads)
    print(f"matmul peak (GFLOP/s): {json.dumps({k: round(v, 1) for k, v in peaks_before.items()})}", flush=True)
    rows = []
    for arch, precision, methods in groups:
        if arch == "default":
            model_dir, seq, batch = None, a.seq_default, a.batch_default
        else:
            model_dir = os.path.join(tmp, arch)
            os.makedirs(model_dir, exist_ok=True)
            with open(os.path.join(model_dir, "config.json"), "w") as f:
                json.dump(SMOLLM2_135M, f)
            seq, batch = a.seq_135m, a.batch_135m
        cfg_path = os.path.join(tmp, f"{arch}-config.json")
        ours = {m: [] for m in methods}
        ref = {m: [] for m in methods}
        load = {m: [] for m in methods}
        # Rounds: in each, every method's wingspan run directly followed by its PyTorch run, so a
        # pair sees one stretch of background load, and QLoRA sits next to PyTorch's LoRA.
        for rep in range(a.repeats):
            for method in methods:
                load[method].append(os.getloadavg()[0])
                ours[method].append(run_wingspan(a.bin, model_dir, method, precision, seq, batch, a.steps,
                                                 a.threads, a.rank))
                if not os.path.exists(cfg_path):
                    with open(cfg_path, "w") as f:
                        json.dump(ours[method][0]["config"], f)
                if method not in skip_ref:
                    ref[method].append(run_reference(cfg_path, method, precision, seq, batch, a.steps, a.threads,
                                                     a.rank))
                load[method].append(os.getloadavg()[0])
                print(f"  round {rep + 1}/{a.repeats} {arch} {precision} {method}: wingspan"
                      f" {seq * batch / run_median(ours[method][-1]['step_times']):.1f} tok/s" +
                      (f", {REFERENCE['short']} {seq * batch / run_median(ref[method][-1]['step_times']):.1f} tok/s"
                       if ref[method] and len(ref[method]) == rep + 1 else "") +
                      f" (load {load[method][-1]:.1f})", flush=True)
        for method in methods:
            row = make_row(a, arch, precision, method, seq, batch, ours[method], ref[method],
                           ref.get("lora", []), load[method])
            rows.append(row)
            write_outputs(a, rows, peaks_before, {})
            print_row(row)
    write_outputs(a, rows, peaks_before, matmul_peaks(a.threads))


def make_row(a, arch, precision, method, seq, batch, ours_runs, ref_runs, ref_lora_runs, load):
    tokens = seq * batch
    fpt = flops_per_token(ours_runs[0]["config"], method, seq, a.rank)
    ours_tps = [tokens / run_median(r["step_times"]) for r in ours_runs]
    row = {"arch": arch, "method": method, "precision": precision, "seq": seq, "batch": batch,
           "threads": a.threads, "repeats": a.repeats, "steps": a.steps, "load_average_1m": load,
           "tokens_per_s": statistics.median(ours_tps), "tokens_per_s_all": ours_tps,
           "rss_peak_bytes": max(r["rss_peak_bytes"] for r in ours_runs),
           "allocated_peak_bytes": ours_runs[0]["peak_bytes"], "flops_per_token": fpt,
           "trainable": ours_runs[0]["params"]["trainable"], "final_loss": ours_runs[0]["losses"][-1]}
    row["gflops"] = fpt * row["tokens_per_s"] / 1e9
    if ref_runs:
        ref_tps = [tokens / run_median(r["step_times"]) for r in ref_runs]
        ratios = [o / r for o, r in zip(ours_tps, ref_tps)]   # per pair: one stretch of background load
        row.update({"ref_tokens_per_s": statistics.median(ref_tps), "ref_tokens_per_s_all": ref_tps,
                    "speed_ratio": statistics.median(ratios), "speed_ratio_all": ratios,
                    "ref_rss_peak_bytes": max(r["rss_peak_bytes"] for r in ref_runs),
                    "ref_trainable": ref_runs[0]["trainable"], "ref_final_loss": ref_runs[0]["losses"][-1]})
        row["ref_gflops"] = fpt * row["ref_tokens_per_s"] / 1e9
        row["rss_ratio"] = row["rss_peak_bytes"] / row["ref_rss_peak_bytes"]
    if method == "qlora" and ref_lora_runs:
        lora_tps = [tokens / run_median(r["step_times"]) for r in ref_lora_runs]
        r2 = [o / r for o, r in zip(ours_tps, lora_tps)]
        row.update({"ref_lora_tokens_per_s": statistics.median(lora_tps),
                    "ratio_to_ref_lora": statistics.median(r2), "ratio_to_ref_lora_all": r2})
    return row


def print_row(row):
    line = (f"{row['arch']:>13} {row['precision']:>10} {row['method']:>5}: wingspan {row['tokens_per_s']:8.1f} tok/s"
            f" {row['gflops']:6.1f} GFLOP/s")
    if "ref_tokens_per_s" in row:
        rs = row["speed_ratio_all"]
        line += (f" | {REFERENCE['short']} {row['ref_tokens_per_s']:8.1f} tok/s {row['ref_gflops']:6.1f} GFLOP/s"
                 f" | x{row['speed_ratio']:.2f} ({min(rs):.2f}-{max(rs):.2f})"
                 f" | RSS {row['rss_peak_bytes'] / 1e6:6.0f} MB vs {row['ref_rss_peak_bytes'] / 1e6:6.0f} MB")
    if "ratio_to_ref_lora" in row:
        line += f" | x{row['ratio_to_ref_lora']:.2f} PyTorch's LoRA"
    print(line, flush=True)


def write_outputs(a, rows, peaks_before, peaks_after):
    """The JSON and Markdown of the cells measured so far (rewritten after each cell)."""
    peaks = {k: max(peaks_before.get(k, 0), peaks_after.get(k, 0)) for k in set(peaks_before) | set(peaks_after)}
    peak_fp32 = max(v for k, v in peaks.items() if k.startswith("fp32"))
    peak_bf16 = max(v for k, v in peaks.items() if k.startswith("bf16"))
    for row in rows:
        row["pct_of_fp32_peak"] = 100 * row["gflops"] / peak_fp32
        row["pct_of_bf16_peak"] = 100 * row["gflops"] / peak_bf16
    if peaks_after:
        print(f"matmul peak after (GFLOP/s): {json.dumps({k: round(v, 1) for k, v in peaks_after.items()})}")
    meta = {"threads": a.threads, "steps": a.steps, "repeats": a.repeats, "cpu_flags": cpu_flags(),
            "bf16_path": bf16_path(a.bin),
            "machine": platform.processor() or platform.machine(), "peaks_before": peaks_before,
            "peaks_after": peaks_after, "peaks": peaks, "peak_fp32": peak_fp32, "peak_bf16": peak_bf16,
            "load_average": os.getloadavg(), "complete": bool(peaks_after),
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=2)
    if a.markdown:
        write_markdown(a.markdown, meta, rows, " ".join(sys.argv))


def spread(values, fmt="{:.0f}"):
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}"


def targets(rows):
    """The issue's 'done when' lines, from the 135M-class bf16-mixed rows measured."""
    cell = {r["method"]: r for r in rows if r["arch"] == "smollm2-135m" and r["precision"] == "bf16-mixed"}
    out = []
    for m in ("full", "lora"):
        r = cell.get(m)
        if r and "speed_ratio" in r:
            out.append((f"{m} >= 1.3x {REFERENCE['long']} tokens/s",
                        f"x{r['speed_ratio']:.2f} (pairs {spread(r['speed_ratio_all'], '{:.2f}')})",
                        "met" if r["speed_ratio"] >= 1.3 else "NOT met"))
    r = cell.get("qlora")
    if r and "ratio_to_ref_lora" in r:
        out.append(("QLoRA >= 1.1x PyTorch's LoRA", f"x{r['ratio_to_ref_lora']:.2f}"
                    f" (pairs {spread(r['ratio_to_ref_lora_all'], '{:.2f}')})",
                    "met" if r["ratio_to_ref_lora"] >= 1.1 else "NOT met"))
    r = cell.get("full")
    if r:
        out.append(("full >= 50 % of the measured bf16 matmul peak",
                    f"{r['gflops']:.1f} GFLOP/s = {r['pct_of_bf16_peak']:.0f} % of bf16,"
                    f" {r['pct_of_fp32_peak']:.0f} % of fp32", "met" if r["pct_of_bf16_peak"] >= 50 else "NOT met"))
    return out


def write_markdown(path, meta, rows, command):
    mb = lambda b: f"{b / 1e6:.0f}"
    pk = lambda k: meta["peaks"].get(k, 0)
    lines = [
        f"# wingspan-train vs {REFERENCE['long']}: throughput and memory",
        "",
        f"Command: `{command}`.",
        "",
        f"{meta['date_utc']}. {meta['threads']} threads, {meta['steps']} steps per run (first left out),"
        f" {meta['repeats']} alternating rounds (in each, every method's wingspan run then its {REFERENCE['short']} run);"
        f"{'' if meta['complete'] else ' (interrupted: the cells measured so far)'}"
        f" load average (1, 5, 15 min) at the end {', '.join(f'{x:.1f}' for x in meta['load_average'])}"
        " on a shared machine; each row gives the 1-minute load seen around its runs.",
        "CPU flags: " + ", ".join(k + (" yes" if v else " no") for k, v in meta["cpu_flags"].items()) + "."
        f" wingspan-train's bf16 products: {meta.get('bf16_path', 'unknown')} path"
        " (WINGSPAN_CPU_BF16=hardware|emulated picks one).",
        f"Matmul peak measured in this run (512x1536x1536, best of before/after, GFLOP/s):"
        f" fp32 {meta['peak_fp32']:.1f}, bf16 {meta['peak_bf16']:.1f}"
        f" (libtorch fp32 {pk('fp32_torch'):.1f}, oneDNN sgemm {pk('fp32_onednn'):.1f},"
        f" libtorch bf16 {pk('bf16_torch'):.1f}, oneDNN bf16 gemm {pk('bf16_onednn'):.1f}).",
        "",
        "Tokens/s: median over rounds of each run's median step (range over rounds); ratio: median of the per-pair"
        " ratios, with their range. GFLOP/s: model matmul FLOPs per token x tokens/s. RSS: peak resident set of the"
        " process; allocated: wingspan-train's peak of live tensor bytes.",
        "",
        f"| model | precision | method | seq x batch | wingspan tok/s | {REFERENCE['short']} tok/s | ratio (range) |"
        f" wingspan GFLOP/s | % fp32 peak | % bf16 peak | {REFERENCE['short']} GFLOP/s | RSS MB wingspan / {REFERENCE['short']} |"
        " allocated peak MB | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        has_ref = "ref_tokens_per_s" in r
        ref = f"{r['ref_tokens_per_s']:.1f} ({spread(r['ref_tokens_per_s_all'], '{:.1f}')})" if has_ref else "not run"
        ratio = f"x{r['speed_ratio']:.2f} ({spread(r['speed_ratio_all'], '{:.2f}')})" if has_ref else "-"
        if "ratio_to_ref_lora" in r:
            ratio += (f"; x{r['ratio_to_ref_lora']:.2f} ({spread(r['ratio_to_ref_lora_all'], '{:.2f}')})"
                      " PyTorch's LoRA")
        lines.append(
            f"| {r['arch']} | {r['precision']} | {r['method']} | {r['seq']}x{r['batch']} |"
            f" {r['tokens_per_s']:.1f} ({spread(r['tokens_per_s_all'], '{:.1f}')}) | {ref} | {ratio} |"
            f" {r['gflops']:.1f} | {r['pct_of_fp32_peak']:.0f} % | {r['pct_of_bf16_peak']:.0f} % |"
            f" {r['ref_gflops']:.1f} |" if has_ref else
            f"| {r['arch']} | {r['precision']} | {r['method']} | {r['seq']}x{r['batch']} |"
            f" {r['tokens_per_s']:.1f} ({spread(r['tokens_per_s_all'], '{:.1f}')}) | {ref} | {ratio} |"
            f" {r['gflops']:.1f} | {r['pct_of_fp32_peak']:.0f} % | {r['pct_of_bf16_peak']:.0f} % | - |")
        lines[-1] += (f" {mb(r['rss_peak_bytes'])} / {mb(r['ref_rss_peak_bytes']) if has_ref else '-'} |"
                      f" {mb(r['allocated_peak_bytes'])} | {spread(r['load_average_1m'], '{:.1f}')} |")
    t = targets(rows)
    if t:
        lines += ["", "The issue's targets (135M-class, bf16-mixed, median of alternating rounds):", "",
                  "| target | measured | |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in t]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
