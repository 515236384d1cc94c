"""Checks a recipe folder written by `wingspan recipe` without the framework installed: every
Python file compiles, every YAML file parses, and the framework's own keys hold the plan's
values (read back from predicted.json's "setup"). Prints one line per check; exits 1 on the
first mismatch. Usage: check_recipe.py FRAMEWORK RECIPE_DIR"""
import glob
import json
import os
import py_compile
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recipe_checks import calls, expect, failures  # noqa: E402

framework, folder = sys.argv[1], sys.argv[2]
predicted = json.load(open(os.path.join(folder, "predicted.json")))
setup = predicted["setup"]

ROLE_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj",
              "down": "down_proj"}
roles = setup["lora_targets"].split(",") if setup["lora_targets"] != "all" else list(ROLE_NAMES)
hf_targets = [ROLE_NAMES[r] for r in roles]
lora = setup["method"] in ("lora", "qlora")
quant4 = setup["quantization"] in ("nf4", "nf4-dq")


def dig(d, path):
    for key in path.split("."):
        d = d[int(key)] if isinstance(d, list) else d[key]
    return d


for py in glob.glob(os.path.join(folder, "*.py")):
    py_compile.compile(py, doraise=True)
    print("ok   compiles: " + os.path.basename(py))
configs = {}
for y in glob.glob(os.path.join(folder, "*.yaml")):
    configs[os.path.basename(y)] = yaml.safe_load(open(y))
    print("ok   parses: " + os.path.basename(y))


seq, batch, accum = setup["seq_len"], setup["micro_batch"], setup["grad_accum"]
rank, alpha, dropout = setup["lora_rank"], setup["lora_alpha"], setup["lora_dropout"]
ckpt = setup["grad_checkpointing"]
optim_hf = {"adamw": "adamw_torch", "adamw8bit": "adamw_bnb_8bit", "paged-adamw8bit": "paged_adamw_8bit"}[setup["optimizer"]]
attn_hf = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}[setup["attention"]]

if framework == "hf-transformers":
    # TRL's own CLI keys (ModelConfig + SFTConfig) in config.yaml, parsed by train.py.
    cfg = configs["config.yaml"]
    expect("max_length", cfg["max_length"], seq)
    expect("per_device_train_batch_size", cfg["per_device_train_batch_size"], batch)
    expect("gradient_accumulation_steps", cfg["gradient_accumulation_steps"], accum)
    expect("optim", cfg["optim"], optim_hf)
    expect("bf16", cfg["bf16"], setup["precision"] == "bf16-mixed")
    expect("attn_implementation", cfg["attn_implementation"], attn_hf)
    expect("gradient_checkpointing", cfg["gradient_checkpointing"], ckpt)
    expect("use_peft", cfg.get("use_peft", False), lora)
    if lora:
        expect("lora_r", cfg["lora_r"], rank)
        expect("lora_alpha", cfg["lora_alpha"], alpha)
        expect("lora_dropout", cfg["lora_dropout"], dropout)
        expect("lora_target_modules", cfg["lora_target_modules"], hf_targets)
    expect("load_in_4bit", cfg.get("load_in_4bit", False), quant4)
    if quant4:
        expect("bnb_4bit_quant_type", cfg["bnb_4bit_quant_type"], "nf4")
        expect("use_bnb_nested_quant", cfg["use_bnb_nested_quant"], setup["quantization"] == "nf4-dq")
    c = calls(os.path.join(folder, "train.py"))
    expect("SFTTrainer callbacks", c["SFTTrainer"]["callbacks"], "[hf_callback(reporter)]")
    expect("SFTTrainer peft_config", c["SFTTrainer"]["peft_config"], "get_peft_config(model_config)")
elif framework == "unsloth":
    # Unsloth has no config format: config.yaml holds each call's keyword arguments, train.py passes them on.
    cfg = configs["config.yaml"]
    c = calls(os.path.join(folder, "train.py"))
    sft = cfg["sft_config"]
    expect("sft_config.max_length", sft["max_length"], seq)
    expect("sft_config.per_device_train_batch_size", sft["per_device_train_batch_size"], batch)
    expect("sft_config.gradient_accumulation_steps", sft["gradient_accumulation_steps"], accum)
    expect("sft_config.optim", sft["optim"], optim_hf)
    expect("sft_config.bf16", sft["bf16"], setup["precision"].startswith("bf16"))
    expect("SFTTrainer callbacks", c["SFTTrainer"]["callbacks"], "[hf_callback(reporter)]")
    expect("from_pretrained(**load)", c["from_pretrained"][None], "load")
    fp = cfg["from_pretrained"]
    expect("from_pretrained.max_seq_length", fp["max_seq_length"], seq)
    expect("from_pretrained.load_in_4bit", fp["load_in_4bit"], quant4)
    expect("get_peft_model only for LoRA", "get_peft_model" in cfg, lora)
    if lora:
        peft = cfg["get_peft_model"]
        expect("get_peft_model.r", peft["r"], rank)
        expect("get_peft_model.lora_alpha", peft["lora_alpha"], alpha)
        expect("get_peft_model.target_modules", peft["target_modules"], hf_targets)
        expect("get_peft_model.use_gradient_checkpointing", peft["use_gradient_checkpointing"],
               "unsloth" if ckpt else False)
