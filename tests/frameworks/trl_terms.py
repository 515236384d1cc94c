"""What the term-by-term checks of TRL runs share (check_trl_dpo_terms.py, check_trl_grpo_terms.py):
the tiny model, one report line per term, what a step saves for backward (saved-tensor hooks) and
allocates as wide as the vocabulary (torch.profiler), and the plan asked for the same shape."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

failures = []
# trl/kernels/chunked_logprob.py: the fused LM head projects [<= TOKEN_CHUNK_SIZE tokens, <= chunk_size
# vocabulary entries] tiles (trl/trainer/utils.py passes _CHUNKED_LOGPROB_CHUNK_SIZE).
FUSED_HEAD_TOKENS, FUSED_HEAD_VOCAB = 4096, 32768


def report(term, measured, planned, tolerance, why):
    """measured and planned in bytes; tolerance: the allowed |measured - planned| / planned (0: exact)."""
    ok = measured == planned if tolerance == 0 else abs(measured - planned) <= tolerance * max(planned, 1)
    print(json.dumps({"term": term, "measured_bytes": measured, "planned_bytes": planned, "tolerance": tolerance,
                      "ok": ok, "why": why}), flush=True)
    if not ok:
        failures.append(term)


def offline(work):
    os.environ.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                       "HF_HOME": os.path.join(work, "hf"), "TOKENIZERS_PARALLELISM": "false"})


def make_model(source, work):
    chat = os.path.join(work, "chat.jsonl")
    with open(os.path.join(source, "resources", "sample-data", "chat.jsonl")) as src, open(chat, "w") as dst:
        dst.writelines(src.readlines()[:48])
    model_dir = os.path.join(work, "tiny")
    subprocess.run([sys.executable, os.path.join(source, "tests", "frameworks", "make_tiny_model.py"), model_dir, chat],
                   check=True, capture_output=True)
    return model_dir


def sample_rows(source, name, n):
    with open(os.path.join(source, "resources", "sample-data", name)) as f:
        return [json.loads(line) for line in f.readlines()[:n]]


def parameters(trainer):
    """The policy's parameter storages (frozen and trainable bytes) and the reference's besides them."""
    params = {p.untyped_storage().data_ptr(): p for p in trainer.model.parameters()}
    m = {"params": params, "ref_model": getattr(trainer, "ref_model", None) is not None,
         "frozen": sum(p.untyped_storage().nbytes() for p in params.values() if not p.requires_grad),
         "trainable": sum(p.untyped_storage().nbytes() for p in params.values() if p.requires_grad), "reference": 0}
    if m["ref_model"]:
        m["reference"] = sum(p.untyped_storage().nbytes() for p in trainer.ref_model.parameters()
                             if p.untyped_storage().data_ptr() not in params)
    return m


def instrument(trainer, m, shape_of):
    """Records what compute_loss saves for backward (unique storages, parameters excluded) and the
    shape shape_of(inputs) of the batch it scores."""
    saved = m.setdefault("saved", {})

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in m["params"] and s.nbytes() > 0:
            saved[s.data_ptr()] = (s.nbytes(), tuple(t.shape), str(t.dtype))
        return t

    original = trainer.compute_loss

    def compute_loss(model, inputs, *args, **kwargs):
        m["shape"] = shape_of(inputs)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            return original(model, inputs, *args, **kwargs)

    trainer.compute_loss = compute_loss


def train_profiled(trainer, m):
    """trainer.train() under torch.profiler (memory on). Sets m["tile_alloc"], the largest allocation as wide
    as the fused head's tile (mm_buf), and m["head_forward"] / m["head_backward"]: the largest rise of the
    allocated bytes inside ChunkedLogProbFunction's forward / backward over what was allocated as it began
    (the chrome trace's [memory] events carry the allocator's running total)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        trainer.train()
    sizes = []
    for e in prof.events():
        if e.name not in ("aten::empty", "aten::empty_strided"):
            continue
        for arg in getattr(e, "concrete_inputs", []) or []:   # empty()'s size argument
            if isinstance(arg, list) and len(arg) == 2 and arg[-1] == FUSED_HEAD_VOCAB and all(isinstance(x, int) for x in arg):
                sizes.append(arg[0] * arg[1] * 4)
    m["tile_alloc"] = max(sizes) if sizes else None
    trace = os.path.join(tempfile.mkdtemp(prefix="wingspan-trace-"), "trace.json")
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    shutil.rmtree(os.path.dirname(trace), ignore_errors=True)
    memory = sorted((e["ts"], e["args"]["Total Allocated"]) for e in events if e.get("name") == "[memory]")
    for key, name in (("head_forward", "ChunkedLogProbFunction"), ("head_backward", "ChunkedLogProbFunctionBackward")):
        rises = []
        for e in events:
            if e.get("name") != name or e.get("ph") != "X":
                continue
            start, end = e["ts"], e["ts"] + e["dur"]
            before = [total for ts, total in memory if ts < start]
            inside = [total for ts, total in memory if start <= ts <= end]
            if before and inside:
                rises.append(max(inside) - before[-1])
        m[key] = max(rises) if rises else None


def split_saved(m, vocab):
    """(bytes saved that are as wide as the vocabulary, the other saved bytes)."""
    wide = sum(b for b, shape, _ in m["saved"].values() if shape and shape[-1] == vocab)
    return wide, sum(b for b, _, _ in m["saved"].values()) - wide


