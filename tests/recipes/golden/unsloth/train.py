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
#
# Run it watched:  wingspan watch --plan predicted.json -- python3 train.py
from unsloth import FastLanguageModel  # first: Unsloth patches transformers and TRL on import

import torch
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

from wingspan_reporter import Reporter, hf_callback

reporter = Reporter(framework="unsloth")


def train():
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name="meta-llama/Llama-3.1-8B",
        max_seq_length=1024,
        dtype=torch.bfloat16,
        load_in_4bit=True,
        load_in_8bit=False,
        full_finetuning=False,
    )
    model = FastLanguageModel.get_peft_model(
        model,
        r=16,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        lora_alpha=32,
        lora_dropout=0,
        bias="none",
        use_gradient_checkpointing="unsloth",
        random_state=42,
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token

    # Chat data: one {"messages": [{"role": ..., "content": ...}, ...]} object per line.
    dataset = load_dataset("json", data_files="data/train.jsonl", split="train")

    trainer = SFTTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=dataset,
        args=SFTConfig(
            output_dir="output",
            max_length=1024,
            per_device_train_batch_size=1,
            gradient_accumulation_steps=4,
            optim="adamw_torch",
            learning_rate=0.0002,
            lr_scheduler_type="cosine",
            warmup_ratio=0.03,
            num_train_epochs=1,
            max_steps=-1,
            bf16=True,
            fp16=False,
            logging_steps=1,
            save_strategy="epoch",
            include_num_input_tokens_seen=True,
            report_to="none",
            seed=42,
        ),
        callbacks=[hf_callback(reporter)],
    )
    trainer.train()
    trainer.save_model("output")


if __name__ == "__main__":
    reporter.run(train)
