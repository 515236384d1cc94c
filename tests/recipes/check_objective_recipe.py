"""Checks a recipe of a non-SFT objective written by `wingspan recipe` (issue 31), without the
framework installed: the framework's own trainer and keys for the objective hold the plan's
values (predicted.json's "setup"), and the bundled data is in the layout that trainer reads.
Prints one line per check; exits 1 on a mismatch. Usage: check_objective_recipe.py FRAMEWORK RECIPE_DIR"""
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
objective = setup["objective"]["kind"]


rows = [json.loads(line) for line in open(os.path.join(folder, "data", "train.jsonl")) if line.strip()]
first = rows[0]
# The layouts TRL's trainers read (trl/data_utils.py), LLaMA-Factory's ranking / kto_tag columns,
# torchtune's ChosenRejectedToMessages.
layout = {"dpo": ["chosen", "prompt", "rejected"], "orpo": ["chosen", "prompt", "rejected"],
          "simpo": ["chosen", "prompt", "rejected"], "kto": ["completion", "label", "prompt"], "grpo": ["answer", "prompt"]}
if framework == "torchtune":
    expect("data: chat-format pairs", sorted(first), ["chosen", "rejected"])
    expect("data: chosen is a user + assistant conversation", [m["role"] for m in first["chosen"]], ["user", "assistant"])
else:
    expect("data: columns of the objective's layout", sorted(first), layout[objective])
if objective in ("dpo", "orpo", "simpo") and framework != "torchtune":
    expect("data: chosen differs from rejected in every row", all(r["chosen"] != r["rejected"] for r in rows), True)

seq = setup["seq_len"]
if framework == "hf-transformers":
    py = os.path.join(folder, "train.py")
    py_compile.compile(py, doraise=True)
    c = calls(py)
    config, trainer = {"dpo": ("DPOConfig", "DPOTrainer"), "orpo": ("ORPOConfig", "ORPOTrainer"),
                       "simpo": ("CPOConfig", "CPOTrainer"), "kto": ("KTOConfig", "KTOTrainer"),
                       "grpo": ("GRPOConfig", "GRPOTrainer")}[objective]
    expect("trainer", trainer in c, True)
    expect("no SFTTrainer", "SFTTrainer" in c, False)
    # The settings: config.yaml in the trainer's config keys and ModelConfig's, parsed by train.py.
    expect("config.yaml parsed as " + config, "HfArgumentParser((%s, ModelConfig))" % config in open(py).read(), True)
    cfg = yaml.safe_load(open(os.path.join(folder, "config.yaml")))
    expect(trainer + " callbacks", c[trainer]["callbacks"], "[hf_callback(reporter)]")
    expect("the trainer told by the file: ORPO's is_encoder_decoder", "is_encoder_decoder" in cfg, objective == "orpo")
    expect("the trainer told by the file: KTO's desirable_weight", "desirable_weight" in cfg, objective == "kto")
    expect(config + ".gradient_accumulation_steps", cfg["gradient_accumulation_steps"], setup["grad_accum"])
    if objective == "grpo":
        o = setup["objective"]
        expect("GRPOConfig.num_generations", cfg["num_generations"], o["generations"])
        expect("GRPOConfig.per_device_train_batch_size counts completions", cfg["per_device_train_batch_size"],
               setup["micro_batch"] * o["generations"])
        expect("GRPOConfig.max_completion_length", cfg["max_completion_length"], o["completion_len"] or 512)   # TRL 1.16 GRPOConfig (grpo_config.py line 494), the plan's default
        expect("GRPOConfig.beta", cfg["beta"], o["beta"])
        expect("GRPOConfig.use_vllm", cfg.get("use_vllm", False), o["vllm_share"] > 0)
        if o["vllm_share"] > 0:
            expect("GRPOConfig.vllm_gpu_memory_utilization", cfg["vllm_gpu_memory_utilization"], o["vllm_share"])
        expect("a reward function", c["GRPOTrainer"]["reward_funcs"], "answer_reward")
    else:
        o = setup["objective"]
        want_len = o["prompt_len"] + o["completion_len"] if o["prompt_len"] and o["completion_len"] else seq
        expect(config + ".max_length", cfg["max_length"], want_len)
        expect(config + ".per_device_train_batch_size", cfg["per_device_train_batch_size"], setup["micro_batch"])
        if objective in ("dpo", "kto"):
            expect(config + ".precompute_ref_log_probs", cfg["precompute_ref_log_probs"], o["reference"] == "precomputed")
        if objective == "simpo":
            expect("CPOConfig.loss_type", cfg["loss_type"], "simpo")
            expect("CPOConfig.cpo_alpha", cfg["cpo_alpha"], 0.0)
elif framework == "llama-factory":
    cfg = yaml.safe_load(open(os.path.join(folder, "config.yaml")))
    stage, loss = {"dpo": ("dpo", "sigmoid"), "orpo": ("dpo", "orpo"), "simpo": ("dpo", "simpo"), "kto": ("kto", None)}[objective]
    expect("stage", cfg["stage"], stage)
    expect("pref_loss", cfg.get("pref_loss"), loss)
    expect("pref_beta", cfg["pref_beta"], 0.1)
    expect("cutoff_len", cfg["cutoff_len"], seq)
    info = json.load(open(os.path.join(folder, "dataset_info.json")))
    entry = info[cfg["dataset"]]
    expect("dataset_info: one entry, the config's", list(info), [cfg["dataset"]])
    if objective == "kto":
        expect("dataset_info kto_tag column", entry["columns"].get("kto_tag"), "label")
    else:
        expect("dataset_info ranking", entry.get("ranking"), True)
        expect("dataset_info chosen/rejected columns", [entry["columns"]["chosen"], entry["columns"]["rejected"]],
               ["chosen", "rejected"])
elif framework == "torchtune":
    cfg = yaml.safe_load(open(os.path.join(folder, "config.yaml")))
    command = json.load(open(os.path.join(folder, "recipe.json")))["command"]
    expect("tune run lora_dpo_single_device", command[command.index("run") + 1], "lora_dpo_single_device")
    expect("loss._component_", cfg["loss"]["_component_"], "torchtune.rlhf.loss.DPOLoss")
    expect("dataset._component_", cfg["dataset"]["_component_"], "torchtune.datasets.preference_dataset")
    expect("tokenizer.max_seq_len", cfg["tokenizer"]["max_seq_len"], seq)
    expect("batch_size", cfg["batch_size"], setup["micro_batch"])
else:
    sys.exit("no objective recipes for " + framework)

if failures:
    sys.exit("%d mismatches: %s" % (len(failures), ", ".join(failures)))
print("all checks passed for %s %s" % (framework, objective))
