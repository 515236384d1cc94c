#!/usr/bin/env python3
"""Framework profiles checked term by term against a real training step on the CPU (issue 28, item 4):
hf-transformers (transformers + PEFT, in the frameworks venv) and torchtune (0.6.1 + torchao, in the
torchtune venv), each built as its recipe builds it (see hf_cell and torchtune_cell).

For each cell (shape x method) it runs one step and measures what exists:
  - parameters by kind (frozen / adapters / trainable), their gradients and AdamW's state: summed
    tensor bytes, exact (an NF4 weight: the storages of its NF4Tensor);
  - what autograd keeps for backward at the end of the forward: every tensor the saved-tensor
    hooks see, counted once per storage, parameters and buffers left out (they are weights);
    those shaped [..., vocab] (the log-softmax cross-entropy keeps) and the logits themselves are
    `logits_loss`, the rest `activations`;
  - the step's peak of allocated bytes: torch.profiler's [memory] events in time order (nbytes
    signed) added to what was allocated before the step (the brief: a CPU has no allocator
    statistics, the profiler's timeline is the measurement).
and compares with `wingspan plan --framework FW --json` for the same setup (with the installed
release's behaviour where it differs from the profile: RELEASE_BEHAVIOUR): the components at the
planner's forward_end phase, the final gradients and optimizer state, and peak_allocated_bytes.
Prints one JSON object; exits 1 when a term is off by more than its tolerance (static terms: exact;
activations and logits: 3 %; the peak: 3 %) unless the profile's `sources` explain that difference
with a cited reason (EXPLAINED), listing each.

Where the CPU run legitimately differs from CUDA: none of the terms compared here depend on the
device except the attention kernel's saved tensors. transformers' SDPA on a CPU dispatches to
the flash-attention CPU kernel when no mask is needed (is_causal), which keeps q, k, v, the
output and the logsumexp like the CUDA flash/efficient kernels the profile models; the planner's
CUDA-only attention workspace (the flash backward's fp32 dq accumulator) is not allocated by
the CPU kernel and is left out of the peak comparison (`cpu_differences` in the output).

    build/venv-frameworks/bin/python tests/frameworks/profile_terms.py build/bin/wingspan
    build/venv-torchtune/bin/python tests/frameworks/profile_terms.py build/bin/wingspan --framework torchtune
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import weakref

import torch

# The profiler's allocation timeline, walked once for every script that measures a CPU peak.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "published"))
from profiler_peak import allocation_peak  # noqa: E402

TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
        "intermediate_size": 768, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
        "vocab_size": 260, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": True, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False}
# SmolLM2-135M's widths and vocabulary with 4 of its 30 layers: every per-layer term at the real
# size, one step in seconds on 2 cores.
SMOL4 = dict(TINY, hidden_size=576, intermediate_size=1536, num_hidden_layers=4, num_attention_heads=9,
             num_key_value_heads=3, vocab_size=49152, rope_theta=100000.0)
# Gemma 2 at the tiny widths: what Llama has not (transformers 5.25 models/gemma2/modeling_gemma2.py): each
# sublayer's output normed before the residual add (four (1 + weight) norms per layer), the attention
# scores and the final logits soft-capped, cap * tanh(x / cap), whose tanh keeps its output; eager
# attention (the model refuses SDPA: _supports_sdpa = False), GELU-tanh gate, scaled embeddings.
GEMMA2_TINY = dict(TINY, architectures=["Gemma2ForCausalLM"], model_type="gemma2", head_dim=32,
                   hidden_activation="gelu_pytorch_tanh", attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                   query_pre_attn_scalar=32, sliding_window=4096, rms_norm_eps=1e-6)
SHAPES = {"tiny": TINY, "smollm2-135m-4layers": SMOL4, "gemma2-tiny": GEMMA2_TINY}
# The attention each model type trains with in transformers (and is planned with).
ATTENTION = {"llama": "sdpa", "gemma2": "eager"}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
RANK, ALPHA = 16, 32


class Cell:
    """One framework's model for one (shape, method), ready for a step: the model, its trainable
    parameters, the optimizer the framework's recipe uses, and `forward_loss()` returning the loss and
    the bytes of the logits the model returned (freed before backward by both frameworks' loops)."""

    def __init__(self, model, optimizer, forward_loss):
        self.model, self.optimizer, self.forward_loss = model, optimizer, forward_loss


def hf_cell(config, method, ids):
    """transformers + PEFT as the hf-transformers recipe runs: the config's model class (Llama with
    SDPA, Gemma 2 eager), fp32, PEFT LoRA/DoRA on the seven linears, the Trainer's default fused AdamW.
    transformers 5.25 training_args.py (lines 806-811): the default optim with torch >= 2.8 is
    "adamw_torch_fused", torch.optim.AdamW(fused=True), on the CPU as on CUDA."""
    from transformers import AutoConfig, AutoModelForCausalLM
    keys = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(config["model_type"], **keys),
                                             attn_implementation=ATTENTION[config["model_type"]])
    model.config.use_cache = False
    if method == "qlora":
        model = hf_quantized(model)
    if method != "full":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=TARGETS,
                                                 use_dora=method == "dora", bias="none", task_type="CAUSAL_LM"))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, weight_decay=0.0,
                            fused=True)

    def forward_loss():
        # The Trainer's compute_loss keeps only the loss: the model output (the logits) is freed before
        # backward (transformers trainer.py Trainer.compute_loss returns `loss` alone).
        result = model(input_ids=ids, labels=ids)
        return result.loss, result.logits.untyped_storage().nbytes()
    return Cell(model, opt, forward_loss)


