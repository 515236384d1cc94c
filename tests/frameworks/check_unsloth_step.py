"""check_unsloth_step.py WINGSPAN_BIN SRC: Unsloth 2025.1's QLoRA step as written from its source
(bench/allocator/unsloth_step.py, recorded by record_trace.py --mode unsloth with PyTorch's own autograd
engine) against the planner's unsloth@2025.1 rows, on a small Llama (hidden 512, 2 layers):

- the step's bytes per token at its peak, between two contexts, equal the planner's within 2 % (one b·s·h bf16 tensor is 4 % of them here);
- the first layer's input (the embeddings' output, a leaf that requires grad) is still allocated at the
  step's peak, long after its layer's forward: autograd holds it, as the profile key
  checkpointing.offload_keeps_first_input says. Without the key the planner's slope is lower by one
  b·s·h bf16 tensor, outside the tolerance.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SHAPE = {"hidden": 512, "intermediate": 1792, "heads": 8, "kv_heads": 2, "vocab": 8000, "layers": 2, "rank": 8}
CONTEXTS = (2048, 4096)


def record(src, seq, out):
    s = SHAPE
    subprocess.run([sys.executable, os.path.join(src, "bench/allocator/record_trace.py"), "--mode", "unsloth",
                    "--hidden", str(s["hidden"]), "--intermediate", str(s["intermediate"]), "--heads", str(s["heads"]),
                    "--kv-heads", str(s["kv_heads"]), "--vocab", str(s["vocab"]), "--layers", str(s["layers"]),
                    "--rank", str(s["rank"]), "--seq", str(seq), "--steps", "1", "--json", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def peak_of(events):
    """The largest bytes allocated at once, the event where it is reached, and the live set there."""
    live, total, peak, at, alive = {}, 0, 0, 0, set()
    for i, (kind, idx, nbytes) in enumerate(events):
        if kind == "+":
            live[idx] = nbytes
            total += nbytes
        else:
            total -= live.pop(idx)
        if total > peak:
            peak, at, alive = total, i, set(live)
    return peak, at, alive


def planned_peak(wingspan, config, seq, profiles=None):
    env = dict(os.environ)
    if profiles:
        env["WINGSPAN_PROFILES"] = profiles
    out = subprocess.run([wingspan, "plan", "--config", config, "--method", "qlora", "--quant", "nf4-dq",
                          "--framework", "unsloth@2025.1", "--seq", str(seq), "--batch", "1",
                          "--rank", str(SHAPE["rank"]), "--alpha", str(SHAPE["rank"]),
                          "--targets", "q,k,v,o,gate,up,down", "--attention", "flash", "--grad-checkpointing", "on",
                          "--precision", "bf16-mixed", "--machine", "a100-80gb", "--json"],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)["peak_allocated_bytes"]


def main():
    wingspan, src = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "config.json")
        with open(config, "w") as f:
            json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": SHAPE["hidden"],
                       "intermediate_size": SHAPE["intermediate"], "num_attention_heads": SHAPE["heads"],
                       "num_key_value_heads": SHAPE["kv_heads"], "num_hidden_layers": SHAPE["layers"],
                       "vocab_size": SHAPE["vocab"], "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
                       "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                       "hidden_act": "silu"}, f)
        # The planner with the key off: a copy of the profiles whose unsloth.json says false.
        profiles = os.path.join(tmp, "profiles")
        shutil.copytree(os.path.join(src, "profiles"), profiles)
        path = os.path.join(profiles, "frameworks", "unsloth.json")
        with open(path) as f:
            unsloth = json.load(f)
        unsloth["checkpointing"]["offload_keeps_first_input"] = False
        with open(path, "w") as f:
            json.dump(unsloth, f)

        traced, planned, planned_without = [], [], []
        for seq in CONTEXTS:
            trace = record(src, seq, os.path.join(tmp, f"trace-{seq}.json"))
            events = trace["events"]
            peak, at, alive = peak_of(events)
            traced.append(peak)
            planned.append(planned_peak(wingspan, config, seq))
            planned_without.append(planned_peak(wingspan, config, seq, profiles))
            # The embeddings' output: the step's first b·s·h bf16 allocation after the loaded tensors.
            loaded, step_start = 0, 0
            while loaded < trace["loaded_bytes"]:
                loaded += events[step_start][2]
                step_start += 1
            layer_input = seq * SHAPE["hidden"] * 2
            start = next(i for i in range(step_start, len(events))
                         if events[i][0] == "+" and events[i][2] == layer_input)
            first_input = events[start][1]
            freed_at = next(i for i, (kind, idx, _) in enumerate(events) if kind == "-" and idx == first_input)
            print(f"seq {seq}: traced peak {peak:,} B at event {at} of {len(events)}; the first layer's input "
                  f"(event {start}) freed at event {freed_at}; planned {planned[-1]:,} B, "
                  f"without the key {planned_without[-1]:,} B")
            if first_input not in alive:
                failures.append(f"seq {seq}: the first layer's input is freed (event {freed_at}) before the peak "
                                f"(event {at})")
        tokens = CONTEXTS[1] - CONTEXTS[0]
        per_token = [(v[1] - v[0]) / tokens for v in (traced, planned, planned_without)]
        print(f"bytes per token at the peak: traced {per_token[0]:.1f}, planned {per_token[1]:.1f}, "
              f"planned without the key {per_token[2]:.1f}")
        if abs(per_token[1] / per_token[0] - 1) > 0.02:
            failures.append(f"planned {per_token[1]:.1f} B per token, traced {per_token[0]:.1f}: more than 2 % apart")
        if abs(per_token[2] / per_token[0] - 1) <= 0.02:
            failures.append(f"without the key the planner ({per_token[2]:.1f} B per token) still matches the trace: "
                            "the check cannot tell the first layer's input")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
