"""bench_trainer.py's rows and outputs: the FLOP formula, each row's tokens/s, ratios and GEMM share,
the printed line, the JSON and the Markdown table with the issue's targets."""
import json
import os
import statistics
import sys
import time


class Context:
    """What every row and output of one invocation shares."""

    def __init__(self, args, reference, cpu_model, cpu_flags, bf16_path, bf16_hardware):
        self.args, self.reference = args, reference
        self.cpu_model, self.cpu_flags, self.bf16_path, self.bf16_hardware = cpu_model, cpu_flags, bf16_path, bf16_hardware


def flop_terms(c, method, seq, rank):
    """The step's matmul FLOPs per training token, as (total, formula text). Model FLOPs: causal
    attention counted in full, no recompute (the trainer does not checkpoint unless asked)."""
    h, L, i, v = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    d = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * d, c.get("num_key_value_heads", c["num_attention_heads"]) * d
    linear = L * (h * q + 2 * h * kv + q * h + 3 * h * i)
    mm = linear + v * h                                     # + the head
    attn = 4 * L * seq * q                                  # QK^T and AV, forward
    where = (f"N = {mm:,} weights in matmuls (incl. the head {v} x {h}), attention 4·L·s·q_dim ="
             f" 4·{L}·{seq}·{q} = {attn:,}")
    if method == "full":
        return 6 * mm + 3 * attn, f"6·N + 3·attention ({where})"
    adapters = L * rank * ((h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h))
    return (4 * mm + 6 * adapters + 3 * attn,               # no weight gradients for the base
            f"4·N + 6·A + 3·attention ({where}, A = {adapters:,} adapter weights, rank {rank})")


def run_median(times):
    """A run's median step, the first (warm-up) step left out."""
    return statistics.median(times[1:] if len(times) > 1 else times)



def tokens_per_s(tokens, runs):
    return [tokens / run_median(r["step_times"]) for r in runs]


def make_row(ctx, arch, precision, method, seq, batch, ours_runs, peer_runs, peer_lora_runs, load):
    """One cell: wingspan-train's runs against the peer's runs per setting (precision -> runs, one per
    round); the ratio is taken per round against the peer's fastest setting (by median tokens/s)."""
    a, tokens = ctx.args, seq * batch
    fpt, formula = flop_terms(ours_runs[0]["config"], method, seq, a.rank)
    ours_tps = tokens_per_s(tokens, ours_runs)
    chosen = ours_runs[0]["precision"]
    row = {"arch": arch, "method": method, "precision": precision, "seq": seq, "batch": batch,
           "precision_chosen": chosen.get("precision", precision), "precision_reason": chosen.get("reason", ""),
           "threads": a.threads, "repeats": a.repeats, "steps": a.steps, "load_average_1m": load,
           "tokens_per_s": statistics.median(ours_tps), "tokens_per_s_all": ours_tps,
           "rss_peak_bytes": max(r["rss_peak_bytes"] for r in ours_runs),
           "allocated_peak_bytes": ours_runs[0]["peak_bytes"], "flops_per_token": fpt, "flop_formula": formula,
           "trainable": ours_runs[0]["params"]["trainable"], "final_loss": ours_runs[0]["losses"][-1]}
    row["gflops"] = fpt * row["tokens_per_s"] / 1e9
    settings = {pp: tokens_per_s(tokens, runs) for pp, runs in peer_runs.items()}
    if settings:
        fastest = max(settings, key=lambda pp: statistics.median(settings[pp]))
        ref_tps = settings[fastest]
        ratios = [o / r for o, r in zip(ours_tps, ref_tps)]   # per round: one stretch of background load
        row.update({"ref_precision": fastest, "ref_tokens_per_s": statistics.median(ref_tps),
                    "ref_tokens_per_s_all": ref_tps, "speed_ratio": statistics.median(ratios),
                    "speed_ratio_all": ratios,
                    "ref_settings": {pp: {"tokens_per_s": statistics.median(t), "tokens_per_s_all": t}
                                     for pp, t in settings.items()},
                    "ref_rss_peak_bytes": max(r["rss_peak_bytes"] for r in peer_runs[fastest]),
                    "ref_trainable": peer_runs[fastest][0]["trainable"],
                    "ref_final_loss": peer_runs[fastest][0]["losses"][-1]})
        row["ref_gflops"] = fpt * row["ref_tokens_per_s"] / 1e9
        row["rss_ratio"] = row["rss_peak_bytes"] / row["ref_rss_peak_bytes"]
    if method == "qlora" and peer_lora_runs:
        lora = {pp: tokens_per_s(tokens, runs) for pp, runs in peer_lora_runs.items()}
        best = max(lora, key=lambda pp: statistics.median(lora[pp]))
        r2 = [o / r for o, r in zip(ours_tps, lora[best])]
        row.update({"ref_lora_tokens_per_s": statistics.median(lora[best]),
                    "ratio_to_ref_lora": statistics.median(r2), "ratio_to_ref_lora_all": r2})
    return row


