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


def train_profiled(trainer, vocab):
    """trainer.train() under torch.profiler; the largest allocation as wide as the vocabulary, in bytes."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        trainer.train()
    sizes = []
    for e in prof.events():
        if e.name not in ("aten::empty", "aten::empty_strided"):
            continue
        for arg in getattr(e, "concrete_inputs", []) or []:   # empty()'s size argument
            if isinstance(arg, list) and len(arg) >= 2 and arg[-1] == vocab and all(isinstance(x, int) for x in arg):
                n = 1
                for x in arg:
                    n *= x
                sizes.append(n * 4)
    return max(sizes) if sizes else None


def split_saved(m, vocab):
    """(bytes saved that are as wide as the vocabulary, the other saved bytes)."""
    wide = sum(b for b, shape, _ in m["saved"].values() if shape and shape[-1] == vocab)
    return wide, sum(b for b, _, _ in m["saved"].values()) - wide


def plan(wingspan, model_dir, method, flags):
    lora = ["--rank", "16", "--alpha", "32", "--targets", "all"] if method == "lora" else []
    r = subprocess.run([wingspan, "plan", "--model-dir", model_dir, "--method", method, *lora, *flags,
                        "--precision", "fp32", "--grad-checkpointing", "off", "--attention", "sdpa",
                        "--framework", "hf-transformers", "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def phase(p, name):
    return next(ph for ph in p["phases"] if ph["name"] == name)["components"]


def check_common(m, p, method, vocab, rows, seq, scored):
    """Parameters and reference exact; logits none kept; the head's tile exact, and the plan's logits
    at least the tile a GPU allocates (`scored` positions: with Triton the fused head projects only
    the positions whose label is not -100; without it, on this CPU, every position)."""
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
    planned = phase(p, "forward_end").get("logits_loss", 0)
    print(json.dumps({"term": "logits_loss (planned, forward end)", "planned_bytes": planned, "measured_bytes": wide,
                      "note": "the plan keeps logits the run does not: an over-estimate"}))
    if m.get("vocab_wide_alloc") is not None:
        tile = min(rows * (seq - 1), FUSED_HEAD_TOKENS) * min(vocab, FUSED_HEAD_VOCAB) * 4
        report("largest vocab-wide allocation (fused head tile)", m["vocab_wide_alloc"], tile, 0,
               "trl/kernels/chunked_logprob.py: mm_buf [min(N, 4096), min(V, 32768)] in the compute dtype")
        gpu_tile = min(scored, FUSED_HEAD_TOKENS) * min(vocab, FUSED_HEAD_VOCAB) * 4
        print(json.dumps({"term": "fused head tile on a GPU (scored positions only)", "bytes": gpu_tile,
                          "planned_logits_bytes": planned, "ok": planned >= gpu_tile}))
        if planned < gpu_tile:
            failures.append("logits below the fused head's tile")


def check_activations(m, p, tolerance):
    """What the policy's forward saved (not vocabulary-wide) against the plan's forward-end activations."""
    _, activations = split_saved(m, m["vocab"])
    report("activations (saved by the policy's forward)", activations, phase(p, "forward_end").get("activations", 0),
           tolerance, "saved-tensor hooks, unique storages, parameters excluded")


def start(name, source):
    """A work folder (offline Hugging Face caches in it) and the tiny model."""
    work = tempfile.mkdtemp(prefix="wingspan-" + name + "-")
    offline(work)
    torch.manual_seed(0)
    return work, make_model(source, work)


def finish(work):
    shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("terms out of tolerance: " + ", ".join(failures))
        sys.exit(1)
    print("all terms within tolerance")