def cpu_profiles(work):
    """The bundled profiles with hf-transformers' fused head as TRL runs it on the CPU: no Triton, so every
    shifted position is projected and the torch fold makes its fp32 temporaries
    (trl/trainer/utils.py line 1641: compact = _use_triton(device)). Plans use it through WINGSPAN_PROFILES."""
    source = os.environ.get("WINGSPAN_PROFILES") or os.path.join(os.path.dirname(__file__), "..", "..", "profiles")
    target = os.path.join(work, "profiles-cpu")
    shutil.copytree(source, target)
    path = os.path.join(target, "frameworks", "hf-transformers.json")
    with open(path) as f:
        profile = json.load(f)
    profile["objective"]["logprob_labelled_only"] = False
    with open(path, "w") as f:
        json.dump(profile, f, indent=2)
    os.environ["WINGSPAN_GPU_PROFILES"] = source
    os.environ["WINGSPAN_PROFILES"] = target


last_plan = {}


def plan(wingspan, model_dir, method, flags):
    last_plan["args"] = (wingspan, model_dir, method, flags)
    lora = ["--rank", "16", "--alpha", "32", "--targets", "all"] if method == "lora" else []
    r = subprocess.run([wingspan, "plan", "--model-dir", model_dir, "--method", method, *lora, *flags,
                        "--precision", "fp32", "--grad-checkpointing", "off", "--attention", "sdpa",
                        "--framework", "hf-transformers", "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def plan_gpu(p):
    """The last plan again with the bundled (CUDA) profile: the fused head's forward and backward logits_loss."""
    if "args" not in last_plan or "WINGSPAN_GPU_PROFILES" not in os.environ:
        return None
    cpu = os.environ["WINGSPAN_PROFILES"]
    os.environ["WINGSPAN_PROFILES"] = os.environ["WINGSPAN_GPU_PROFILES"]
    try:
        g = plan(*last_plan["args"])
    finally:
        os.environ["WINGSPAN_PROFILES"] = cpu
    return phase(g, "forward_end").get("logits_loss", 0), phase(g, "loss_backward").get("logits_loss", 0)


def phase(p, name):
    return next(ph for ph in p["phases"] if ph["name"] == name)["components"]


def check_common(m, p, method, vocab, rows, seq, scored):
    """Parameters and reference exact; logits none kept; the fused head's tile exact and its forward and
    backward peaks against the plan's logits_loss (planned with the CPU's head: cpu_profiles). `scored`:
    the positions a GPU's head would project (labels not -100), reported beside the CUDA profile's plan."""
    comp = p["components"]
    if method == "lora":
        report("frozen_weights", m["frozen"], comp.get("frozen_weights", 0), 0, "fp32 base weights, counted from the config")
        report("adapters", m["trainable"], comp.get("adapters", 0), 0, "LoRA A and B, r 16 on every linear")
    else:
        report("trainable_weights", m["trainable"], comp.get("trainable_weights", 0), 0, "fp32 weights, every one trained")
    report("reference_model", m["reference"], comp.get("reference_model", 0), 0,
           "trainer.ref_model's storages besides the policy's" + ("" if m["ref_model"] else " (ref_model is None)"))
    wide, _ = split_saved(m, vocab)
    report("logits kept for backward (TRL 1.16: none)", wide, 0, 0,
           "fused_lm_head=True: per-token log-probs without materialized logits")
    # The head's tile: mm_buf [min(N, 4096), 32768] in the compute dtype, N every shifted position on the CPU.
    n = rows * (seq - 1)
    report("fused head tile (mm_buf)", m["tile_alloc"], min(n, FUSED_HEAD_TOKENS) * FUSED_HEAD_VOCAB * 4, 0,
           "trl/kernels/chunked_logprob.py lines 347, 413: full 32,768 wide even for a smaller vocabulary")
    # What the plan's logits_loss holds besides the head's own rise: forward, the int64 targets made before the
    # call (saved); backward, what the forward saved ([N] int64 targets, fp32 log-sum-exp and entropy) and
    # the log-probs' fp32 gradient arriving, all allocated as the backward begins. Exact: the tile, the torch
    # fold's fp32 temporaries of the tile's [N, vocab] block and its per-token vectors (loss_memory.cpp).
    saved_n = sum(b for b, shape, _ in m["saved"].values() if shape == (n,))
    report("logits_loss in forward (the fused head's peak)", m["head_forward"] + n * 8,
           phase(p, "forward_end").get("logits_loss", 0), 0,
           "the allocator's rise inside ChunkedLogProbFunction.forward + the int64 targets")
    report("logits_loss in backward (the fused head's peak)", m["head_backward"] + saved_n + n * 4,
           phase(p, "loss_backward").get("logits_loss", 0), 0,
           "the rise inside its backward + what it saved + the incoming fp32 gradient")
    gpu = plan_gpu(p)
    if gpu is not None:
        print(json.dumps({"term": "the same head on a GPU (Triton: labelled positions, folded in place), planned",
                          "tokens": scored, "forward_bytes": gpu[0], "backward_bytes": gpu[1]}))


def check_activations(m, p, tolerance, unplanned=0, why=""):
    """What the policy's forward saved (not vocabulary-wide) against the plan's forward-end activations, less
    `unplanned` bytes the plan counts and the run provably did not save (why says which)."""
    _, activations = split_saved(m, m["vocab"])
    report("activations (saved by the policy's forward)", activations,
           phase(p, "forward_end").get("activations", 0) - unplanned, tolerance,
           "saved-tensor hooks, unique storages, parameters excluded" + why)


def start(name, source):
    """A work folder (offline Hugging Face caches in it) and the tiny model."""
    work = tempfile.mkdtemp(prefix="wingspan-" + name + "-")
    offline(work)
    cpu_profiles(work)
    torch.manual_seed(0)
    return work, make_model(source, work)


def finish(work):
    shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("terms out of tolerance: " + ", ".join(failures))
        sys.exit(1)
    print("all terms within tolerance")
