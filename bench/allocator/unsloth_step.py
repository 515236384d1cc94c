"""Unsloth 2025.1's QLoRA step on Llama, as the allocations its code makes, for record_trace.py --mode unsloth.

Read at unsloth 3c789bc8 (2025.1.5), unsloth_zoo 5572cc46 and cut-cross-entropy 1f3ebdb (24.12.1), the
release the published context table was measured with (profiles/frameworks/unsloth.json releases.2025.1).
Unsloth's Triton kernels and the matrix products do not run on a CPU; each function below allocates and
saves what its namesake allocates and saves, in the same order, and skips the arithmetic. The autograd
engine, the optimizer and the residual additions are PyTorch's own. Line numbers are of those files.

Shapes: N = b·s tokens, h hidden, I the MLP's width, H query heads, G key/value heads, d head width,
V vocabulary, r the LoRA rank. LoRA A is [r, in] and B [out, r] (PEFT), fp32 (Unsloth's
float32_mixed_precision); the frozen weights are NF4 with double quantization; embeddings, norms and the
head stay bf16.
"""
from types import SimpleNamespace

import torch
import torch.nn as nn

from allocated_ops import BF16, FlashAttention, empty_like_product

F32 = torch.float32


class Nf4Linear(nn.Module):
    """A frozen NF4 weight [out, in] (packed codes, 8-bit block scales) with a LoRA adapter."""

    def __init__(self, out_features, in_features, rank):
        super().__init__()
        self.shape = (out_features, in_features)
        n = out_features * in_features
        self.register_buffer("packed", torch.zeros(n // 2, dtype=torch.uint8))
        self.register_buffer("absmax", torch.zeros(n // 64, dtype=torch.uint8))
        self.A = nn.Parameter(torch.randn(rank, in_features, dtype=F32) * 0.01)
        self.B = nn.Parameter(torch.zeros(out_features, rank, dtype=F32))
        self.s = 1.0


def dequantize(q):
    """kernels/utils.py fast_dequantize (lines 171-220): the bf16 weight, then the fp32 block scales,
    freed as it returns."""
    w = empty_like_product(q.shape)
    scales = empty_like_product((q.shape[0] * q.shape[1] // 64,), F32)
    del scales
    return w


def matmul_lora(X, q):
    """kernels/utils.py matmul_lora (lines 400-421): X [N, in] times the dequantized weight, a new out [N, out],
    then out += (X @ A.to(bf16)) @ (s · B.to(bf16)). (The backward functions' `out = X` products are inline.)"""
    w = dequantize(q)
    out = empty_like_product((X.shape[0], q.shape[0]))
    del w
    a = q.A.detach().to(BF16)               # [r, in]
    xa = empty_like_product((X.shape[0], a.shape[0]))           # [N, r]
    del a
    b = q.B.detach().to(BF16)               # [out, r]
    sb = b * q.s
    del b
    lora = empty_like_product((X.shape[0], q.shape[0]))
    del xa, sb
    del lora                                # after out += lora, in place
    return out


def adapter_grads(X, dY, q):
    """The adapter gradients of the backward functions, e.g. fast_lora.py lines 114-117:
    d_A = X.t() @ (dY @ B.t()) and d_B = (A.t() @ X.t()) @ dY under bf16 autocast (B, A cast to bf16),
    scaled in place; returned transposed, so the engine casts them to fp32 and makes them contiguous."""
    b = q.B.detach().to(BF16)
    dyb = empty_like_product((dY.shape[0], q.B.shape[1]))          # [N, r]
    del b
    d_a = empty_like_product((X.shape[1], q.B.shape[1]))           # [in, r]
    del dyb
    a = q.A.detach().to(BF16)
    ax = empty_like_product((q.A.shape[0], X.shape[0]))            # [r, N]
    del a
    d_b = empty_like_product((q.A.shape[0], dY.shape[1]))          # [r, out]
    del ax
    return d_a.t(), d_b.t()


def add_lora_input_grad(dX, dY, q):
    """dX += dY @ B.to(bf16).t() @ (s · A.to(bf16).t()) (fast_lora.py lines 138, 142, 297, ...)."""
    b = q.B.detach().to(BF16)
    dyb = empty_like_product((dY.shape[0], q.B.shape[1]))
    del b
    a = q.A.detach().to(BF16)
    sa = a * q.s
    del a
    term = empty_like_product((dY.shape[0], q.A.shape[1]))
    del dyb, sa
    del term


def add_input_grad(dX, dY, q):
    """dX += dY @ W.t() with W dequantized (fast_lora.py lines 140-142): the product is a new tensor."""
    w = dequantize(q)
    term = empty_like_product((dY.shape[0], q.shape[1]))
    del term                                # after dX += term
    del w


class RmsNorm(torch.autograd.Function):
    """kernels/rms_layernorm.py Fast_RMS_Layernorm: Y and fp32 r per row; saves X, W, r; backward writes dX
    into dY (line 180: dX = dY for Llama)."""

    @staticmethod
    def forward(ctx, X, W):
        Y = empty_like_product(X.shape)
        r = empty_like_product((X.numel() // X.shape[-1],), F32)
        ctx.save_for_backward(X, W, r)
        return Y

    @staticmethod
    def backward(ctx, dY):
        return dY, None


class Rope(torch.autograd.Function):
    """kernels/rope_embedding.py Fast_RoPE_Embedding: rotates Q [b, s, heads, d] in place, forward and
    backward; returns a view of it."""

    @staticmethod
    def forward(ctx, Q):
        return Q.view(Q.shape)

    @staticmethod
    def backward(ctx, dY):
        return dY.reshape(dY.shape)


class LoraQkv(torch.autograd.Function):
    """fast_lora.py LoRA_QKV (lines 249-330): Q, K, V from X [N, h]; saves X; backward writes dX into X
    (inplace=True) and adds the other products."""

    @staticmethod
    def forward(ctx, X, qa, qb, ka, kb, va, vb, projections):
        ctx.projections = projections
        outs = tuple(matmul_lora(X, p) for p in projections)
        ctx.save_for_backward(X)
        return outs

    @staticmethod
    def backward(ctx, dQ, dK, dV):
        (X,) = ctx.saved_tensors
        pq, pk, pv = ctx.projections
        grads = []
        for dY, p in ((dQ, pq), (dK, pk), (dV, pv)):
            grads += adapter_grads(X, dY, p)
        dX = X                                   # torch.matmul(dQ, QW.t(), out=X)
        dequantize(pq)                           # QW dequantized for it, then freed
        add_lora_input_grad(dX, dQ, pq)
        for dY, p in ((dK, pk), (dV, pv)):
            add_input_grad(dX, dY, p)
            add_lora_input_grad(dX, dY, p)
        return (dX, *grads, None)


class LoraO(torch.autograd.Function):
    """fast_lora.py LoRA_W (lines 365-395): saves X; backward dX = dY @ W.t() (new), plus the LoRA term."""

    @staticmethod
    def forward(ctx, X, a, b, projection):
        ctx.projection = projection
        ctx.save_for_backward(X)
        return matmul_lora(X, projection)

    @staticmethod
    def backward(ctx, dY):
        (X,) = ctx.saved_tensors
        p = ctx.projection
        d_a, d_b = adapter_grads(X, dY, p)
        w = dequantize(p)
        dX = empty_like_product((dY.shape[0], p.shape[1]))
        del w
        add_lora_input_grad(dX, dY, p)
        return dX, d_a, d_b, None


class LoraMlp(torch.autograd.Function):
    """fast_lora.py LoRA_MLP (lines 66-145): e, g [N, I]; h = swiglu(e, g) (swiglu.py line 44, new);
    i = down(h); saves X, e, g. Backward: DW = down's input gradient [N, I] (new), the SwiGLU backward writes
    h, df, de into DW, e, g; dX is written into X, and up's LoRA term, gate's product and LoRA term added."""

    @staticmethod
    def forward(ctx, X, ga, gb, ua, ub, da, db, projections):
        gate, up, down = projections
        ctx.projections = projections
        e = matmul_lora(X, gate)
        g = matmul_lora(X, up)
        h = empty_like_product(e.shape)
        i = matmul_lora(h, down)
        del h
        ctx.save_for_backward(X, e, g)
        return i

    @staticmethod
    def backward(ctx, dY):
        gate, up, down = ctx.projections
        X, e, g = ctx.saved_tensors
        w = dequantize(down)                                      # matmul_lora(dY, downW.t(), ...)
        DW = empty_like_product((dY.shape[0], down.shape[1]))
        del w
        add_lora_input_grad(DW, dY, down)
        h, df, de = DW, e, g                                      # swiglu_DWf_DW_dfg_kernel, in place
        grads_down = adapter_grads(h, dY, down)
        grads_up = adapter_grads(X, df, up)
        grads_gate = adapter_grads(X, de, gate)
        dX = X                                                    # torch.matmul(df, upW.t(), out=X)
        dequantize(up)                                            # upW, freed after the product
        add_lora_input_grad(dX, df, up)
        add_input_grad(dX, de, gate)
        add_lora_input_grad(dX, de, gate)
        del h, df, de, DW, e, g
        return (dX, *grads_gate, *grads_up, *grads_down, None)


class Layer(nn.Module):
    """models/llama.py LlamaDecoderLayer_fast_forward (lines 458-545) with LlamaAttention_fast_forward
    (lines 338-456): flash_attn_func on [b, s, heads, d] (line 432), K and V not expanded."""

    def __init__(self, a):
        super().__init__()
        h, d = a.hidden, a.head_dim or a.hidden // a.heads
        self.heads, self.kv_heads, self.d = a.heads, a.kv_heads, d
        self.input_norm = nn.Parameter(torch.ones(h, dtype=BF16), requires_grad=False)
        self.post_norm = nn.Parameter(torch.ones(h, dtype=BF16), requires_grad=False)
        self.q = Nf4Linear(a.heads * d, h, a.rank)
        self.k = Nf4Linear(a.kv_heads * d, h, a.rank)
        self.v = Nf4Linear(a.kv_heads * d, h, a.rank)
        self.o = Nf4Linear(h, a.heads * d, a.rank)
        self.gate = Nf4Linear(a.intermediate, h, a.rank)
        self.up = Nf4Linear(a.intermediate, h, a.rank)
        self.down = Nf4Linear(h, a.intermediate, a.rank)

    def forward(self, x):                   # x [b, s, h]
        b, s, h = x.shape
        residual = x
        n1 = RmsNorm.apply(x, self.input_norm).view(b * s, h)
        Q, K, V = LoraQkv.apply(n1, self.q.A, self.q.B, self.k.A, self.k.B, self.v.A, self.v.B,
                                (self.q, self.k, self.v))
        Q = Rope.apply(Q.view(b, s, self.heads, self.d))
        K = Rope.apply(K.view(b, s, self.kv_heads, self.d))
        V = V.view(b, s, self.kv_heads, self.d)
        A = FlashAttention.apply(Q, K, V).reshape(b * s, self.heads * self.d)
        o = LoraO.apply(A, self.o.A, self.o.B, self.o)
        x = residual + o.view(b, s, h)
        residual = x
        n2 = RmsNorm.apply(x, self.post_norm).view(b * s, h)
        i = LoraMlp.apply(n2, self.gate.A, self.gate.B, self.up.A, self.up.B, self.down.A, self.down.B,
                          (self.gate, self.up, self.down))
        return (residual + i.view(b, s, h),)


class OffloadedCheckpoint(torch.autograd.Function):
    """unsloth_zoo/gradient_checkpointing.py Unsloth_Offloaded_Gradient_Checkpointer (lines 136-164): the
    layer's input is copied to host memory (here a NumPy array, outside the traced allocator) and the layer
    runs under no_grad; backward copies it back, recomputes the layer with grad and runs its backward."""

    @staticmethod
    def forward(ctx, layer, x):
        ctx.host = x.detach().view(torch.int16).numpy().copy()
        ctx.layer = layer
        with torch.no_grad():
            return layer(x)[0]

    @staticmethod
    def backward(ctx, dY):
        x = torch.from_numpy(ctx.host).view(BF16).clone().requires_grad_(True)
        with torch.enable_grad():
            (out,) = ctx.layer(x)
        torch.autograd.backward(out, dY)
        return None, x.grad


class CutCrossEntropy(torch.autograd.Function):
    """cut-cross-entropy cce.py LinearCrossEntropyFunction with shift=True, filter_eps='auto', as
    unsloth_zoo loss_utils.py fused_linear_cross_entropy calls it (lines 141-166). Forward: the flat index of
    the labelled positions (utils.py _build_flat_valids), the fp32 log-sum-exp and logit average
    (cce_lse_forward.py), the fp32 dot (indexed_dot.py line 101); saves e, c, lse, the index, logit_avg.
    Backward: argsort(logit_avg) to int32, de and dc = zeros_like (cce_backward.py lines 268-269, dc even
    for a frozen head), int32 locks (lines 294-295)."""

    @staticmethod
    def forward(ctx, e, c):
        N, V = e.shape[0], c.shape[0]
        labelled = empty_like_product((1, N - 1), torch.bool)  # targets[..., 1:] != ignore_index
        nz = empty_like_product((N - 1, 2), torch.int64)      # .nonzero()
        del labelled
        valids = nz.to(torch.int32)
        del nz
        valids = valids.sum(1)
        lse = empty_like_product((N - 1,), F32)
        locks = empty_like_product(((N + 127) // 128,), torch.int32)
        logit_avg = empty_like_product((V,), F32)
        del locks
        neg_dot = empty_like_product((N - 1,), F32)
        loss = neg_dot.mean()
        del neg_dot
        ctx.save_for_backward(e, c, lse, valids, logit_avg)
        return loss

    @staticmethod
    def backward(ctx, grad):
        e, c, lse, valids, logit_avg = ctx.saved_tensors
        order = torch.argsort(logit_avg).to(torch.int32)
        de = torch.zeros_like(e)
        dc = torch.zeros_like(c)
        locks_e = empty_like_product(((lse.shape[0] + 63) // 64, 64), torch.int32)
        locks_c = empty_like_product(((c.shape[0] + 63) // 64, 64), torch.int32)
        del order, locks_e, locks_c
        return de, dc


class UnslothLlama(nn.Module):
    """unsloth/models/llama.py LlamaModel_fast_forward (lines 546-892) and CausalLM_fast_forward
    (lines 950-1110) for a batch of more than 1,024 tokens with labels: embeddings, the layers under the
    offloaded checkpointer, the final norm, Cut Cross-Entropy on the head's bf16 weight (no logits)."""

    def __init__(self, a):
        super().__init__()
        d = a.head_dim or a.hidden // a.heads
        self.embed = nn.Parameter(torch.zeros(a.vocab, a.hidden, dtype=BF16), requires_grad=False)
        self.layers = nn.ModuleList(Layer(a) for _ in range(a.layers))
        self.norm = nn.Parameter(torch.ones(a.hidden, dtype=BF16), requires_grad=False)
        self.head = nn.Parameter(torch.zeros(a.vocab, a.hidden, dtype=BF16), requires_grad=False)
        # LlamaExtendedRotaryEmbedding (lines 1244-1338): cos and sin for min(32768, max positions) tokens in
        # the default dtype (fp32), grown in 8,192-token steps in bf16 past that.
        rope = 32768 if a.seq <= 32768 else -(-a.seq // 8192) * 8192
        dtype = F32 if a.seq <= 32768 else BF16
        self.register_buffer("cos", torch.zeros(rope, d, dtype=dtype))
        self.register_buffer("sin", torch.zeros(rope, d, dtype=dtype))

    def forward(self, input_ids, labels):
        x = nn.functional.embedding(input_ids, self.embed).requires_grad_(True)
        for layer in self.layers:
            x = OffloadedCheckpoint.apply(layer, x)
        b, s, h = x.shape
        x = RmsNorm.apply(x, self.norm).view(b * s, h)
        return SimpleNamespace(loss=CutCrossEntropy.apply(x, self.head))   # as record_trace.py reads a model's output


def build(args):
    return UnslothLlama(args)