def print_row(ctx, row):
    short = ctx.reference["short"]
    line = (f"{row['arch']:>13} {row['precision']:>10} ({row['precision_chosen']}) {row['method']:>5}:"
            f" wingspan {row['tokens_per_s']:8.1f} tok/s {row['gflops']:6.1f} GFLOP/s")
    if "ref_tokens_per_s" in row:
        rs = row["speed_ratio_all"]
        others = ", ".join(f"{pp} {v['tokens_per_s']:.1f}" for pp, v in row["ref_settings"].items()
                           if pp != row["ref_precision"])
        line += (f" | {short} {row['ref_precision']} {row['ref_tokens_per_s']:8.1f} tok/s"
                 + (f" (slower: {others})" if others else "") +
                 f" | x{row['speed_ratio']:.2f} ({min(rs):.2f}-{max(rs):.2f})"
                 f" | RSS {row['rss_peak_bytes'] / 1e6:6.0f} MB vs {row['ref_rss_peak_bytes'] / 1e6:6.0f} MB")
    if "ratio_to_ref_lora" in row:
        line += f" | x{row['ratio_to_ref_lora']:.2f} {short}'s LoRA"
    print(line, flush=True)
    print(f"{'':>15}matmul FLOPs per token: {row['flops_per_token'] / 1e6:.1f} M = {row['flop_formula']}", flush=True)


def peak_summary(peaks):
    """The measured GEMM peak: best over dtypes, shapes and libraries, and which one it was."""
    best = max(peaks, key=peaks.get)
    return peaks[best], best


def write_outputs(ctx, rows, peaks_before, peaks_after):
    """The JSON and Markdown of the cells measured so far (rewritten after each cell)."""
    a = ctx.args
    peaks = {k: max(peaks_before.get(k, 0), peaks_after.get(k, 0)) for k in set(peaks_before) | set(peaks_after)}
    peak_fp32 = max((v for k, v in peaks.items() if k.startswith("fp32")), default=0.0)
    peak_bf16 = max((v for k, v in peaks.items() if k.startswith("bf16")), default=0.0)
    peak, peak_key = peak_summary(peaks)
    for row in rows:
        row["pct_of_fp32_peak"] = 100 * row["gflops"] / peak_fp32 if peak_fp32 else None
        row["pct_of_bf16_peak"] = 100 * row["gflops"] / peak_bf16 if peak_bf16 else None
        row["pct_of_gemm_peak"] = 100 * row["gflops"] / peak
    if peaks_after:
        print(f"GEMM peak after (GFLOP/s): {json.dumps({k: round(v, 1) for k, v in peaks_after.items()})}")
        print(f"GEMM peak used for the shares: {peak:.1f} GFLOP/s ({peak_key}, best over dtypes, shapes, libraries)")
    meta = {"threads": a.threads, "steps": a.steps, "repeats": a.repeats, "cpu": a.cpu, "cpu_model": ctx.cpu_model,
            "cpu_flags": ctx.cpu_flags, "bf16_hardware": ctx.bf16_hardware, "bf16_path": ctx.bf16_path,
            "reference": a.reference, "peer_precisions": a.peer_precisions, "rank": a.rank,
            "peaks_before": peaks_before, "peaks_after": peaks_after, "peaks": peaks, "peak_fp32": peak_fp32,
            "peak_bf16": peak_bf16, "peak": peak, "peak_key": peak_key,
            "load_average": os.getloadavg(), "complete": bool(peaks_after),
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=2)
    if a.markdown:
        write_markdown(ctx, a.markdown, meta, rows, " ".join(sys.argv))
    if peaks_after:
        for target, measured, verdict in targets(ctx, rows):
            print(f"target: {target}: {measured}: {verdict}")


