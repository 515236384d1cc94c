#!/usr/bin/env python3
"""The peer a user would pick: the same Llama-family model and step trained with Hugging Face
transformers + PEFT on the pinned torch 2.x (scripts/requirements/frameworks.txt), the way a TRL/HF
Trainer run on a CPU does it: SDPA attention, torch.autocast("cpu", bfloat16) for bf16-mixed
(transformers' Trainer with bf16=True and use_cpu=True wraps the forward in exactly that),
fp32 master weights, torch.optim.AdamW, gradient clipping at 1.0. Prints one JSON line in
reference_train.py's format, for bench_trainer.py --reference transformers.

    build/venv-frameworks/bin/python peer_transformers.py --config config.json --method lora \
        --seq 256 --batch 4 --steps 3 --threads 2 --precision bf16-mixed
"""
import json
import resource
import time

import torch

from reference_train import step_arguments   # the same options as the PyTorch reference

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def build_model(config, method, rank, alpha):
    from transformers import LlamaConfig, LlamaForCausalLM
    keys = {k: v for k, v in config.items() if k not in ("architectures", "torch_dtype", "dtype")}
    model = LlamaForCausalLM(LlamaConfig(**keys, attn_implementation="sdpa"))
    model.config.use_cache = False
    if method == "full":
        return model
    from peft import LoraConfig, get_peft_model
    return get_peft_model(model, LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=TARGETS,
                                            bias="none", task_type="CAUSAL_LM"))


def main():
    a = step_arguments().parse_args()
    if a.method == "qlora":
        raise SystemExit("peer_transformers.py: QLoRA needs bitsandbytes' 4-bit kernels, which have no CPU build "
                         "in the pinned environment; compare QLoRA with --skip-reference qlora")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    with open(a.config) as f:
        config = json.load(f)
    model = build_model(config, a.method, a.rank, int(a.alpha))
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    bf16 = a.precision == "bf16-mixed"
    times, losses = [], []
    for _ in range(a.steps):
        ids = torch.randint(0, min(config["vocab_size"], 260), (a.batch, a.seq))
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    import transformers
    print(json.dumps({"step_times": times, "losses": losses,
                      "rss_peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "trainable": sum(p.numel() for p in params), "torch": torch.__version__,
                      "transformers": transformers.__version__, "precision": a.precision}))


if __name__ == "__main__":
    main()
