"""TRL's GRPOTrainer (fp32, CPU, transformers' generate) against the planner's components for the same
setup, term by term (issue 31), as check_trl_dpo_terms.py does for DPO:

  parameters   frozen base and adapters (LoRA), or every weight (full);
  reference    none with beta 0 (TRL 1.16's default: grpo_config.py "the reference model is not
               loaded"), a copy for a full fine-tune with beta 0.04 (grpo_trainer.py __init__);
  KV cache     what transformers' generate holds for the B·G sequences: the cache handed to the
               decoder's forwards (a forward pre-hook), every layer's keys and values, at its largest;
  activations  what the policy's forward over the B·G prompt + completion rows saves for backward
               (saved-tensor hooks around compute_loss, unique storages, parameters excluded);
  logits       none kept (TRL 1.16's fused LM head, as for DPO): its tile, and its forward and backward
               peaks against the plan's logits_loss to the byte (trl_terms.check_common).

The real prompt and completion lengths come from the batch TRL scores; the plan is asked for them.
usage: check_trl_grpo_terms.py WINGSPAN_BIN SOURCE_DIR
"""
import json
import os
import sys

import torch

from trl_terms import (check_activations, check_common, finish, instrument, parameters, plan,
                       report, sample_rows, start, train_profiled)

WINGSPAN, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
GENERATIONS, COMPLETION = 4, 16


def cache_bytes(cache):
    """Bytes of a transformers Cache's keys and values (the layered Cache of transformers 5)."""
    total = 0
    for layer in getattr(cache, "layers", []):
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


def reward(prompts, completions, answer, **kwargs):
    return [1.0 if str(a) in c else 0.0 for c, a in zip(completions, answer)]


def trl_step(model_dir, work, method, beta):
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    config = GRPOConfig(output_dir=os.path.join(work, "out"), num_generations=GENERATIONS,
                        per_device_train_batch_size=GENERATIONS, max_completion_length=COMPLETION, beta=beta,
                        gradient_checkpointing=False, use_cpu=True, bf16=False, max_steps=1, logging_steps=1,
                        save_strategy="no", report_to="none", seed=0, learning_rate=1e-3, dataloader_num_workers=0)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config,
                          train_dataset=Dataset.from_list(sample_rows(SOURCE, "prompts.jsonl", 4)),
                          processing_class=tokenizer, peft_config=lora if method == "lora" else None)
    m = parameters(trainer)
    m["vocab"] = trainer.model.get_output_embeddings().weight.shape[0]
    m["kv"] = 0

    def see_cache(module, args, kwargs, output):
        # transformers 5.25 passes it as `cache` (earlier releases: `past_key_values`).
        cache = kwargs.get("cache", kwargs.get("past_key_values"))
        if cache is not None and not torch.is_grad_enabled():
            m["kv"] = max(m["kv"], cache_bytes(cache))

    decoder = trainer.model.get_base_model().model if method == "lora" else trainer.model.model
    decoder.register_forward_hook(see_cache, with_kwargs=True)   # after the forward: its token appended
    instrument(trainer, m, lambda inputs: (inputs["prompt_ids"].shape[0], inputs["prompt_ids"].shape[1],
                                           inputs["completion_ids"].shape[1]))
    m["scored"] = lambda: m["shape"][0] * m["shape"][2]   # the completions' positions (labels not -100)
    train_profiled(trainer, m)
    return m


def check(model_dir, work, method, beta):
    m = trl_step(model_dir, work, method, beta)
    rows, prompt, completion = m["shape"]
    seq = prompt + completion
    p = plan(WINGSPAN, model_dir, method, ["--objective", "grpo", "--batch", str(rows // GENERATIONS),
                                           "--generations", str(GENERATIONS), "--prompt-length", str(prompt),
                                           "--completion-length", str(completion), "--beta", str(beta)])
    print(json.dumps({"method": method, "beta": beta, "shape": {"rows": rows, "prompt": prompt, "completion": completion,
                                                                "vocab": m["vocab"]}, "objective": p["objective_in_force"]}))
    check_common(m, p, method, m["vocab"], rows, seq, m["scored"]())
    # KV cache: generate feeds every token but the last sampled one, so it holds prompt + completion - 1
    # positions where the plan counts prompt + completion: 1/(P + C) under, the stated tolerance.
    # (transformers 5.25 allocates keys and values as the sequence grows, no static cache.)
    report("kv_cache (generation)", m["kv"], p["component_maxima"].get("kv_cache", 0), 1.0 / seq,
           "the generation cache's keys and values after the decoder's forwards, at their largest, fp32")
    # Activations. The plan repeats K and V to every query head, as transformers does for a padded batch
    # (integrations/sdpa_attention.py lines 120-128: repeat_kv with an attention mask). This batch is one
    # prompt whose four completions all run to max_completion_length: no padding, so masking_utils drops the
    # mask and SDPA gets the grouped K/V (enable_gqa): the saved k and v are [rows, kv_heads, s, head_dim].
    # That repeat, 2 · layers · rows · s · (q_dim - kv_dim) · 4 B, is taken off the plan when the saved
    # keys have kv_heads (the hooks see them). What is left, 0.2 %: the plan's final norm output and int64
    # ids/labels (bs·(h·4 + 16) B) against what TRL's head and GRPO loss save instead (the [rows·(s-1), h]
    # hidden copy, int64 targets, fp32 log_z and entropy, bool masks, the per-completion-token loss
    # tensors): the run +496 B over the plan in 1,214,704 B (LoRA), +2,108 B in 1,303,900 B (full, 0.16 %).
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    grouped = any(dtype == "torch.float32" and len(shape) == 4 and shape[1] == cfg["num_key_value_heads"]
                  and shape[2] == seq and shape[3] == head_dim for _, shape, dtype in m["saved"].values())
    repeat = 2 * cfg["num_hidden_layers"] * rows * seq * head_dim * (
        cfg["num_attention_heads"] - cfg["num_key_value_heads"]) * 4 if grouped else 0
    check_activations(m, p, 0.002, repeat, "; the plan less the K/V repeat an unpadded batch skips (%d B)" % repeat)


def main():
    work, model_dir = start("trl-grpo-terms", SOURCE)
    for method, beta in (("lora", 0.0), ("full", 0.04)):
        check(model_dir, work, method, beta)
    finish(work)


if __name__ == "__main__":
    main()