def spread(values, fmt="{:.0f}"):
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}"


def targets(ctx, rows):
    """Issue 35's 'done when' lines, from the 135M-class rows at wingspan-train's default precision."""
    cell = {r["method"]: r for r in rows if r["arch"] == "smollm2-135m" and r["precision"] == "auto"}
    out = []
    for m in ("full", "lora"):
        r = cell.get(m)
        if not r:
            continue
        if "speed_ratio" in r:
            out.append((f"{m} >= 1.25x {ctx.reference['long']} at its fastest setting ({r['ref_precision']})",
                        f"x{r['speed_ratio']:.2f} (rounds {spread(r['speed_ratio_all'], '{:.2f}')})",
                        "met" if r["speed_ratio"] >= 1.25 else "NOT met"))
        out.append((f"{m} >= 70 % of the measured GEMM peak",
                    f"{r['gflops']:.1f} GFLOP/s = {r['pct_of_gemm_peak']:.0f} %",
                    "met" if r["pct_of_gemm_peak"] >= 70 else "NOT met"))
    return out


def write_markdown(ctx, path, meta, rows, command):
    mb = lambda b: f"{b / 1e6:.0f}"
    short, pk = ctx.reference["short"], meta["peaks"]
    kind = ("this CPU as it is" if meta["cpu"] == "native" else
            "**the AVX2 proxy**: this CPU held to AVX2 for both (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2,"
            " OPENBLAS_CORETYPE=Haswell; wingspan-train's bf16 products emulated), a stand-in for an AVX2-only CPU")
    lines = [
        f"# wingspan-train vs {ctx.reference['long']}: throughput and memory",
        "",
        f"Command: `{command}`.",
        "",
        f"{meta['date_utc']}. CPU: {meta['cpu_model']}, run as {kind}. {meta['threads']} threads, {meta['steps']} steps"
        f" per run (first left out), {meta['repeats']} alternating rounds (in each, every method's wingspan run then"
        f" the {short} run of each of its settings, their order alternating);"
        f"{'' if meta['complete'] else ' (interrupted: the cells measured so far)'}"
        f" load average (1, 5, 15 min) at the end {', '.join(f'{x:.1f}' for x in meta['load_average'])};"
        " each row gives the 1-minute load seen around its runs.",
        "CPU flags: " + ", ".join(k + (" yes" if v else " no") for k, v in meta["cpu_flags"].items()) + "."
        f" bf16 hardware for this run: {'yes' if meta['bf16_hardware'] else 'no'}."
        f" wingspan-train's bf16 products: {meta.get('bf16_path', 'unknown')} path.",
        f"{short}'s settings: {meta['peer_precisions']}"
        + (" (fp32, and bf16 autocast where the CPU has bf16 hardware; the ratio is against the faster)"
           if meta["peer_precisions"] == "fastest" else "") + ". LoRA rank " + str(meta["rank"]) + ".",
        f"GEMM peak measured in this run (GFLOP/s, best of before/after; 512x1536x1536 and 2048³):"
        f" {meta['peak']:.1f} ({meta['peak_key']}); all: "
        + ", ".join(f"{k} {v:.1f}" for k, v in sorted(pk.items())) + ".",
        "",
        "Tokens/s: median over rounds of each run's median step (range over rounds); ratio: median of the per-round"
        f" ratios to {short}'s fastest setting, with their range. GFLOP/s: the step's matmul FLOPs per token (formula"
        " below) x tokens/s. RSS: peak resident set of the process; allocated: wingspan-train's peak of live tensor"
        " bytes.",
        "",
        f"| model | wingspan precision | method | seq x batch | wingspan tok/s | {short} fastest tok/s |"
        f" {short} other settings | ratio (range) | wingspan GFLOP/s | % GEMM peak | RSS MB wingspan / {short} |"
        " allocated peak MB | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        has_ref = "ref_tokens_per_s" in r
        ref = (f"{r['ref_precision']}: {r['ref_tokens_per_s']:.1f} ({spread(r['ref_tokens_per_s_all'], '{:.1f}')})"
               if has_ref else "not run")
        others = "; ".join(f"{pp}: {v['tokens_per_s']:.1f}" for pp, v in r.get("ref_settings", {}).items()
                           if pp != r.get("ref_precision")) or "-"
        ratio = f"x{r['speed_ratio']:.2f} ({spread(r['speed_ratio_all'], '{:.2f}')})" if has_ref else "-"
        if "ratio_to_ref_lora" in r:
            ratio += f"; x{r['ratio_to_ref_lora']:.2f} {short}'s LoRA"
        prec = r["precision"] + (f" ({r['precision_chosen']})" if r["precision"] == "auto" else "")
        lines.append(
            f"| {r['arch']} | {prec} | {r['method']} | {r['seq']}x{r['batch']} |"
            f" {r['tokens_per_s']:.1f} ({spread(r['tokens_per_s_all'], '{:.1f}')}) | {ref} | {others} | {ratio} |"
            f" {r['gflops']:.1f} | {r['pct_of_gemm_peak']:.0f} % |"
            f" {mb(r['rss_peak_bytes'])} / {mb(r['ref_rss_peak_bytes']) if has_ref else '-'} |"
            f" {mb(r['allocated_peak_bytes'])} | {spread(r['load_average_1m'], '{:.1f}')} |")
    lines += ["", "Matmul FLOPs per token (model FLOPs: causal attention counted in full, nothing recomputed):", ""]
    seen = set()
    for r in rows:
        key = (r["arch"], r["method"], r["seq"])
        if key not in seen:
            seen.add(key)
            lines.append(f"- {r['arch']} {r['method']}: {r['flops_per_token'] / 1e6:.1f} M = {r['flop_formula']}")
    reasons = sorted({r["precision_reason"] for r in rows if r["precision"] == "auto" and r["precision_reason"]})
    if reasons:
        lines += ["", "wingspan-train's auto precision said: " + "; ".join(f"\"{x}\"" for x in reasons) + "."]
    lines += profile_lines(rows)
    t = targets(ctx, rows)
    if t:
        lines += ["", "Issue 35's targets (135M-class, wingspan-train's default precision, median of alternating rounds):",
                  "", "| target | measured | |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in t]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def profile_lines(rows):
    """Where wingspan-train's step goes, per profiled cell (bench_trainer.py --profile)."""
    cells = [r for r in rows if "profile" in r]
    if not cells:
        return []
    head = " | ".join(f"{r['arch']} {r['method']} {r['precision_chosen']}" for r in cells)
    out = ["", "Where a wingspan-train step's time goes (one more run per cell under libtorch's profiler,"
           " WINGSPAN_PROFILE_TRACE; self time of the named ops per category, bench/trainer/step_profile.py;"
           " seconds per step and share of the profiled step):", "",
           f"| category | {head} |", "|---|" + "---:|" * len(cells)]
    for cat in cells[0]["profile"]["categories"]:
        label = "other (autograd engine, dispatch, views, unnamed ops)" if cat == "other" else cat
        vals = " | ".join(f"{r['profile']['categories'][cat]['s_per_step']:.3f} s"
                          f" ({100 * r['profile']['categories'][cat]['share']:.1f} %)" for r in cells)
        out.append(f"| {label} | {vals} |")
    out.append("| step under the profiler | " + " | ".join(f"{r['profile']['step_s']:.3f} s" for r in cells) + " |")
    return out
