# Wingspan recipe for Unsloth: Llama 3.1 8B, qlora r16 alpha 32 nf4-dq, bf16-mixed, adamw, seq 1024 x batch 1 x accum 4, checkpointing on, attention sdpa.
#
# Key names and values read from Unsloth's own source and documentation:
#   FastLanguageModel.from_pretrained: model_name, max_seq_length, dtype, load_in_4bit, load_in_8bit,
#     full_finetuning (https://github.com/unslothai/unsloth/blob/main/unsloth/models/loader.py)
#   FastLanguageModel.get_peft_model: r, target_modules, lora_alpha, lora_dropout, bias,
#     use_gradient_checkpointing ("unsloth" | True | False), random_state
#     (https://github.com/unslothai/unsloth/blob/main/unsloth/models/llama.py, https://docs.unsloth.ai)
#   Training: TRL's SFTTrainer / SFTConfig with transformers' TrainingArguments names (optim,
#     lr_scheduler_type, bf16, fp16, ...) (https://github.com/huggingface/trl/blob/main/trl/trainer/sft_config.py)
# The settings are in config.yaml (Unsloth has no config format of its own): each group there is
# the keyword arguments of the call it is named after.
#
# Run it watched:  wingspan watch --plan predicted.json -- python3 train.py
from unsloth import FastLanguageModel  # first: Unsloth patches transformers and TRL on import

import torch
import yaml
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

from wingspan_reporter import Reporter, hf_callback

reporter = Reporter(framework="unsloth")


def settings():
    """config.yaml: from_pretrained's, get_peft_model's and SFTConfig's keyword arguments."""
    with open("config.yaml", encoding="utf-8") as f:
        values = yaml.safe_load(f)
    load = dict(values["from_pretrained"])
    load["dtype"] = getattr(torch, load["dtype"])
    return load, values.get("get_peft_model"), SFTConfig(**values["sft_config"])


def train():
    load, peft, config = settings()
    model, tokenizer = FastLanguageModel.from_pretrained(**load)
    if peft:
        model = FastLanguageModel.get_peft_model(model, **peft)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token

    # Chat data: one {"messages": [{"role": ..., "content": ...}, ...]} object per line.
    dataset = load_dataset("json", data_files="data/train.jsonl", split="train")

    trainer = SFTTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=dataset,
        args=config,
        callbacks=[hf_callback(reporter)],
    )
    trainer.train()
    trainer.save_model(config.output_dir)


if __name__ == "__main__":
    reporter.run(train)
