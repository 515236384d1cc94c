# Wingspan recipe for Hugging Face transformers + TRL + PEFT: Llama 3.1 8B, qlora r16 alpha 32 nf4-dq, bf16-mixed, adamw, seq 1024 x batch 1 x accum 4, checkpointing on, attention sdpa.
#
# The settings are in config.yaml, in TRL's own keys (ModelConfig + SFTConfig, as `trl sft --config`
# reads them); this script builds the model, the data and the trainer from them with TRL's helpers
# (trl/trainer/utils.py get_quantization_config, get_peft_config). bf16 without a bf16 GPU is refused
# by transformers unless use_cpu is set (training_args.py _validate_args: "Your setup doesn't support
# bf16/gpu"), so a machine without CUDA trains on the CPU instead of stopping there.
#
# Run it watched:  wingspan watch --plan predicted.json -- python3 train.py
import torch
import yaml
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, HfArgumentParser
from trl import ModelConfig, SFTConfig, SFTTrainer, get_peft_config, get_quantization_config

from wingspan_reporter import Reporter, hf_callback

reporter = Reporter(framework="hf-transformers")


def settings():
    """config.yaml as TRL's SFTConfig and ModelConfig."""
    with open("config.yaml", encoding="utf-8") as f:
        values = yaml.safe_load(f)
    values.setdefault("use_cpu", not torch.cuda.is_available())
    return HfArgumentParser((SFTConfig, ModelConfig)).parse_dict(values)


def train():
    config, model_config = settings()
    model = AutoModelForCausalLM.from_pretrained(
        model_config.model_name_or_path,
        dtype=getattr(torch, model_config.dtype),
        attn_implementation=model_config.attn_implementation,
        quantization_config=get_quantization_config(model_config),
    )
    tokenizer = AutoTokenizer.from_pretrained(model_config.model_name_or_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token

    # Chat data: one {"messages": [{"role": ..., "content": ...}, ...]} object per line.
    dataset = load_dataset("json", data_files="data/train.jsonl", split="train")

    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_config),
        callbacks=[hf_callback(reporter)],
    )
    trainer.train()
    trainer.save_model(config.output_dir)


if __name__ == "__main__":
    reporter.run(train)
