#!/usr/bin/env python3
"""Throughput benchmark of wingspan-train against a peer trained on the same model, shape and
threads in one invocation: plain PyTorch (reference_train.py, Debian's python3-torch) or the peer a
user would pick (--reference transformers: transformers + PEFT on the frameworks venv's torch 2.x).

For the built-in default architecture and a SmolLM2-135M-class architecture (random weights), each
method (full, LoRA, QLoRA) and wingspan precision (auto = the trainer's default, fp32, bf16-mixed),
it runs the trainers alternately (A B A B ..., so background load on shared cores hits both) and
reports: tokens/s of both (median over rounds of each run's median step) with the spread, the ratio,
achieved GFLOP/s (the step's matmul FLOPs per token x tokens/s, formula printed) against the GEMM peak
measured in the same invocation (fp32 and bf16, two shapes, best of libtorch's and oneDNN's kernels),
peak RSS of both processes and wingspan-train's peak allocated bytes.

The peer runs at its fastest setting on this CPU (--peer-precisions fastest, the default with
--reference transformers): fp32 and, where the CPU multiplies bf16 in hardware, bf16 autocast too; the
ratio is against the faster one, the slower one reported beside it. Each implementation runs with its
own defaults (wingspan-train sets GOMP_SPINCOUNT=10000 itself; the peer keeps libgomp's default).
--cpu avx2-proxy runs both as on an AVX2-only CPU (see CPU_KINDS).

    bench_trainer.py --bin build/bin/wingspan-train [--threads 2] [--steps 3] [--repeats 2]
                     [--cells smollm2-135m:auto:full,...] [--reference transformers] [--cpu native]
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

import bench_trainer_report as report
from bench_trainer_report import run_median  # noqa: F401 (measure_cpu_throughput.py calls bt.run_median)

HERE = os.path.dirname(os.path.abspath(__file__))

SMOLLM2_135M = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
    "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
    "num_key_value_heads": 3, "vocab_size": 49152, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "tie_word_embeddings": True,
    "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
}


# How each CPU kind is run. "native": the CPU as it is. "avx2-proxy": both implementations held to
# AVX2 on this CPU, as a stand-in for an AVX2-only laptop CPU (a proxy, said so in the output): ATen's
# kernels at AVX2, oneDNN's JIT at AVX2 (no AVX-512, no bf16 instructions), OpenBLAS's Haswell kernel,
# and wingspan-train's bf16 products on its emulated path; bf16 autocast is then not the peer's
# fastest setting (its bf16 GEMM is emulated, 1-5 GFLOP/s), so it is not run.
CPU_KINDS = {
    "native": {"both": {}, "wingspan": {}},
    "avx2-proxy": {"both": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                            "OPENBLAS_CORETYPE": "Haswell"},
                   "wingspan": {"WINGSPAN_CPU_BF16": "emulated"}},
}
CPU = {"kind": "native"}   # set by --cpu


def env_for(who):
    """The environment of one implementation's run on the CPU kind in use ("wingspan" or "peer")."""
    kind = CPU_KINDS[CPU["kind"]]
    return dict(os.environ, **kind["both"], **(kind["wingspan"] if who == "wingspan" else {}))