def hf_quantized(model):
    """QLoRA as the hf-transformers recipe loads it (recipes/hf-transformers/train.py through TRL's
    get_quantization_config): from_pretrained with BitsAndBytesConfig(load_in_4bit, nf4, double quant,
    compute dtype = the run's dtype, fp32 here like the other cells), then PEFT's
    prepare_model_for_kbit_training (use_gradient_checkpointing=False: the cells run without it).
    Needs bitsandbytes with its CPU backend (>= 0.46); the frameworks venv does not install it, so
    the cell runs only where it is importable (see main)."""
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    from peft import prepare_model_for_kbit_training
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        q = AutoModelForCausalLM.from_pretrained(
            tmp, dtype=torch.float32, attn_implementation=ATTENTION[model.config.model_type],
            quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                   bnb_4bit_use_double_quant=True,
                                                   bnb_4bit_compute_dtype=torch.float32))
    q.config.use_cache = False
    return prepare_model_for_kbit_training(q, use_gradient_checkpointing=False)


def bnb_available():
    try:
        import bitsandbytes  # noqa: F401
        return True
    except ImportError:
        return False


def torchtune_cell(config, method, ids):
    """torchtune 0.6.1 as its single-device recipes run (recipes/lora_finetune_single_device.py,
    full_finetune_single_device.py, configs llama3_2/1B_*_single_device.yaml): the model built under
    training.set_default_dtype(bf16) (dtype: bf16, no autocast), llama3_2's tied output, LoRA/DoRA on
    q/k/v/output_proj and the MLP, QLoRA through torchao's NF4Tensor (quantize_base), adapters made
    trainable by set_trainable_params, torch.optim.AdamW(fused=True), CEWithChunkedOutputLoss over
    model.set_num_output_chunks(8), labels shifted by one and padded with ignore_index as the recipe
    does."""
    from torchtune import training
    from torchtune.models.llama3_2._component_builders import llama3_2, lora_llama3_2
    from torchtune.modules.loss import CEWithChunkedOutputLoss
    dims = dict(vocab_size=config["vocab_size"], num_layers=config["num_hidden_layers"],
                num_heads=config["num_attention_heads"], num_kv_heads=config["num_key_value_heads"],
                embed_dim=config["hidden_size"], intermediate_dim=config["intermediate_size"],
                max_seq_len=config["max_position_embeddings"], rope_base=int(config["rope_theta"]),
                norm_eps=config["rms_norm_eps"])
    torch.manual_seed(0)
    with training.set_default_dtype(torch.bfloat16):
        if method == "full":
            model = llama3_2(**dims)
        else:
            model = lora_llama3_2(lora_attn_modules=["q_proj", "k_proj", "v_proj", "output_proj"],
                                  apply_lora_to_mlp=True, lora_rank=RANK, lora_alpha=ALPHA, use_dora=method == "dora",
                                  quantize_base=method == "qlora", **dims)
    if method != "full":
        from torchtune.modules.peft import get_adapter_params, set_trainable_params
        set_trainable_params(model, get_adapter_params(model))
    model.set_num_output_chunks(8)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, fused=True)
    loss_fn = CEWithChunkedOutputLoss(num_output_chunks=8)
    labels = torch.hstack((ids[..., 1:], torch.full((ids.shape[0], 1), loss_fn.ignore_index)))

    def forward_loss():
        chunks = model(ids)
        # Held at the forward's end: every chunk the model returned (bf16) and, while the last chunk is
        # scored, its fp32 copy (compute_cross_entropy's logits.float(), freed when its log-softmax is
        # made): the planner's forward_end phase holds that one chunk's upcast too.
        upcast = chunks[-1].numel() * 4
        return loss_fn(chunks, labels), sum(c.untyped_storage().nbytes() for c in chunks) + upcast
    return Cell(model, opt, forward_loss)