elif framework == "torchtune":
    cfg = configs["config.yaml"]
    tt_names = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}
    if lora:
        expect("model._component_ (LoRA builder)", dig(cfg, "model._component_").rsplit(".", 1)[1].startswith("lora_"), True)
        expect("model.lora_rank", dig(cfg, "model.lora_rank"), rank)
        expect("model.lora_alpha", dig(cfg, "model.lora_alpha"), alpha)
        expect("model.lora_attn_modules", dig(cfg, "model.lora_attn_modules"), [tt_names[r] for r in roles if r in tt_names])
        expect("model.apply_lora_to_mlp", dig(cfg, "model.apply_lora_to_mlp"), any(r in roles for r in ("gate", "up", "down")))
        expect("model.quantize_base", dig(cfg, "model.quantize_base"), setup["method"] == "qlora")
    expect("tokenizer.max_seq_len", dig(cfg, "tokenizer.max_seq_len"), seq)
    expect("batch_size", cfg["batch_size"], batch)
    expect("gradient_accumulation_steps", cfg["gradient_accumulation_steps"], accum)
    expect("enable_activation_checkpointing", cfg["enable_activation_checkpointing"], ckpt)
    expect("metric_logger._component_", dig(cfg, "metric_logger._component_"), "wingspan_reporter.TorchtuneMetricLogger")
    expect("dataset.conversation_column", dig(cfg, "dataset.conversation_column"), "messages")
elif framework == "mlx-lm":
    cfg = configs["lora_config.yaml"]
    expect("fine_tune_type", cfg["fine_tune_type"], "lora" if lora else "full")
    expect("batch_size", cfg["batch_size"], batch)
    expect("grad_accumulation_steps", cfg["grad_accumulation_steps"], accum)
    expect("max_seq_length", cfg["max_seq_length"], seq)
    expect("grad_checkpoint", cfg["grad_checkpoint"], ckpt)
    layers = setup.get("lora_layers", 0)
    expect("num_layers", cfg["num_layers"], layers if 0 < layers < predicted["model"]["config"]["num_hidden_layers"] else -1)
    if lora:
        expect("lora_parameters.rank", dig(cfg, "lora_parameters.rank"), rank)
        expect("lora_parameters.scale", dig(cfg, "lora_parameters.scale"), alpha / rank)
        mlx_names = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
                     "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
        expect("lora_parameters.keys", dig(cfg, "lora_parameters.keys"), [mlx_names[r] for r in roles])
    steps = cfg["lr_schedule"]["arguments"][1] if cfg.get("lr_schedule") else cfg["iters"] // accum
    expect("iters counts batches: optimizer steps × accumulation", cfg["iters"], steps * accum)
    data = os.path.join(folder, cfg["data"])
    expect("data folder has train.jsonl and valid.jsonl",
           all(os.path.isfile(os.path.join(data, f)) for f in ("train.jsonl", "valid.jsonl")), True)
elif framework == "axolotl":
    cfg = configs["config.yaml"]
    expect("adapter", cfg.get("adapter"), setup["method"] if lora else None)
    if lora:
        expect("lora_r", cfg["lora_r"], rank)
        expect("lora_alpha", cfg["lora_alpha"], alpha)
        expect("lora_dropout", cfg["lora_dropout"], dropout)
        expect("lora_target_modules", cfg["lora_target_modules"], hf_targets)
    expect("load_in_4bit", cfg["load_in_4bit"], quant4)
    if quant4:
        expect("bnb_config_kwargs.bnb_4bit_use_double_quant", dig(cfg, "bnb_config_kwargs.bnb_4bit_use_double_quant"),
               setup["quantization"] == "nf4-dq")
    expect("sequence_len", cfg["sequence_len"], seq)
    expect("micro_batch_size", cfg["micro_batch_size"], batch)
    expect("gradient_accumulation_steps", cfg["gradient_accumulation_steps"], accum)
    expect("optimizer", cfg["optimizer"], optim_hf)
    expect("gradient_checkpointing", cfg["gradient_checkpointing"], ckpt)
    expect("sdp_attention", cfg["sdp_attention"], setup["attention"] == "sdpa")
    expect("flash_attention", cfg["flash_attention"], setup["attention"] == "flash")
    expect("plugins", cfg["plugins"], ["wingspan_reporter.AxolotlReporterPlugin"])
    expect("datasets.0.field_messages", dig(cfg, "datasets.0.field_messages"), "messages")
elif framework == "llama-factory":
    cfg = configs["config.yaml"]
    expect("finetuning_type", cfg["finetuning_type"], "lora" if lora else "full")
    if lora:
        expect("lora_rank", cfg["lora_rank"], rank)
        expect("lora_alpha", cfg["lora_alpha"], alpha)
        expect("lora_target", cfg["lora_target"], ",".join(hf_targets))
    expect("quantization_bit", cfg.get("quantization_bit"), 4 if quant4 else None)
    expect("cutoff_len", cfg["cutoff_len"], seq)
    expect("per_device_train_batch_size", cfg["per_device_train_batch_size"], batch)
    expect("gradient_accumulation_steps", cfg["gradient_accumulation_steps"], accum)
    expect("optim", cfg["optim"], optim_hf)
    expect("flash_attn", cfg["flash_attn"], {"eager": "disabled", "sdpa": "sdpa", "flash": "fa2"}[setup["attention"]])
    expect("disable_gradient_checkpointing", cfg["disable_gradient_checkpointing"], not ckpt)
    info = json.load(open(os.path.join(folder, "dataset_info.json")))
    expect("dataset_info names the config's dataset", cfg["dataset"] in info, True)
    expect("dataset file exists", os.path.isfile(os.path.join(folder, info[cfg["dataset"]]["file_name"])), True)
else:
    sys.exit("unknown framework " + framework)

if failures:
    sys.exit("%d mismatches: %s" % (len(failures), ", ".join(failures)))
print("all checks passed for " + framework)