def run_wingspan(binary, model_dir, method, precision, seq, batch, steps, threads, rank, trace=None):
    """One wingspan-train run; precision "auto" passes no --precision (the trainer's default); with
    trace, the steps after the first are traced there (WINGSPAN_PROFILE_TRACE)."""
    args = [binary, "--method", method, "--seq", str(seq), "--batch", str(batch),
            "--steps", str(steps), "--threads", str(threads), "--eval-every", "0", "--eval-fraction", "0",
            "--sample-tokens", "0", "--rank", str(rank), "--sample-every-ms", "100"]
    if precision != "auto":
        args += ["--precision", precision]
    if model_dir:
        args += ["--model", model_dir]
    env = env_for("wingspan")
    if trace:
        env["WINGSPAN_PROFILE_TRACE"] = trace
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    err = [e for e in events if e["event"] == "error"]
    if p.returncode != 0 or err:
        raise RuntimeError(f"wingspan-train failed: {err or p.stderr[-2000:]}")
    hello = next(e for e in events if e["event"] == "hello" and "architecture" in e)
    steps_ev = [e for e in events if e["event"] == "step"]
    done = events[-1]
    return {"step_times": [e["step_time_s"] for e in steps_ev], "losses": [e["loss"] for e in steps_ev],
            "rss_peak_bytes": done["rss_peak_bytes"], "peak_bytes": done["peak_bytes"],
            "config": hello["architecture"], "params": hello["params"], "precision": hello.get("precision", {})}


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
    p = subprocess.run(args, capture_output=True, text=True, env=env_for("peer"))
    if p.returncode != 0:
        raise RuntimeError(f"reference failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# GFLOP/s of two shapes (a 135M-class MLP product and a square 2048 one), fp32 and bf16, through
# libtorch's matmul and oneDNN's gemm: the best is the measured GEMM peak the shares are taken of.
PEAK_SCRIPT = r"""
import ctypes, json, sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
SHAPES = {"": (512, 1536, 1536), "_2048": (2048, 2048, 2048)}
def best(M, K, N, f, reps):
    f(); ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return 2 * M * K * N / min(ts) / 1e9
out = {}
try:
    lib = ctypes.CDLL("libdnnl.so.2")
except OSError:
    lib = None
T = [ctypes.c_char, ctypes.c_char] + [ctypes.c_int64] * 3 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int64,
     ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p, ctypes.c_int64]
for suffix, (M, K, N) in SHAPES.items():
    reps = 8 if M < 2048 else 3
    for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        a, b = torch.randn(M, K).to(dt), torch.randn(K, N).to(dt)
        try:   # oneDNN held to AVX2 has no bf16 matmul for libtorch 1.13 ("could not create a primitive")
            out[name + "_torch" + suffix] = best(M, K, N, lambda: a @ b, reps)
        except RuntimeError:
            pass
    for name, fn, dt in (("fp32", "dnnl_sgemm", torch.float32), ("bf16", "dnnl_gemm_bf16bf16f32", torch.bfloat16)):
        if lib is None:
            break
        f = getattr(lib, fn); f.argtypes = T; f.restype = ctypes.c_int
        a, b, c = torch.randn(M, K).to(dt), torch.randn(K, N).to(dt), torch.empty(M, N)
        call = lambda: f(b"N", b"N", M, N, K, 1.0, a.data_ptr(), K, b.data_ptr(), N, 0.0, c.data_ptr(), N)
        if call() != 0:   # a status other than dnnl_success: not available on this ISA, nothing computed
            continue
        out[name + "_onednn" + suffix] = best(M, K, N, call, reps)
print(json.dumps(out))
"""


def matmul_peaks(threads):
    """GFLOP/s of the peak shapes, fp32 and bf16, libtorch's matmul and oneDNN's gemm (keys
    DTYPE_LIBRARY[_2048]), on the CPU kind in use."""
    p = subprocess.run([PY, "-c", PEAK_SCRIPT, str(threads)], capture_output=True, text=True, env=env_for("peer"))
    if p.returncode != 0:
        raise RuntimeError(f"matmul peak failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


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


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def bf16_hardware():
    """Whether the CPU kind in use multiplies bf16 in hardware (never on the AVX2 proxy)."""
    f = cpu_flags()
    return CPU["kind"] == "native" and (f.get("avx512_bf16", False) or f.get("amx_bf16", False))


def peer_precisions(choice, wingspan_precision, chosen, bf16_hw):
    """The peer's settings for a cell: "fastest" = fp32, plus bf16 autocast where the CPU has bf16
    hardware (bf16_hw); "same" = the precision wingspan-train ran in (auto's choice for auto); or a list."""
    if choice == "fastest":
        return ["fp32", "bf16-mixed"] if bf16_hw else ["fp32"]
    if choice == "same":
        return [chosen or wingspan_precision]
    return choice.split(",")


def bf16_path(binary):
    """The CPU bf16 path the trainer takes (its `devices` answer): "hardware" or "emulated"."""
    try:
        out = subprocess.run([binary, "devices"], capture_output=True, text=True, timeout=60,
                             env=env_for("wingspan")).stdout
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
        bad = ([arch] if arch not in ARCHS else []) + ([prec] if prec not in PRECISIONS else []) + \
              [m for m in methods if m not in ("full", "lora", "qlora")]
        if bad:
            print(f"bench_trainer: unknown {', '.join(bad)} (archs: {', '.join(ARCHS)}; precisions:"
                  f" {', '.join(PRECISIONS)}; methods: full, lora, qlora)", file=sys.stderr)
            sys.exit(2)
    return out


ARCHS = ("default", "smollm2-135m")
PRECISIONS = ("auto", "fp32", "bf16-mixed")


def main():
    ap = argparse.ArgumentParser(
        description="wingspan-train against a peer on the same model, shape and threads, alternating runs (A B A B)"
                    " so shared-core load hits both.")
    ap.add_argument("--bin", required=True, help="the wingspan-train binary")
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 2))
    ap.add_argument("--steps", type=int, default=3, help="steps per run; the first is a warm-up and left out")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--archs", default="default,smollm2-135m", help=f"models, from: {', '.join(ARCHS)}")
    ap.add_argument("--methods", default="full,lora,qlora")
    ap.add_argument("--precisions", default="auto",
                    help=f"wingspan-train's precisions, from: {', '.join(PRECISIONS)} (auto: its default)")
    ap.add_argument("--cells", help="only these cells, ARCH:PRECISION:METHOD,... (overrides --archs/--precisions/--methods);"
                                    " e.g. smollm2-135m:auto:full,smollm2-135m:auto:lora")
    ap.add_argument("--skip-reference", default="",
                    help="methods whose peer run is left out (e.g. qlora: its row then compares to the peer's LoRA"
                         " of the same round)")
    ap.add_argument("--seq-135m", type=int, default=256)
    ap.add_argument("--batch-135m", type=int, default=4)
    ap.add_argument("--seq-default", type=int, default=128)
    ap.add_argument("--batch-default", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2, help="alternating rounds (A B A B)")
    ap.add_argument("--reference", choices=sorted(PEERS), default="pytorch",
                    help="what the ratios compare to: pytorch (reference_train.py on Debian's torch) or transformers"
                         " (peer_transformers.py: transformers + PEFT on the frameworks venv's torch 2.x)")
    ap.add_argument("--peer-precisions", default=None,
                    help="the peer's settings: fastest (fp32, and bf16 autocast where the CPU has bf16 hardware;"
                         " the default with --reference transformers), same (wingspan-train's precision; the default"
                         " with pytorch), or a list such as fp32,bf16-mixed")
    ap.add_argument("--cpu", choices=sorted(CPU_KINDS), default="native",
                    help="native, or avx2-proxy: both held to AVX2 on this CPU (a stand-in for an AVX2-only CPU)")
    ap.add_argument("--peer-python", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), "build",
                                                          "venv-frameworks", "bin", "python"),
                    help="the interpreter of --reference transformers (default: build/venv-frameworks)")
    ap.add_argument("--profile", action="store_true",
                    help="after the rounds, one more wingspan-train run per cell with WINGSPAN_PROFILE_TRACE: where its"
                         " step's time goes (GEMM, attention, norms, element-wise, loss, optimizer, copies, allocator;"
                         " step_profile.py)")
    ap.add_argument("--json", help="write all measurements here")
    ap.add_argument("--markdown", help="write the results table here")
    a = ap.parse_args()
    CPU["kind"] = a.cpu
    REFERENCE.update(PEERS[a.reference])
    if a.peer_precisions is None:
        a.peer_precisions = "fastest" if a.reference == "transformers" else "same"
    if a.reference == "transformers":
        REFERENCE["python"] = a.peer_python
        if not os.path.exists(a.peer_python):
            sys.exit(f"bench_trainer.py: {a.peer_python} is missing; install it with `scripts/venv.sh frameworks`")
    groups = parse_cells(a)
    skip_ref = set(m for m in a.skip_reference.split(",") if m)
    if a.reference == "transformers" and "qlora" not in skip_ref:
        # bitsandbytes has no CPU 4-bit kernels in the pinned venv: QLoRA rows compare to the peer's LoRA.
        skip_ref.add("qlora")
        print("QLoRA: transformers+PEFT has no CPU 4-bit kernels here; its rows compare to the peer's LoRA", flush=True)
    context = report.Context(a, REFERENCE, cpu_model(), cpu_flags(), bf16_path(a.bin), bf16_hardware())

    tmp = tempfile.mkdtemp(prefix="wingspan-bench-")
    peaks_before = matmul_peaks(a.threads)
    print(f"GEMM peak (GFLOP/s): {json.dumps({k: round(v, 1) for k, v in peaks_before.items()})}", flush=True)
    rows = []
    for arch, precision, methods in groups:
        rows += measure_group(a, tmp, arch, precision, methods, skip_ref, context, rows, peaks_before)
    report.write_outputs(context, rows, peaks_before, matmul_peaks(a.threads))