# Per framework: the cell, its precision, its methods, and the step's (seq, batch). torchtune runs at
# batch 1: its chunked output (TransformerDecoder.chunked_output) gives the head non-contiguous
# [b, s/8, h] chunks, which ATen's matmul cannot fold into one matrix when the head is frozen
# (LinearAlgebra.cpp should_fold: no fold without a weight gradient), so it runs bmm over the batch;
# the CPU's bmm then copies the expanded [b, h, vocab] weight (measured: 2 × 56.6 MB for SmolLM2's
# head at b = 2, nothing when the chunk is contiguous). That copy belongs to the CPU kernel, not to
# the profile's CUDA run; at b = 1 the chunk is a matrix and it does not happen.
FRAMEWORKS = {"hf-transformers": (hf_cell, "fp32", "full,lora,dora", (64, 2)),
              "torchtune": (torchtune_cell, "bf16", "full,lora,dora,qlora", (128, 1))}

# The release a framework check installs (scripts/requirements/) where it differs from what the
# bundled profile describes, as a merge patch of the profile; the plan is asked with it, as
# bench_published does for a case measured with an older release (its `framework_behaviour`).
RELEASE_BEHAVIOUR = {
    # torchtune 0.6.1, PyPI's last release: CEWithChunkedOutputLoss over the model's chunked output
    # (torchtune/modules/transformer.py v0.6.1 TransformerDecoder.chunked_output) holds all of the
    # chunks' 16-bit logits until backward; the profile follows git main's LinearCrossEntropyLoss,
    # which projects chunk by chunk and holds none (profiles/frameworks/torchtune.json sources.loss).
    "torchtune": {"loss": {"logits_held": True}},
}


def nbytes(t):
    return t.numel() * t.element_size()


