"""TRL's DPOTrainer (LoRA and full, fp32, CPU) against the planner's components for the same setup,
term by term (issue 31): what exists in one real training step, measured, beside `wingspan plan --json`.

  parameters   the policy's parameter storages: frozen base vs frozen_weights, trainable vs adapters;
  reference    the storages of trainer.ref_model besides the policy's (TRL: none for a PEFT policy,
               dpo_trainer.py __init__: ref_model None, the adapter disabled scores the reference;
               a whole copy for a full fine-tune);
  activations  what the policy's forward saves for backward: torch.autograd.graph.saved_tensors_hooks
               around compute_loss, unique storages, parameters excluded (the reference forward runs
               under no_grad and saves nothing);
  logits       tensors as wide as the vocabulary saved for backward (hooks above: none), the fused
               head's tile (TRL 1.16 trl/kernels/chunked_logprob.py mm_buf [<=4096, 32768]), and the
               head's forward and backward peaks (torch.profiler's allocator totals) against the plan's
               logits_loss, planned with the CPU's head (trl_terms.cpu_profiles), to the byte.

The step's real shape (2 × batch rows, padded length) is read from the batch TRL builds, and the
plan is asked for exactly that shape. Prints one JSON line per term, checks trl_dpo_losses.py on the
same model, and exits 1 when a term is out of its stated tolerance.

usage: check_trl_dpo_terms.py WINGSPAN_BIN SOURCE_DIR
"""
import json
import math
import os
import subprocess
import sys

import torch

from trl_terms import (check_activations, check_common, failures, finish, instrument, parameters,
                       plan, sample_rows, start, train_profiled)

WINGSPAN, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
BATCH = 2


def trl_step(model_dir, work, method):
    """One DPO step, instrumented; returns what it measured."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    config = DPOConfig(output_dir=os.path.join(work, "out"), max_length=64, per_device_train_batch_size=BATCH,
                       gradient_checkpointing=False, use_cpu=True, bf16=False, max_steps=1, logging_steps=1,
                       save_strategy="no", report_to="none", seed=0, learning_rate=1e-3, dataloader_num_workers=0)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    trainer = DPOTrainer(model=model, args=config, train_dataset=Dataset.from_list(sample_rows(SOURCE, "preference.jsonl", BATCH)),
                         processing_class=tokenizer, peft_config=lora if method == "lora" else None)
    m = parameters(trainer)
    m["vocab"] = trainer.model.get_output_embeddings().weight.shape[0]
    instrument(trainer, m, lambda inputs: (*inputs["input_ids"].shape, int(inputs["completion_mask"][:, 1:].sum())))
    train_profiled(trainer, m)
    return m


def check(model_dir, work, method):
    m = trl_step(model_dir, work, method)
    rows, seq, scored = m["shape"]
    p = plan(WINGSPAN, model_dir, method, ["--objective", "dpo", "--batch", str(rows // 2), "--seq", str(seq)])
    print(json.dumps({"method": method, "shape": {"rows": rows, "seq": seq, "vocab": m["vocab"]},
                      "objective": p["objective_in_force"]}))
    check_common(m, p, method, m["vocab"], rows, seq, scored)
    # Activations, 5 %: the plan models transformers' Llama layer as SFT runs it (norms, q/k/v, SDPA's
    # output and logsumexp, the MLP's inner tensors, LoRA's inputs) and its forward_end adds the
    # final norm's; TRL's fused head saves the final hidden states, per-token log-sum-exp and int64
    # targets in place of logits. The run is +2.2 % over the plan at 4 × 27 tokens (22,472 B, LoRA and
    # full alike): the padded pairs' SDPA gets a float mask [rows, 1, s, s] that two layers keep
    # (23,328 B; transformers masking_utils sdpa_mask, integrations/sdpa_attention.py), which the plan's
    # layer does not count (core/src/memory/memory_model.cpp), less 856 B of the head's per-token tensors.
    check_activations(m, p, 0.05)


def main():
    work, model_dir = start("trl-dpo-terms", SOURCE)
    for method in ("lora", "full"):
        check(model_dir, work, method)
    # trl_dpo_losses.py (the curve wingspan-train's DPO is compared with) on the same model: one JSON
    # line per step, the first at ln 2 (the policy is its own reference before its first update).
    data = os.path.join(work, "pairs.jsonl")
    with open(os.path.join(SOURCE, "resources", "sample-data", "preference.jsonl")) as src, open(data, "w") as dst:
        dst.writelines(src.readlines()[:12])
    r = subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "frameworks", "trl_dpo_losses.py"), model_dir, data,
                        "--steps", "3"], capture_output=True, text=True, cwd=work)
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    steps = [x for x in lines if "step" in x]
    ok = r.returncode == 0 and [x["step"] for x in steps] == [1, 2, 3] and abs(steps[0]["loss"] - math.log(2)) < 1e-6 \
        and lines[-1] == {"done": True, "steps": 3}
    print(json.dumps({"trl_dpo_losses.py": lines, "ok": ok}))
    if not ok:
        failures.append("trl_dpo_losses.py: " + r.stderr[-2000:])
    finish(work)


if __name__ == "__main__":
    main()
