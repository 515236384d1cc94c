#!/usr/bin/env python3
"""Where a training step's time goes (issue 35): reads the chrome trace that
WINGSPAN_PROFILE_TRACE=<file> makes wingspan-train write (libtorch's profiler over the steps after
the first), and splits the steps' wall time into GEMM, attention, norms, element-wise ops, loss,
optimizer, copies, allocator, and what is in none of them.

Each event's SELF time is its duration less that of the events nested directly in it on the same
thread, so every microsecond of a step is counted once: a fused kernel's loop is the self time of
its wingspan:: scope, oneDNN's sgemm that of wingspan::gemm, an ATen op's kernel that of the op.
Self times are summed per category (CATEGORY_RULES below); "other" is the steps' wall time (the
wingspan::train_step scopes) less all categories: the autograd engine and its nodes, dispatch,
views, embedding, ops no rule names (listed under "uncategorised" in --json), and time between
recorded events.

    step_profile.py TRACE [--json]

profile_step(trace_path) -> dict is the same for other scripts (bench_trainer.py).
"""
import argparse
import json
import os
import sys
from collections import defaultdict

# Which category an event's self time belongs to. Names are exact, or a prefix ending in '*'.
# An event's category is, in this order:
#   1. ANYWHERE: its own name's, wherever it runs (a product inside the loss is GEMM, an allocation
#      inside attention is the allocator's), so these rows are the step's totals;
#   2. SCOPE: its own name's, where it is one of the trainer's named scopes;
#   3. that of the innermost enclosing event that has one (the ops inside wingspan::attention are
#      attention, the fill inside aten::zeros is the allocator's);
#   4. OP: its own name's, for ops outside every scope above (a residual add, autograd's backward
#      ops of attention's softmax, which run after the forward's scope has closed).
# The wingspan:: names are trainer/src/support/profile_scopes.hpp's.
ANYWHERE, SCOPE, OP = "anywhere", "scope", "op"
CATEGORY_RULES = [
    ("gemm", ANYWHERE, ["wingspan::gemm", "wingspan::gemm_batched", "aten::mm", "aten::addmm", "aten::bmm",
                        "aten::baddbmm", "aten::matmul", "aten::linear", "aten::addbmm"]),
    ("copies", ANYWHERE, ["aten::copy_", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous",
                          "aten::cat", "aten::_cat", "aten::repeat_interleave"]),
    ("allocator", ANYWHERE, ["aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
                             "aten::new_empty_strided", "aten::zeros", "aten::zeros_like", "aten::new_zeros",
                             "aten::full", "aten::full_like", "aten::resize_"]),
    ("attention", SCOPE, ["wingspan::attention", "wingspan::softmax", "wingspan::softmax_backward"]),
    ("norms", SCOPE, ["wingspan::rms_norm", "wingspan::rms_norm_backward"]),
    ("element-wise", SCOPE, ["wingspan::swiglu", "wingspan::swiglu_backward", "wingspan::rotary",
                             "wingspan::rotary_backward"]),
    ("loss", SCOPE, ["wingspan::loss", "wingspan::loss_backward"]),
    ("optimizer", SCOPE, ["wingspan::adamw", "wingspan::grad_norm"]),
    # Softmax runs only in attention (the loss uses logsumexp inside its own scope).
    ("attention", OP, ["aten::softmax", "aten::_softmax", "aten::_softmax_backward_data",
                       "aten::_scaled_dot_product*", "aten::scaled_dot_product_attention"]),
    # Point-wise ops and the reductions that come with them (unfused norms, autograd's sums).
    ("element-wise", OP, ["aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::rsub", "aten::mul",
                          "aten::mul_", "aten::div", "aten::div_", "aten::neg", "aten::silu", "aten::silu_",
                          "aten::silu_backward", "aten::sigmoid", "aten::sigmoid_backward", "aten::gelu",
                          "aten::gelu_backward", "aten::tanh", "aten::tanh_backward", "aten::pow",
                          "aten::rsqrt", "aten::sqrt", "aten::exp", "aten::exp_", "aten::where",
                          "aten::masked_fill", "aten::masked_fill_", "aten::fill_", "aten::zero_",
                          "aten::dropout", "aten::native_dropout", "aten::native_dropout_backward",
                          "aten::bernoulli_", "aten::addcmul_", "aten::addcdiv_", "aten::lerp_",
                          "aten::sum", "aten::mean"]),
]
CATEGORIES = ["gemm", "attention", "norms", "element-wise", "loss", "optimizer", "copies", "allocator"]
OTHER = "other"
STEP_SCOPE = "wingspan::train_step"
PHASE_SCOPES = {"forward": "wingspan::forward", "backward": "wingspan::backward",
                "optimizer": "wingspan::optimizer"}
# Steps this many times as long as the shortest one make the table say so: a process paused
# (SIGSTOP) or starved by other load puts that wait into whatever op was running.
UNEVEN_STEPS = 1.5
# Two events of one thread nest when one lies inside the other to this many microseconds (the
# trace rounds start and duration separately).
NEST_TOLERANCE_US = 0.01


def _lookup(tier):
    exact, prefixes = {}, []
    for category, rule_tier, names in CATEGORY_RULES:
        if rule_tier != tier:
            continue
        for n in names:
            if n.endswith("*"):
                prefixes.append((n[:-1], category))
            else:
                exact.setdefault(n, category)

    def find(name):
        if name in exact:
            return exact[name]
        for p, category in prefixes:
            if name.startswith(p):
                return category
        return None
    return find


_ANYWHERE, _SCOPE, _OP = _lookup(ANYWHERE), _lookup(SCOPE), _lookup(OP)


class TraceError(ValueError):
    """A file that is not a wingspan-train profile trace, with a sentence saying why."""