def storage_bytes(t):
    """A parameter's bytes as stored: an NF4Tensor (torchao) is a wrapper whose data are its inner
    tensors (quantized_data, scalers, quantization factors...), each counted at its own size."""
    if hasattr(t, "__tensor_flatten__"):
        names, _ = t.__tensor_flatten__()
        return sum(storage_bytes(getattr(t, n)) for n in names)
    # A bitsandbytes Params4bit: its packed codes, and its QuantState's absmax (uint8 with double
    # quantization), the second level's fp32 absmax and code, the NF4 code and the offset.
    qs = getattr(t, "quant_state", None)
    if qs is not None:
        parts = [qs.absmax, qs.code, getattr(qs, "offset", None)]
        if getattr(qs, "state2", None) is not None:
            parts += [qs.state2.absmax, qs.state2.code]
        return nbytes(t) + sum(nbytes(x) for x in parts if isinstance(x, torch.Tensor))
    return nbytes(t)


def measure(framework, config, method, seq, batch):
    ids = torch.randint(0, config["vocab_size"], (batch, seq), generator=torch.Generator().manual_seed(1))
    cell = FRAMEWORKS[framework][0](config, method, ids)
    model, opt = cell.model, cell.optimizer
    model.train()
    params = list(model.named_parameters())
    trainable = [p for _, p in params if p.requires_grad]
    frozen = sum(storage_bytes(p) for _, p in params if not p.requires_grad)
    train_bytes = sum(nbytes(p) for p in trainable)
    # DoRA's magnitude vectors are adapter parameters too (PEFT: lora_magnitude_vector).
    out = {"frozen_weights": frozen}
    out["trainable_weights" if method == "full" else "adapters"] = train_bytes
    # Parameters and buffers (torchtune's RoPE cache) exist before the step: they are weights, not
    # what the forward saves.
    resident = {t.untyped_storage().data_ptr() for _, t in params if not hasattr(t, "__tensor_flatten__")}
    resident |= {b.untyped_storage().data_ptr() for _, b in model.named_buffers()}
    vocab = config["vocab_size"]

    saved = {}   # storage address -> (weak reference to the saved tensor, its storage's bytes, shape)
    logits_bytes = [0]

    def pack(t):
        if isinstance(t, torch.Tensor) and t.device.type == "cpu" and not hasattr(t, "__tensor_flatten__"):
            key = t.untyped_storage().data_ptr()
            held = saved.get(key)
            # An address seen before is a new storage once the tensor saved there is gone: a graph
            # freed inside the forward (PEFT's DoRA detaches its weight norm) returns its memory, and
            # the allocator may hand that address to a later saved tensor (the loss's fp32 logits).
            if key not in resident and (held is None or held[0]() is None):
                saved[key] = (weakref.ref(t), t.untyped_storage().nbytes(), tuple(t.shape))
        return t

    # The step runs twice: the first warms the kernels and creates AdamW's state (so the measured
    # step starts as every later step does); the second is measured.
    def step():
        saved.clear()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss, logits_bytes[0] = cell.forward_loss()
        # What the graph still holds at the end of the forward: the planner's forward_end phase.
        kept = {key: (b, shape) for key, (ref, b, shape) in saved.items() if ref() is not None}
        loss.backward()
        grads = sum(nbytes(p.grad) for p in trainable if p.grad is not None)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return kept, grads

    step()
    state = sum(nbytes(v) for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor))
    # AdamW's `step` counters are 0-d fp32 tensors (4 B each on a CPU): not moments, left out.
    state -= sum(nbytes(s["step"]) for s in opt.state.values() if isinstance(s.get("step"), torch.Tensor))
    before = frozen + train_bytes + state + nbytes(ids)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        kept, grads = step()
    peak = allocation_peak(prof)
    logits_saved = sum(b for b, shape in kept.values() if shape and shape[-1] == vocab)
    out.update({
        "gradients": grads,
        "optimizer_state": state,
        "activations_forward_end": sum(b for b, shape in kept.values() if not (shape and shape[-1] == vocab)),
        "logits_loss_forward_end": logits_saved + logits_bytes[0],
        "peak_allocated_bytes": before + peak,
    })
    return out


def merge_patch(target, patch):
    """RFC 7396, as the planner's nlohmann::json::merge_patch applies a case's behaviour."""
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            merge_patch(target[key], value)
        elif value is None:
            target.pop(key, None)
        else:
            target[key] = value


