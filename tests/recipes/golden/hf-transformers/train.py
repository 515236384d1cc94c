# Wingspan recipe for Hugging Face transformers + TRL + PEFT: Llama 3.1 8B, qlora r16 alpha 32 nf4-dq, bf16-mixed, adamw, seq 1024 x batch 1 x accum 4, checkpointing on, attention sdpa.
#
# Key names and values read from the frameworks' own sources:
#   transformers TrainingArguments: optim, lr_scheduler_type, warmup_steps, bf16, fp16, use_cpu,
#     gradient_checkpointing, include_num_input_tokens_seen
#     (https://github.com/huggingface/transformers/blob/main/src/transformers/training_args.py).
#     transformers 5 dropped warmup_ratio: warmup_steps below 1 is the ratio (training_args.py,
#     the warmup_steps field and get_warmup_steps); bf16 without a bf16 GPU is refused unless
#     use_cpu is set (_validate_args: "Your setup doesn't support bf16/gpu"), so a machine without
#     CUDA trains on the CPU instead of stopping there
#   transformers from_pretrained: dtype (torch_dtype before transformers 4.56), attn_implementation ("eager" | "sdpa" | "flash_attention_2"),
#     quantization_config=BitsAndBytesConfig(load_in_4bit, bnb_4bit_quant_type, bnb_4bit_use_double_quant,
#     bnb_4bit_compute_dtype, load_in_8bit)
#     (https://github.com/huggingface/transformers/blob/main/src/transformers/utils/quantization_config.py)
#   TRL SFTConfig / SFTTrainer: max_length (called max_seq_length before TRL 0.16), peft_config, callbacks
#     (https://github.com/huggingface/trl/blob/main/trl/trainer/sft_config.py)
#   PEFT LoraConfig: r, lora_alpha, lora_dropout, target_modules, task_type
#     (https://github.com/huggingface/peft/blob/main/src/peft/tuners/lora/config.py)
#
# Run it watched:  wingspan watch --plan predicted.json -- python3 train.py
import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig
from trl import SFTConfig, SFTTrainer
from peft import LoraConfig

from wingspan_reporter import Reporter, hf_callback

reporter = Reporter(framework="hf-transformers")


def train():
    model = AutoModelForCausalLM.from_pretrained(
        "meta-llama/Llama-3.1-8B",
        dtype=torch.bfloat16,
        attn_implementation="sdpa",
        quantization_config=BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16,
        ),
    )
    tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-3.1-8B")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token

    # Chat data: one {"messages": [{"role": ..., "content": ...}, ...]} object per line.
    dataset = load_dataset("json", data_files="data/train.jsonl", split="train")

    config = SFTConfig(
        output_dir="output",
        max_length=1024,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=4,
        gradient_checkpointing=True,
        optim="adamw_torch",
        torch_compile=False,
        learning_rate=0.0002,
        lr_scheduler_type="cosine",
        warmup_steps=0.03,
        num_train_epochs=1,
        max_steps=-1,
        bf16=True,
        fp16=False,
        use_cpu=not torch.cuda.is_available(),
        logging_steps=1,
        save_strategy="epoch",
        include_num_input_tokens_seen=True,
        report_to="none",
        seed=42,
    )
    peft_config = LoraConfig(
        r=16,
        lora_alpha=32,
        lora_dropout=0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        bias="none",
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[hf_callback(reporter)],
    )
    trainer.train()
    trainer.save_model("output")


if __name__ == "__main__":
    reporter.run(train)