def read_events(trace_path):
    """The complete ('ph': 'X') events of a chrome trace: the legacy profiler's JSON list or a
    {"traceEvents": [...]} object, as (tid, start_us, duration_us, name)."""
    try:
        with open(trace_path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise TraceError(f"cannot read {trace_path}: {e.strerror}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TraceError(f"{trace_path} is not a JSON chrome trace ({e})") from e
    if isinstance(data, dict):
        data = data.get("traceEvents")
    if not isinstance(data, list):
        raise TraceError(f"{trace_path} has no list of trace events")
    events = []
    for e in data:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts, dur, name = e.get("ts"), e.get("dur"), e.get("name")
        if not isinstance(name, str) or not all(isinstance(v, (int, float)) for v in (ts, dur)) or dur < 0:
            continue
        events.append((str(e.get("tid")), float(ts), float(dur), name))
    return events


def _walk_thread(events):
    """Yields (name, duration, self time, category, inside a step) for one thread's events, each
    with its category by the rules above and whether a train_step scope encloses it."""
    events = sorted(events, key=lambda e: (e[1], -e[2]))
    stack = []   # [end, name, duration, children's time, category, in_step]

    def close(frame):
        end, name, dur, children, category, in_step = frame
        return name, dur, max(0.0, dur - children), category, in_step

    for _, ts, dur, name in events:
        while stack and ts >= stack[-1][0] - NEST_TOLERANCE_US:
            yield close(stack.pop())
        parent = stack[-1] if stack else None
        if parent:
            parent[3] += min(dur, parent[0] - ts)
        inherited = parent[4] if parent else None
        category = _ANYWHERE(name) or _SCOPE(name) or inherited or _OP(name)
        in_step = name == STEP_SCOPE or bool(parent and parent[5])
        stack.append([ts + dur, name, dur, 0.0, category, in_step])
    while stack:
        yield close(stack.pop())


def profile_step(trace_path):
    """Seconds per step of each category, from a WINGSPAN_PROFILE_TRACE file. Raises TraceError
    for a file that is not one (no wingspan::train_step scope in it)."""
    threads = defaultdict(list)
    for e in read_events(trace_path):
        threads[e[0]].append(e)
    totals = dict.fromkeys(CATEGORIES, 0.0)
    phases = dict.fromkeys(PHASE_SCOPES, 0.0)
    uncategorised = defaultdict(float)
    step_us, outside_steps_us = [], 0.0
    for events in threads.values():
        for name, dur, self_us, category, in_step in _walk_thread(events):
            if name == STEP_SCOPE:
                step_us.append(dur)
            if not in_step:
                outside_steps_us += self_us
                continue
            for phase, scope in PHASE_SCOPES.items():
                if name == scope:
                    phases[phase] += dur
            if category:
                totals[category] += self_us
            elif name != STEP_SCOPE and name not in PHASE_SCOPES.values():
                uncategorised[name] += self_us
    steps, wall_us = len(step_us), sum(step_us)
    if steps == 0:
        raise TraceError(f"{trace_path} has no {STEP_SCOPE} event: not a trace of wingspan-train's steps "
                         "(WINGSPAN_PROFILE_TRACE traces the steps after the first; run at least 2)")
    step_s = wall_us / steps / 1e6

    def row(us):
        s = us / steps / 1e6
        return {"s_per_step": s, "share": s / step_s if step_s > 0 else 0.0}
    categories = {c: row(totals[c]) for c in CATEGORIES}
    categories[OTHER] = row(max(0.0, wall_us - sum(totals.values())))
    top = sorted(uncategorised.items(), key=lambda kv: -kv[1])[:12]
    return {
        "trace": os.path.abspath(trace_path),
        "steps": steps,
        "step_s": step_s,
        "step_times_s": [us / 1e6 for us in sorted(step_us)],
        "categories": categories,
        "phases_s_per_step": {p: us / steps / 1e6 for p, us in phases.items()},
        # The largest named events in "other", seconds per step (self time).
        "uncategorised": [{"name": n, "s_per_step": us / steps / 1e6} for n, us in top],
        "outside_steps_s": outside_steps_us / 1e6,
    }


def format_table(p):
    times = p["step_times_s"]
    lines = [f"{p['steps']} profiled steps, {p['step_s']:.3f} s per step ({p['trace']})"]
    if times[0] > 0 and times[-1] > UNEVEN_STEPS * times[0]:
        lines.append(f"WARNING: the steps took {times[0]:.3f} to {times[-1]:.3f} s: a pause or other load "
                     "stretched some, and its wait counts in whichever op was running")
    lines += ["", "| category | s per step | share of the step |", "|---|---:|---:|"]
    for name, c in p["categories"].items():
        label = "other / not in a named op" if name == OTHER else name
        lines.append(f"| {label} | {c['s_per_step']:.3f} | {100 * c['share']:.1f} % |")
    lines.append(f"| step (wall) | {p['step_s']:.3f} | 100.0 % |")
    ph = p["phases_s_per_step"]
    lines += ["", "phases, s per step: " + ", ".join(f"{k} {v:.3f}" for k, v in ph.items())]
    if p["uncategorised"]:
        lines.append("largest named events in other (self time, ms per step): " +
                     ", ".join(f"{u['name']} {1e3 * u['s_per_step']:.1f}" for u in p["uncategorised"][:6]))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="the file WINGSPAN_PROFILE_TRACE named")
    ap.add_argument("--json", action="store_true", help="print the profile as JSON")
    a = ap.parse_args(argv)
    try:
        p = profile_step(a.trace)
    except TraceError as e:
        print(f"step_profile.py: {e}", file=sys.stderr)
        return 2
    print(json.dumps(p, indent=2) if a.json else format_table(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