PATCHED_PROFILES = {}


def plan_environment(framework):
    """The planner's environment: the bundled profiles, with the installed release's behaviour."""
    env = dict(os.environ)
    if framework not in RELEASE_BEHAVIOUR:
        return env
    if framework not in PATCHED_PROFILES:
        bundled = env.get("WINGSPAN_PROFILES") or os.path.join(os.path.dirname(__file__), "..", "..", "profiles")
        folder = tempfile.mkdtemp(prefix="wingspan-profiles-")
        shutil.copytree(bundled, folder, dirs_exist_ok=True)
        path = os.path.join(folder, "frameworks", framework + ".json")
        with open(path) as f:
            profile = json.load(f)
        merge_patch(profile, RELEASE_BEHAVIOUR[framework])
        with open(path, "w") as f:
            json.dump(profile, f, indent=1)
        PATCHED_PROFILES[framework] = folder
    env["WINGSPAN_PROFILES"] = PATCHED_PROFILES[framework]
    return env


def plan(wingspan, framework, config_path, method, seq, batch, attention):
    args = [wingspan, "plan", "--config", config_path, "--method", "lora" if method == "dora" else method,
            "--seq", str(seq), "--batch", str(batch), "--framework", framework,
            "--precision", FRAMEWORKS[framework][1], "--grad-checkpointing", "off", "--attention", attention,
            "--rank", str(RANK), "--alpha", str(ALPHA), "--targets", "all", "--json"]
    if method == "dora":
        args.append("--dora")
    p = subprocess.run(args, capture_output=True, text=True, env=plan_environment(framework))
    if p.returncode != 0:
        raise SystemExit(f"wingspan plan failed: {p.stderr}")
    j = json.loads(p.stdout)
    fwd = next(ph for ph in j["phases"] if ph["name"] == "forward_end")["components"]
    step = next(ph for ph in j["phases"] if ph["name"] == "optimizer_step")["components"]
    workspace = sum(t["bytes"] for t in j["terms"] if "attention workspace" in t["formula"])
    predicted = {
        # An NF4 weight's codes and its double-quantization constants are one NF4Tensor's storages.
        "frozen_weights": j["components"].get("frozen_weights", 0) + j["components"].get("quant_constants", 0),
        "gradients": step.get("gradients", 0),
        "optimizer_state": j["components"].get("optimizer_state", 0),
        "activations_forward_end": fwd.get("activations", 0),
        "logits_loss_forward_end": fwd.get("logits_loss", 0),
        # The CUDA-only flash backward workspace is held at the attention moments only: left out there.
        "peak_allocated_bytes": max(sum(ph["components"].values()) - (workspace if "attention" in ph["name"] else 0)
                                    for ph in j["phases"]),
    }
    predicted["trainable_weights" if method == "full" else "adapters"] = \
        j["components"].get("trainable_weights" if method == "full" else "adapters", 0)
    return predicted, workspace


# Differences the profile explains instead of modelling (its "sources" entry names the source line);
# reported with their numbers, not failed.
EXPLAINED = {
    ("hf-transformers", "dora", "activations_forward_end"): "dora.activations",
    ("hf-transformers", "dora", "peak_allocated_bytes"): "dora.activations",
    ("torchtune", "dora", "activations_forward_end"): "dora.activations",
    ("torchtune", "dora", "logits_loss_forward_end"): "dora.activations",
    ("torchtune", "dora", "peak_allocated_bytes"): "dora.activations",
    ("torchtune", "full", "activations_forward_end"): "norm.release_0_6_1",
    ("torchtune", "full", "peak_allocated_bytes"): "norm.release_0_6_1",
    ("torchtune", "lora", "peak_allocated_bytes"): "norm.release_0_6_1",
    ("torchtune", "qlora", "frozen_weights"): "quantization.nf4_tensor_constants",
    ("hf-transformers", "qlora", "frozen_weights"): "quantization.bnb_codebooks",
}

