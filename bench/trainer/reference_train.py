#!/usr/bin/env python3
"""The same Llama-family training step as wingspan-train, written in plain PyTorch the way a
Hugging Face style script would (nn.Module layers, repeat_kv, F.cross_entropy on fp32 logits,
torch.optim.AdamW), for bench_trainer.py to compare against. Prints one JSON line.

    reference_train.py --config config.json --method lora --seq 128 --batch 4 --steps 6 --threads 2
"""
import argparse
import json
import math
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class Nf4Linear(nn.Module):
    """Frozen NF4 weight (64-element blocks, fp32 absmax), dequantized in forward with torch ops."""

    def __init__(self, linear):
        super().__init__()
        w = linear.weight.detach().float().reshape(-1, 64)
        absmax = w.abs().amax(1, keepdim=True).clamp_min(1e-12)
        levels = torch.tensor(NF4)
        codes = (w / absmax).unsqueeze(-1).sub(levels).abs().argmin(-1).to(torch.uint8)
        self.register_buffer("packed", (codes[:, 0::2] << 4) | codes[:, 1::2])
        self.register_buffer("absmax", absmax)
        self.register_buffer("levels", levels)
        self.shape = linear.weight.shape
        self.bias = linear.bias

    def forward(self, x):
        hi = (self.packed >> 4).long()
        lo = (self.packed & 15).long()
        codes = torch.stack([hi, lo], -1).reshape(self.packed.shape[0], 64)
        w = (self.levels[codes] * self.absmax).reshape(self.shape).to(x.dtype)
        return F.linear(x, w, self.bias)


class LoraLinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        out_f, in_f = base.shape if isinstance(base, Nf4Linear) else base.weight.shape
        self.lora_A = nn.Linear(in_f, r, bias=False)
        self.lora_B = nn.Linear(r, out_f, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), -1)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, d = c["hidden_size"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        self.nh, self.nkv, self.d = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"]), d
        bias = c.get("model_type") == "qwen2" or c.get("attention_bias", False)
        self.q_proj = nn.Linear(h, self.nh * d, bias=bias)
        self.k_proj = nn.Linear(h, self.nkv * d, bias=bias)
        self.v_proj = nn.Linear(h, self.nkv * d, bias=bias)
        self.o_proj = nn.Linear(self.nh * d, h, bias=False)
        i = c["intermediate_size"]
        self.gate_proj = nn.Linear(h, i, bias=False)
        self.up_proj = nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)
        eps = c.get("rms_norm_eps", 1e-6)
        self.input_layernorm = RMSNorm(h, eps)
        self.post_attention_layernorm = RMSNorm(h, eps)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.nh, self.d).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.nkv, self.d).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.nkv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        g = self.nh // self.nkv
        k = k.repeat_interleave(g, 1)       # HF repeat_kv
        v = v.repeat_interleave(g, 1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.d) + mask
        att = att.softmax(-1)
        o = (att @ v).transpose(1, 2).reshape(B, T, -1)
        x = x + self.o_proj(o)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c.get("rms_norm_eps", 1e-6))
        self.tied = c.get("tie_word_embeddings", False)
        if not self.tied:
            self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        d = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        theta = c.get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, 0, 0.02)

    def forward(self, ids, labels):
        T = ids.shape[1]
        ang = torch.arange(T, dtype=torch.float64)[:, None] * self.inv_freq[None]
        ang = torch.cat([ang, ang], -1)
        dtype = self.embed_tokens.weight.dtype
        cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
        mask = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        x = self.norm(x)
        w = self.embed_tokens.weight if self.tied else self.lm_head.weight
        logits = F.linear(x, w).float()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


def step_arguments():
    """The options every reference of bench_trainer.py takes (this script and peer_transformers.py)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--method", choices=["full", "lora", "qlora"], required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16)
    ap.add_argument("--precision", choices=["fp32", "bf16-mixed"], default="fp32",
                    help="bf16-mixed: fp32 parameters, forward under torch.autocast('cpu', bfloat16)")
    return ap


def main():
    ap = step_arguments()
    ap.add_argument("--profile", help="write torch.autograd.profiler's per-op table of the last step here")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    c = json.load(open(a.config))
    model = Model(c)
    if a.method != "full":
        for p in model.parameters():
            p.requires_grad_(False)
        for layer in model.layers:
            for name in ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]:
                base = getattr(layer, name)
                if a.method == "qlora":
                    base = Nf4Linear(base)
                setattr(layer, name, LoraLinear(base, a.rank, a.alpha))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    times, losses = [], []
    bf16 = a.precision == "bf16-mixed"

    def step(ids):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(ids[:, :-1], ids[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for i in range(a.steps):
        ids = torch.randint(0, min(c["vocab_size"], 260), (a.batch, a.seq + 1))
        profiling = a.profile and i == a.steps - 1
        t0 = time.perf_counter()
        if profiling:
            with torch.autograd.profiler.profile() as prof:
                loss = step(ids)
        else:
            loss = step(ids)
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        if profiling:
            with open(a.profile, "w") as f:
                f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))
    print(json.dumps({"step_times": times, "losses": losses,
                      "rss_peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "trainable": sum(p.numel() for p in params), "torch": torch.__version__,
                      "precision": a.precision}))


if __name__ == "__main__":
    main()
