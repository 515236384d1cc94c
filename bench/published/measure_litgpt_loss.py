"""LitGPT's loss under Lightning Fabric, measured on the CPU against the planner's litgpt profile
(bench/published's LitGPT rows; profile keys loss.logits_fp32, loss.shifts_logits_copy,
loss.previous_logits_held, loss.chunk_positions).

LitGPT's fine-tuning loop (litgpt/finetune/lora.py lines 355-359, 0.5.13) runs
    logits = model(input_ids, lm_head_chunk_size=128)
    logits[-1] = logits[-1][..., :-1, :]
    loss = chunked_cross_entropy(logits, targets[..., 1:])
    fabric.backward(loss / accumulation)
on a model that fabric.setup() wrapped: Fabric's precision plugin converts the returned list of 16-bit
chunks to fp32 (lightning fabric/wrappers.py _FabricModule.forward, plugins/precision/half.py
convert_output). This script runs that loop for real (LoRA on q and v, bf16-true, two micro-batches so
the second finds the first's logits still bound) and takes the step's peak from torch.profiler's
[memory] timeline, at two vocabulary sizes: the peak's growth per token and vocabulary entry is what
the loss holds at its largest moment. `wingspan plan --framework litgpt` for the same shapes gives the
planned figure (its logits_loss component). Exit 1 when they differ by more than 0.5 %.

Two shapes: 1 x 512 tokens (four head chunks of 128: the model's return, 4 + 2 + 4 B, and the loss's
backward, 8 B + two 4 B gradients of one chunk, 2 B per token here, both 10 B) and 2 x 256 (two chunks
of 2 x 128 tokens: the loss's backward, 8 + 4 = 12 B, is the most).

Setup (litgpt is not in the pinned venvs: its pins, huggingface-hub<1.4 and jsonargparse<=4.41,
conflict with transformers 5's; it imports fine beside them for this):
    build/venv-frameworks/bin/pip install --target build/litgpt-site --no-deps litgpt==0.5.13 \
        lightning==2.6.6 lightning-utilities==0.15.3 torchmetrics==1.9.0 jsonargparse==4.41.0 \
        typeshed-client==2.15.0 docstring-parser==0.18.0
    PYTHONPATH=build/litgpt-site build/venv-frameworks/bin/python bench/published/measure_litgpt_loss.py \
        build/bin/wingspan
"""
import json
import os
import subprocess
import sys
import tempfile

from profiler_peak import allocation_peak

VOCABS = (8192, 32768)
SHAPES = ((1, 512), (2, 256))
HIDDEN, LAYERS, HEADS, RANK = 256, 2, 4, 32


def measure(vocab, batch, seq, fabric_wrapped):
    """The peak of the second micro-batch's step above what was allocated before the first, in bytes."""
    import torch
    import lightning as L
    from litgpt.lora import GPT, Config, mark_only_lora_as_trainable
    from litgpt.utils import chunked_cross_entropy
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    cfg = Config(name="tiny", block_size=4096, vocab_size=vocab, padded_vocab_size=vocab, n_layer=LAYERS, n_head=HEADS,
                 n_query_groups=HEADS, n_embd=HIDDEN, rotary_percentage=1.0, parallel_residual=False, bias=False,
                 norm_class_name="RMSNorm", mlp_class_name="LLaMAMLP", intermediate_size=3 * HIDDEN, lora_r=RANK,
                 lora_alpha=16, lora_dropout=0.05, lora_query=True, lora_value=True)
    fabric = L.Fabric(accelerator="cpu", devices=1, precision="bf16-true")
    with fabric.init_module(empty_init=False):
        model = GPT(cfg)
    mark_only_lora_as_trainable(model)
    model = fabric.setup(model) if fabric_wrapped else model
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.max_seq_length = seq
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch, seq))
    state = {}

    def micro_batch():
        state["logits"] = model(x, lm_head_chunk_size=128)   # rebinds: the previous logits live until here
        logits = state["logits"]
        logits[-1] = logits[-1][..., :-1, :]
        loss = chunked_cross_entropy(logits, y[..., 1:])
        (loss / 2).backward()

    micro_batch()
    optimizer.step()        # AdamW's state exists from here on
    state.clear()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        micro_batch()
        micro_batch()
    return allocation_peak(prof)


def planned(wingspan, vocab, batch, seq):
    """The planner's logits_loss component for the same model and step (bytes)."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
              "intermediate_size": 3 * HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "num_key_value_heads": HEADS, "vocab_size": vocab, "max_position_embeddings": 4096,
              "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "config.json")
        with open(path, "w") as f:
            json.dump(config, f)
        out = subprocess.run([wingspan, "plan", "--config", path, "--framework", "litgpt", "--method", "lora",
                              "--seq", str(seq), "--batch", str(batch), "--grad-accum", "2", "--rank", str(RANK),
                              "--targets", "q,v", "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["component_maxima"]["logits_loss"]


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--one":   # one measurement in a fresh process
        print(measure(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "fabric"))
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    wingspan = os.path.abspath(sys.argv[1])
    failed = False
    for batch, seq in SHAPES:
        tokens = batch * seq
        per = {}
        for mode in ("fabric", "bare"):
            peaks = [int(subprocess.run([sys.executable, __file__, "--one", str(v), str(batch), str(seq), mode],
                                        check=True, capture_output=True, text=True).stdout.split()[-1]) for v in VOCABS]
            per[mode] = (peaks[1] - peaks[0]) / (tokens * (VOCABS[1] - VOCABS[0]))
        plan = [planned(wingspan, v, batch, seq) for v in VOCABS]
        plan_per = (plan[1] - plan[0]) / (tokens * (VOCABS[1] - VOCABS[0]))
        error = (plan_per - per["fabric"]) / per["fabric"]
        ok = abs(error) <= 0.005
        failed |= not ok
        print(json.dumps({"batch": batch, "seq": seq, "measured_bytes_per_token_vocab": round(per["fabric"], 4),
                          "measured_without_fabric": round(per["bare"], 4), "planned": round(plan_per, 4),
                          "error": f"{100 * error:+.2f} %", "ok": ok}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