TOLERANCE = {"frozen_weights": 0.0, "adapters": 0.0, "trainable_weights": 0.0, "gradients": 0.0,
             "optimizer_state": 0.0, "activations_forward_end": 0.03, "logits_loss_forward_end": 0.03,
             "peak_allocated_bytes": 0.03}


def nf4_quantizable(config):
    """torchao's NF4Tensor quantizes a weight in blocks of 64 with int8 scalers in blocks of 256
    (torchao/dtypes/nf4tensor.py double_quantize_scalers: "Number of scalers must be divisible by
    scaler block size"): every linear's element count a multiple of 64 x 256."""
    h, i = config["hidden_size"], config["intermediate_size"]
    kv = h // config["num_attention_heads"] * config["num_key_value_heads"]
    return all(n % (64 * 256) == 0 for n in (h * h, h * kv, h * i))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wingspan", help="the wingspan program")
    ap.add_argument("source", nargs="?", help="the source tree (given by run_trl_script.sh; not needed)")
    ap.add_argument("--framework", default="hf-transformers", choices=sorted(FRAMEWORKS))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--methods", help="default: the framework's full, LoRA, DoRA (and QLoRA where it runs on a CPU)")
    ap.add_argument("--seq", type=int, help="default: the framework's (hf-transformers 64, torchtune 128)")
    ap.add_argument("--batch", type=int, help="default: the framework's (hf-transformers 2, torchtune 1)")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    fw = a.framework
    a.seq = a.seq or FRAMEWORKS[fw][3][0]
    a.batch = a.batch or FRAMEWORKS[fw][3][1]
    cells, failures = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shapes.split(","):
            config_path = f"{tmp}/{shape}.json"
            with open(config_path, "w") as f:
                json.dump(SHAPES[shape], f)
            methods = (a.methods or FRAMEWORKS[fw][2] + (",qlora" if fw == "hf-transformers" and bnb_available() else ""))
            for method in methods.split(","):
                if method == "qlora" and fw == "torchtune" and not nf4_quantizable(SHAPES[shape]):
                    continue
                if fw == "torchtune" and SHAPES[shape]["model_type"] != "llama":   # its cell builds llama3_2
                    continue
                measured = measure(fw, SHAPES[shape], method, a.seq, a.batch)
                predicted, workspace = plan(a.wingspan, fw, config_path, method, a.seq, a.batch,
                                            ATTENTION[SHAPES[shape]["model_type"]])
                rows = {}
                for term, m in measured.items():
                    p = predicted[term]
                    err = (p - m) / m if m else (0.0 if p == 0 else float("inf"))
                    ok = abs(err) <= TOLERANCE[term] + 1e-12
                    rows[term] = {"measured": m, "predicted": p, "error": round(err, 5), "ok": ok}
                    if not ok and (fw, method, term) in EXPLAINED:
                        rows[term]["explained_by"] = f"profiles/frameworks/{fw}.json sources." + \
                                                     EXPLAINED[(fw, method, term)]
                    elif not ok:
                        failures.append(f"{fw} {shape} {method} {term}: predicted {p} B, measured {m} B "
                                        f"({100 * err:+.2f} %)")
                cells.append({"framework": fw, "shape": shape, "method": method, "seq": a.seq, "batch": a.batch,
                              "terms": rows, "cpu_differences": {"attention_workspace_left_out": workspace}})
                print(f"{fw} {shape} {method}: " + ", ".join(f"{t} {100 * r['error']:+.2f} %"
                                                            for t, r in rows.items()), file=sys.stderr, flush=True)
    versions = {"torch": torch.__version__}
    for package in ("transformers", "peft", "torchtune", "torchao"):
        try:
            versions[package] = __import__(package).__version__
        except ImportError:
            pass
    print(json.dumps({**versions, "cells": cells, "failures": failures}, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
