"""Checks on the CPU two transformers QLoRA behaviours the planner models for bench/published's
Hugging Face + FA2 rows (run: build/venv-frameworks/bin/python bench/published/measure_hf_qlora_terms.py).

1. The saved tensors of one decoder layer, and of the head, under bf16 autocast, with and without PEFT's
   prepare_model_for_kbit_training (every parameter that is not a bitsandbytes Params4bit cast to fp32:
   peft utils/other.py, v0.13.2 lines 127-132). The 4-bit linears are emulated as bitsandbytes
   Linear4bit.forward runs them (nn/modules.py @0.45.0: matmul_4bit(x.to(compute_dtype), ...).to(inp_dtype)),
   with a frozen bf16 weight: bitsandbytes' CPU backend is not in the frameworks venv.
   Planner: core/src/memory/rows_layer_saved.cpp (fp32_stream).
2. The peak of transformers 4.46.3's ForCausalLMLoss (loss/loss_utils.py lines 32-47, copied below:
   logits.float(), then shift_logits = logits[..., :-1, :].contiguous()) against the installed release's, on
   one sequence: the shifted slice of a [1, s, vocab] tensor is already contiguous, so no copy is made.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import transformers
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.loss.loss_utils import ForCausalLMLoss as installed_loss

from profiler_peak import allocation_peak

H, I, S, VOCAB = 256, 768, 64, 1000
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class Linear4bitLike(nn.Linear):
    """bitsandbytes Linear4bit.forward's casts around a frozen 16-bit weight."""

    def __init__(self, lin):
        super().__init__(lin.in_features, lin.out_features, bias=False, dtype=torch.bfloat16)
        self.weight = nn.Parameter(lin.weight.detach().to(torch.bfloat16), requires_grad=False)

    def forward(self, x):
        return F.linear(x.to(torch.bfloat16), self.weight).to(x.dtype)


def build(prepared):
    cfg = LlamaConfig(hidden_size=H, intermediate_size=I, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=VOCAB, attn_implementation="sdpa")
    torch.manual_seed(0)
    m = LlamaForCausalLM(cfg).to(torch.bfloat16)
    for layer in m.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for name in TARGETS:
                if hasattr(parent, name):
                    setattr(parent, name, Linear4bitLike(getattr(parent, name)))
    for mod in m.modules():
        for p in mod.parameters(recurse=False):
            p.requires_grad = False
            if prepared and not isinstance(mod, Linear4bitLike):
                p.data = p.data.float()
    m.config.use_cache = False
    return get_peft_model(m, LoraConfig(r=8, lora_dropout=0.0, target_modules=TARGETS))


def saved_by(model, fn):
    """Distinct storages with a token dimension that autograd saves while fn runs under bf16 autocast."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        key = t.untyped_storage().data_ptr()
        if key not in params and S in t.shape:
            seen[key] = t.untyped_storage().nbytes()
        return t
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(seen.values())


def layer_and_head():
    per_token = {}
    for prepared in (False, True):
        m = build(prepared)
        inner = m.base_model.model.model
        ids = torch.randint(0, VOCAB, (1, S))
        h = inner.embed_tokens(ids).detach().requires_grad_()
        pos = torch.arange(S).unsqueeze(0)
        pe = inner.rotary_emb(h, pos)
        per_token[prepared] = saved_by(m, lambda: inner.layers[0](h, position_embeddings=pe, position_ids=pos)) / S
        head = m.base_model.model.lm_head
        copies = []
        with torch.autocast("cpu", dtype=torch.bfloat16), torch.autograd.graph.saved_tensors_hooks(
                lambda t: copies.append(t.untyped_storage().data_ptr() != head.weight.untyped_storage().data_ptr()
                                        and t.shape == head.weight.shape[::-1] and t.dtype == torch.bfloat16) or t,
                lambda t: t):
            head(torch.randn(1, S, H, dtype=h.dtype, requires_grad=True))
        print(f"prepared={prepared}: embedding output (layer input) {h.dtype}; one layer saves {per_token[prepared]:.0f} B "
              f"per token; the head ({head.weight.dtype}) saves a bf16 copy of its weight: {any(copies)}")
    extra = per_token[True] - per_token[False]
    print(f"prepared - not: {extra:.0f} B per token = 3·i·2 B ({3 * I * 2}) for gate, up, act(gate) in fp32 "
          f"+ {extra - 3 * I * 2:.0f} B of the layer's fp32 cos/sin")


def loss_4463(logits, labels, vocab_size, num_items_in_batch=None, ignore_index=-100, **kwargs):
    logits = logits.float()
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    shift_logits = shift_logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1).to(shift_logits.device)
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = nn.functional.cross_entropy(shift_logits, shift_labels, ignore_index=ignore_index, reduction=reduction)
    return loss / num_items_in_batch if reduction == "sum" else loss


def loss_peaks(tokens=1024, vocab=4096):
    hidden = torch.randn(1, tokens, 64, dtype=torch.bfloat16, requires_grad=True)
    head = torch.randn(vocab, 64, dtype=torch.bfloat16)
    labels = torch.randint(0, vocab, (1, tokens))
    for name, fn in (("4.46.3", loss_4463), (transformers.__version__, installed_loss)):
        for _ in range(2):   # the second run is measured
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
                logits = hidden @ head.t()
                loss = fn(logits=logits, labels=labels, vocab_size=vocab)
                del logits   # the Trainer drops the model output before backward
                loss.backward()
            hidden.grad = None
        peak = allocation_peak(prof)
        print(f"transformers {name} ForCausalLMLoss, one sequence: peak {peak / (tokens * vocab):.2f} B per token x vocab")


if __name__ == "__main__":
    layer_and_head()
    loss_peaks()
