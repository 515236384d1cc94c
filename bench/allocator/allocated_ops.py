"""Operations that allocate what a GPU kernel allocates, without its arithmetic: a layer of an 8B model
runs on a laptop, and the allocation trace is the kernel's (record_trace.py, unsloth_step.py)."""
import torch

BF16 = torch.bfloat16


def empty_like_product(shape, dtype=BF16):
    t = torch.empty(shape, dtype=dtype)
    t.view(-1)[:1].zero_()
    return t


class FlashAttention(torch.autograd.Function):
    """flash_attn_func's tensors (flash_attn_interface.py, csrc/flash_attn/flash_api.cpp mha_fwd and mha_bwd):
    out [b,s,H,d] and an fp32 log-sum-exp [b,H,s] saved; backward dq, dk, dv (empty_like), fp32 softmax_d
    [b,H,s] and dq_accum [b,s,H,d], and for grouped heads dk, dv expanded to H heads, then summed."""

    @staticmethod
    def forward(ctx, q, k, v):
        out = empty_like_product(q.shape)
        lse = empty_like_product((q.shape[0], q.shape[2], q.shape[1]), torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        softmax_d = empty_like_product((q.shape[0], q.shape[2], q.shape[1]), torch.float32)
        dq_accum = empty_like_product(q.shape, torch.float32)
        if k.shape[2] != q.shape[2]:
            group = q.shape[2] // k.shape[2]
            grouped = k.shape[:3] + (group, k.shape[3])
            dk_expanded, dv_expanded = empty_like_product(q.shape), empty_like_product(q.shape)
            torch.sum(dk_expanded.view(grouped), 3, out=dk)
            torch.sum(dv_expanded.view(grouped), 3, out=dv)
            del dk_expanded, dv_expanded
        dq.copy_(dq_accum)
        del dq_accum, softmax_d
        return dq, dk, dv