def measure_group(a, tmp, arch, precision, methods, skip_ref, context, done_rows, peaks_before):
    """The rows of one model and wingspan precision: a.repeats rounds, in each every method's
    wingspan run directly followed by its peer runs (their order alternating between rounds), so a
    pair sees one stretch of background load."""
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
    peer = {m: {} for m in methods}       # method -> peer precision -> runs
    load = {m: [] for m in methods}
    for rep in range(a.repeats):
        for method in methods:
            load[method].append(os.getloadavg()[0])
            run = run_wingspan(a.bin, model_dir, method, precision, seq, batch, a.steps, a.threads, a.rank)
            ours[method].append(run)
            if not os.path.exists(cfg_path):
                with open(cfg_path, "w") as f:
                    json.dump(run["config"], f)
            line = (f"  round {rep + 1}/{a.repeats} {arch} {precision} ({run['precision'].get('precision', precision)})"
                    f" {method}: wingspan {seq * batch / run_median(run['step_times']):.1f} tok/s")
            if method not in skip_ref:
                settings = peer_precisions(a.peer_precisions, precision, run["precision"].get("precision"),
                                           context.bf16_hardware)
                for pp in (settings if rep % 2 == 0 else settings[::-1]):
                    r = run_reference(cfg_path, method, pp, seq, batch, a.steps, a.threads, a.rank)
                    peer[method].setdefault(pp, []).append(r)
                    line += f", {REFERENCE['short']} {pp} {seq * batch / run_median(r['step_times']):.1f} tok/s"
            load[method].append(os.getloadavg()[0])
            print(line + f" (load {load[method][-1]:.1f})", flush=True)
    profiles = {m: profile_run(a, tmp, model_dir, arch, precision, m, seq, batch) for m in methods} if a.profile else {}
    rows = []
    for method in methods:
        row = report.make_row(context, arch, precision, method, seq, batch, ours[method], peer[method],
                              peer.get("lora", {}), load[method])
        if method in profiles:
            row["profile"] = profiles[method]
        rows.append(row)
        report.write_outputs(context, done_rows + rows, peaks_before, {})
        report.print_row(context, row)
    return rows


def profile_run(a, tmp, model_dir, arch, precision, method, seq, batch):
    """Where one wingspan-train step's time goes: a run traced by libtorch's profiler, split by
    step_profile.py (the profiler's own cost is in its step times, so they are not the row's)."""
    import step_profile
    trace = os.path.join(tmp, f"{arch}-{precision}-{method}.trace.json")
    run_wingspan(a.bin, model_dir, method, precision, seq, batch, max(a.steps, 3), a.threads, a.rank, trace=trace)
    p = step_profile.profile_step(trace)
    print(step_profile.format_table(p), flush=True)
    return {k: p[k] for k in ("steps", "step_s", "categories", "phases_s_per_step", "uncategorised")}


if __name__ == "__main__":
    main()
