"""Records the allocations of real training steps on the CPU and replays them through PyTorch's CUDA
caching allocator (caching_allocator.py): how much more than the tensors the allocator reserves.

    build/venv-frameworks/bin/python bench/allocator/record_trace.py --mode qlora --layers 4 --seq 4096

The step is transformers' Llama with the Trainer's order (loss = model(...).loss; backward; optimizer
step; zero_grad(set_to_none=True)), gradient checkpointing (use_reentrant as given), bf16 autocast, and
attention with flash-attn 2's allocations. Matrix products allocate their outputs and skip the
arithmetic, so a layer of an 8B model runs on a laptop; every other op (norms, rotary, SwiGLU, the
loss, AdamW) runs for real. Modes:
  qlora  PEFT LoRA on every linear over bitsandbytes-like 4-bit linears: packed codes kept, a bf16
         weight dequantized at each use, forward and backward (bitsandbytes MatMul4Bit); the other
         parameters in fp32 (peft prepare_model_for_kbit_training), adapters fp32.
  full   every linear trains in bf16 (weight gradients), AdamW on all of them.
  unsloth  Unsloth 2025.1's QLoRA step (unsloth_step.py): its fused LoRA functions writing input gradients
         in place, layer inputs offloaded to host memory (not traced), Cut Cross-Entropy, no logits.
The trace: the parameters and buffers as loaded, in order, then --steps steps recorded by the profiler
(profile_memory; its allocation events carry the address, which pairs each free with its allocation).
Printed: the tensors' peak, the allocator's peak reserved, and the smallest card (in 2 MiB steps) the
steps run on, as ratios; the largest share of it is made in the step (--json FILE keeps the trace).
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile
from transformers import AttentionInterface, LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from allocated_ops import BF16, FlashAttention, empty_like_product  # noqa: E402
from caching_allocator import smallest_capacity  # noqa: E402

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def flash_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    # transformers' flash path hands flash_attn [b,s,H,d]; flash_attn makes its inputs contiguous.
    q, k, v = (x.transpose(1, 2).contiguous() for x in (query, key, value))
    return FlashAttention.apply(q, k, v), None


class Product(torch.autograd.Function):
    """x · wᵀ with the output allocated, not computed; the weight's gradient when it trains."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return empty_like_product(x.shape[:-1] + (w.shape[0],))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = empty_like_product(g.shape[:-1] + (w.shape[1],))
        gw = empty_like_product(w.shape, w.dtype) if w.requires_grad else None
        return gx, gw


class Dequantized(torch.autograd.Function):
    """bitsandbytes MatMul4Bit: a bf16 weight dequantized for the forward product and again for the input's
    gradient (autograd/_functions.py), freed after each."""

    @staticmethod
    def forward(ctx, x, packed, shape):
        weight = empty_like_product(shape)
        out = empty_like_product(x.shape[:-1] + (shape[0],))
        del weight
        ctx.shape = shape
        ctx.save_for_backward(packed)
        return out

    @staticmethod
    def backward(ctx, g):
        weight = empty_like_product(ctx.shape)
        gx = empty_like_product(g.shape[:-1] + (ctx.shape[1],))
        del weight
        return gx, None, None


