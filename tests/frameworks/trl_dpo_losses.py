#!/usr/bin/env python3
"""TRL's DPO loss, step by step, for a model folder and a preference JSONL: the curve wingspan-train's
DPO (issue 31) is compared with. Run with the frameworks venv's Python (scripts/venv.sh frameworks).

  trl_dpo_losses.py MODEL_DIR DATA.jsonl [--method lora|full] [--rank 16] [--alpha 32] [--lr 5e-3]
                    [--steps 24] [--batch 4] [--max-length 64] [--beta 0.1] [--seed 0] [--min-lr-ratio R]

Prints one JSON object per optimizer step: {"step", "loss", "reward_margin", "reward_accuracy"}
(TRL's logged loss, rewards/margins and rewards/accuracies), then {"done": true, "steps": N}.

Chosen to make the comparison like for like: fp32 on the CPU, the rows in file order (no shuffling:
TRL's sampler is replaced by a sequential one), AdamW at a constant learning rate without warmup (or, with --min-lr-ratio R, wingspan-train's schedule:
cosine from the peak at step 1 down to R × peak at the last step, trainer/src/run/run_steps.cpp lr_at),
no weight decay, no dropout, gradient checkpointing off, TRL's sigmoid loss. DATA holds
{"prompt", "chosen", "rejected"} rows (text, TRL's standard layout).
"""
import argparse
import json
import math
import os
import sys

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("data")
    ap.add_argument("--method", choices=["lora", "full"], default="lora")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--alpha", type=float, default=32)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-lr-ratio", type=float, default=None)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from datasets import load_dataset
    from peft import LoraConfig
    from torch.utils.data import SequentialSampler
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, ProgressCallback, TrainerCallback
    from trl import DPOConfig, DPOTrainer

    torch.manual_seed(a.seed)
    model = AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=torch.float32, attn_implementation="sdpa")
    tokenizer = AutoTokenizer.from_pretrained(a.model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    data = load_dataset("json", data_files=a.data, split="train")
    config = DPOConfig(output_dir=os.path.join(os.getcwd(), "trl-dpo-losses-out"), max_length=a.max_length, beta=a.beta,
                       loss_type=["sigmoid"], per_device_train_batch_size=a.batch, gradient_accumulation_steps=1,
                       gradient_checkpointing=False, learning_rate=a.lr, lr_scheduler_type="constant",
                       warmup_steps=0, weight_decay=0.0, optim="adamw_torch", max_steps=a.steps, logging_steps=1,
                       save_strategy="no", report_to="none", use_cpu=True, bf16=False, fp16=False, seed=a.seed,
                       data_seed=a.seed, dataloader_num_workers=0, disable_dropout=True)
    lora = None
    if a.method == "lora":
        lora = LoraConfig(r=a.rank, lora_alpha=a.alpha, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])

    class Sequential(DPOTrainer):
        def _get_train_sampler(self, *args, **kwargs):
            return SequentialSampler(self.train_dataset)

        def create_scheduler(self, num_training_steps, optimizer=None):
            if a.min_lr_ratio is None:
                return super().create_scheduler(num_training_steps, optimizer)
            # LambdaLR's factor k is the (k+1)-th update's: wingspan-train's lr_at(step = k + 1) without warmup.
            r, total = a.min_lr_ratio, num_training_steps
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                optimizer or self.optimizer,
                lambda k: r + (1 - r) * 0.5 * (1 + math.cos(math.pi * min(k + 1, total) / total)))
            return self.lr_scheduler

    class Print(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                print(json.dumps({"step": state.global_step, "loss": float(logs["loss"]),
                                  "reward_margin": float(logs.get("rewards/margins", "nan")),
                                  "reward_accuracy": float(logs.get("rewards/accuracies", "nan"))}), flush=True)

    trainer = Sequential(model=model, args=config, train_dataset=data, processing_class=tokenizer, peft_config=lora,
                         callbacks=[Print()])
    for chatty in (PrinterCallback, ProgressCallback):   # stdout carries the JSON lines only
        trainer.remove_callback(chatty)
    trainer.train()
    print(json.dumps({"done": True, "steps": trainer.state.global_step}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