class Linear4bit(nn.Module):
    """bitsandbytes Linear4bit.forward: x cast to the compute dtype, the product cast back to x's dtype."""

    def __init__(self, linear):
        super().__init__()
        self.shape = tuple(linear.weight.shape)
        n = linear.weight.numel()
        self.register_buffer("packed", torch.zeros(n // 2, dtype=torch.uint8))
        self.register_buffer("absmax", torch.zeros(n // 64, dtype=torch.uint8))   # double quant: 8-bit scales

    def forward(self, x):
        return Dequantized.apply(x.to(BF16), self.packed, self.shape).to(x.dtype)


def product_forward(linear):
    return lambda x: Product.apply(x, linear.weight)


def head_forward(head):
    # Under autocast a frozen fp32 head is cast to bf16 at each forward, and the copy is saved.
    def forward(x):
        w = head.weight if head.weight.dtype == BF16 else head.weight.to(BF16)
        return Product.apply(x.to(BF16), w)
    return forward


def build(args):
    if args.mode == "unsloth":
        import unsloth_step
        return unsloth_step.build(args)
    AttentionInterface.register("flash_like", flash_attention)
    cfg = LlamaConfig(hidden_size=args.hidden, intermediate_size=args.intermediate, num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads, head_dim=args.head_dim or args.hidden // args.heads,
                      vocab_size=args.vocab, num_hidden_layers=args.layers, max_position_embeddings=args.seq,
                      tie_word_embeddings=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(cfg)
    model = model.to_empty(device="cpu").to(BF16)
    model.config._attn_implementation = "flash_like"
    model.config.use_cache = False
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": args.reentrant})
    if args.mode == "full":
        for name, mod in model.named_modules():
            if isinstance(mod, nn.Linear):
                mod.forward = product_forward(mod)
        return model
    from peft import LoraConfig, get_peft_model
    model.enable_input_require_grads()
    peft_model = get_peft_model(model, LoraConfig(r=args.rank, lora_alpha=args.rank, lora_dropout=0.0,
                                                  target_modules=TARGETS))
    for mod in list(peft_model.modules()):   # the frozen linears under the adapters become 4-bit
        if isinstance(getattr(mod, "base_layer", None), nn.Linear):
            mod.base_layer = Linear4bit(mod.base_layer)
    for p in peft_model.parameters():        # prepare_model_for_kbit_training: other 16-bit ones in fp32
        p.data = p.data.float()
        if p.requires_grad:
            nn.init.normal_(p.data, std=0.01)
    model.lm_head.forward = head_forward(model.lm_head)
    return peft_model


def record(model, args):
    events = []
    for t in list(model.parameters()) + list(model.buffers()):
        events.append(("+", len(events), t.numel() * t.element_size()))
    loaded = sum(e[2] for e in events)
    # foreach=True: the Trainer's AdamW on a GPU takes torch's foreach path (on a CPU it would loop).
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, foreach=True)
    ids = torch.randint(0, args.vocab, (1, args.seq))
    model.train()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for step in range(args.steps):
            with torch.autocast("cpu", dtype=BF16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            del loss
            print(f"step {step + 1} of {args.steps} recorded", file=sys.stderr)
    raw = []

    def walk(nodes):
        for n in nodes:
            if type(n.extra_fields).__name__.endswith("Allocation"):
                raw.append((n.start_time_ns, n.extra_fields.ptr, n.extra_fields.alloc_size))
            walk(n.children)
    walk(prof.profiler.kineto_results.experimental_event_tree())
    raw.sort()
    live = {}
    for _, ptr, nbytes in raw:
        if nbytes > 0:
            live[ptr] = len(events)
            events.append(("+", len(events), nbytes))
        elif ptr in live:
            events.append(("-", live.pop(ptr), -nbytes))
    return events, loaded


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["qlora", "full", "unsloth"], default="qlora")
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--intermediate", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--reentrant", type=int, choices=[0, 1], default=1,
                    help="torch.utils.checkpoint use_reentrant (transformers 4.46's default: 1)")
    ap.add_argument("--json", help="write the trace here")
    args = ap.parse_args()
    torch.manual_seed(0)
    events, loaded = record(build(args), args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "loaded_bytes": loaded, "events": events}, f)
    unlimited, card = smallest_capacity(events)
    made = unlimited.peak_allocated - loaded
    mib = 2 ** 20
    print(f"{args.mode}, {args.layers} layers of h {args.hidden}, seq {args.seq}: {len(events)} events")
    print(f"  loaded tensors {loaded / mib:,.1f} MiB; tensors' peak {unlimited.peak_allocated / mib:,.1f} MiB "
          f"({made / mib:,.1f} MiB made in the steps)")
    print(f"  reserved at its peak, nothing released: {unlimited.peak_reserved / mib:,.1f} MiB "
          f"(x{unlimited.peak_reserved / unlimited.peak_allocated:.3f} of the tensors' peak)")
    print(f"  smallest card: {card / mib:,.1f} MiB (x{card / unlimited.peak_allocated:.3f} of the tensors' peak; "
          f"what the steps make x{(card - loaded) / made:.3f})")


if __name__ == "__main__":
    main()
