// Each framework's config keys read into `wingspan plan` flags. The key names and the defaults
// assumed where a file is silent come from each framework's schema, cited at each reader.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "import/config_reader.hpp"
#include "wingspan/config_import.hpp"
#include "wingspan/errors.hpp"

namespace wingspan {

using nlohmann::json;
using config_reader::Reader;
using config_reader::text_of;

namespace {

// Module names as the frameworks spell them -> Wingspan's target roles.
const std::map<std::string, std::string> kTargetNames = {
    {"q_proj", "q"},     {"k_proj", "k"},   {"v_proj", "v"},       {"o_proj", "o"},         {"output_proj", "o"},
    {"gate_proj", "gate"}, {"up_proj", "up"}, {"down_proj", "down"}, {"w1", "gate"},        {"w3", "up"},
    {"w2", "down"},      {"dense", "o"},    {"self_attn.o_proj", "o"}, {"lm_head", "head"}};

// "q_proj", "self_attn.q_proj", "model.layers.0.mlp.w1" -> "q"/"gate"/...; "" when unknown.
std::string target_role(std::string name) {
    if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
    auto it = kTargetNames.find(name);
    return it == kTargetNames.end() ? std::string() : it->second;
}

// A list (or comma-separated text) of module names -> the --targets value ("all" stays all).
void read_targets(Reader& r, const std::string& key, const json& v) {
    std::vector<std::string> names;
    if (v.is_string()) {
        std::string s = v.get<std::string>();
        if (s == "all" || s == "all-linear") return r.flag(key, "--targets", "all");
        std::stringstream ss(s);
        for (std::string item; std::getline(ss, item, ',');) {
            item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
            if (!item.empty()) names.push_back(item);
        }
    } else if (v.is_array()) {
        for (const auto& x : v)
            if (x.is_string()) names.push_back(x.get<std::string>());
    }
    std::set<std::string> roles;
    std::vector<std::string> unknown;
    for (const auto& n : names) {
        const std::string role = target_role(n);
        if (role.empty()) unknown.push_back(n);
        else roles.insert(role);
    }
    if (!unknown.empty()) {
        std::string u;
        for (const auto& n : unknown) u += (u.empty() ? "" : ", ") + n;
        r.ignore(key + " (" + u + ")", "not a linear Wingspan models (q, k, v, o, gate, up, down, lm_head)");
    }
    if (roles.empty()) return;
    std::string list;
    for (const char* role : {"q", "k", "v", "o", "gate", "up", "down", "head"})
        if (roles.count(role)) list += (list.empty() ? "" : ",") + std::string(role);
    r.flag(key, "--targets", list);
}

// Modules trained in full beside the adapters: the embeddings and head train (with their
// optimizer state) when either is listed.
void read_modules_to_save(Reader& r, const std::string& key) {
    const json* v = r.get(key);
    if (!v) return;
    std::string s = v->dump();
    if (s.find("embed") != std::string::npos || s.find("lm_head") != std::string::npos || s.find("wte") != std::string::npos)
        r.flag(key, "--train-embeddings", "", "embeddings/head train in full with their optimizer state");
    else
        r.ignore(key, "modules other than the embeddings and head are not modelled");
}

std::string optimizer_from(const std::string& name) {
    std::string s = name;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (s.find("paged") != std::string::npos && s.find("8bit") != std::string::npos) return "paged-adamw8bit";
    if (s.find("paged") != std::string::npos && s.find("adam") != std::string::npos) return "paged-adamw";   // paged_adamw_32bit
    if (s.find("8bit") != std::string::npos) return "adamw8bit";
    if (s.find("adafactor") != std::string::npos) return "adafactor";
    if (s.find("sgd") != std::string::npos) return "sgd";
    if (s.find("adam") != std::string::npos) return "adamw";
    return "";
}

void read_optimizer(Reader& r, const std::string& key) {
    const json* v = r.get(key);
    if (!v || !v->is_string()) return;
    const std::string o = optimizer_from(v->get<std::string>());
    if (o.empty()) r.ignore(key + " (" + v->get<std::string>() + ")", "an optimizer Wingspan does not model: the plan's AdamW stands");
    else r.flag(key, "--optimizer", o);
}

// DeepSpeed by its config file's name (ds_z3_config.json, zero2.json): the stage is read from
// the name, not the file, which is not at hand.
void read_deepspeed(Reader& r, const std::string& key) {
    const json* v = r.get(key);
    if (!v) return;
    const std::string s = v->is_string() ? v->get<std::string>() : v->dump();
    static const std::regex stage(R"((?:z|zero|zero_stage"?\s*:\s*|stage"?\s*:\s*)([0-3]))", std::regex::icase);
    std::smatch m;
    if (!std::regex_search(s, m, stage)) return r.ignore(key, "no ZeRO stage in its name; give --sharding");
    const std::string z = m[1].str();
    if (z == "0") return r.note_read(key, "ZeRO-0: plain data parallel (give --devices N)");
    r.flag(key, "--sharding", "zero" + z, "stage read from the DeepSpeed config's name; give --devices N");
}

void read_precision(Reader& r, const std::string& bf16_key, const std::string& fp16_key) {
    const json* bf = r.get(bf16_key);
    const json* fp = r.get(fp16_key);
    if (bf && r.truthy(bf16_key)) r.flag(bf16_key, "--precision", "bf16-mixed");
    else if (fp && r.truthy(fp16_key)) r.flag(fp16_key, "--precision", "fp16-mixed");
    else if (bf && fp) r.flag(bf16_key + "/" + fp16_key, "--precision", "fp32", "both off");
}

// How batches are formed (`--padding`, used with --data): the first of `keys` the file sets, on,
// packs sequences into full --seq rows; off, or no key, leaves the framework's default `fallback`
// (core/src/import/data_lengths.cpp default_padding cites each framework's).
void read_padding(Reader& r, std::initializer_list<const char*> keys, const char* fallback, const std::string& why) {
    for (const char* k : keys) {
        if (!r.get(k)) continue;
        if (r.truthy(k)) return r.flag(k, "--padding", "packed", "sequences packed into full --seq rows");
        return r.flag(k, "--padding", fallback, "off: " + why);
    }
    r.assume(*keys.begin(), "--padding", fallback, why);
}

// A memory technique (issue 25) a framework switches with a key of its own: on is the plan flag.
void read_technique(Reader& r, const std::string& key, const std::string& flag, const std::string& why) {
    if (!r.get(key)) return;
    if (r.truthy(key)) r.flag(key, flag, "", why);
    else r.note_read(key, "off");
}

void model_flags(Reader& r, ConfigImport& out, const std::string& key, const ProfileLibrary* lib) {
    const json* v = r.get(key);
    if (!v || !v->is_string()) return;
    out.model = v->get<std::string>();
    if (lib) {
        if (const ModelProfile* m = bundled_model_for(*lib, out.model)) {
            r.flag(key, "--model", m->id, "bundled profile of " + out.model);
            return;
        }
    }
    r.flag(key, "--hf", out.model, "not bundled: read from the Hugging Face Hub or its cache");
}

// ---- axolotl: src/axolotl/utils/schemas/config.py (AxolotlInputConfig) and docs/config-reference.qmd ----
void read_axolotl(Reader& r, ConfigImport& out, const ProfileLibrary* lib) {
    model_flags(r, out, "base_model", lib);
    const json* adapter = r.get("adapter");
    const bool four = r.truthy("load_in_4bit"), eight = r.truthy("load_in_8bit");
    if (!adapter) r.flag("adapter", "--method", "full", "no adapter: every weight trains");
    else if (*adapter == "qlora" || four) r.flag("adapter", "--method", "qlora");
    else r.flag("adapter", "--method", "lora");
    if (four) r.flag("load_in_4bit", "--quant", r.truthy("bnb_config_kwargs.bnb_4bit_use_double_quant") ? "nf4-dq" : "nf4");
    else if (eight && adapter) {
        r.flag("load_in_8bit", "--method", "qlora", "LoRA on an 8-bit base");
        r.flag("load_in_8bit", "--quant", "int8");
    }
    r.count("lora_r", "--rank");
    if (const json* v = r.get("lora_alpha")) r.flag("lora_alpha", "--alpha", text_of(*v));
    if (const json* v = r.get("lora_dropout")) r.flag("lora_dropout", "--dropout", text_of(*v));
    if (r.truthy("lora_target_linear")) r.flag("lora_target_linear", "--targets", "all");
    else if (const json* v = r.get("lora_target_modules")) read_targets(r, "lora_target_modules", *v);
    read_modules_to_save(r, "lora_modules_to_save");
    if (r.truthy("peft_use_dora")) r.flag("peft_use_dora", "--dora", "");
    r.count("sequence_len", "--seq", "512", "axolotl's default sequence_len (src/axolotl/utils/schemas/config.py)");
    r.count("micro_batch_size", "--batch", "1", "axolotl's default micro_batch_size (schemas/training.py)");
    r.count("gradient_accumulation_steps", "--grad-accum");
    r.on_off("gradient_checkpointing", "--grad-checkpointing", "off", "axolotl's default (unset: off)");
    read_optimizer(r, "optimizer");
    read_technique(r, "torch_compile", "--compile", "torch.compile's fused kernels");
    read_technique(r, "activation_offloading", "--activation-offload", "checkpointed layer inputs in host RAM");
    read_precision(r, "bf16", "fp16");
    if (r.truthy("flash_attention") || (r.get("attn_implementation") && text_of(*r.get("attn_implementation")).find("flash") != std::string::npos))
        r.flag("flash_attention", "--attention", "flash");
    else if (r.truthy("sdp_attention")) r.flag("sdp_attention", "--attention", "sdpa");
    else if (r.truthy("eager_attention")) r.flag("eager_attention", "--attention", "eager");
    // axolotl: sample_packing packs; else pad_to_sequence_len pads every row to sequence_len; else
    // its collator pads each batch to its longest (docs/config-reference.qmd: sample_packing,
    // pad_to_sequence_len; utils/collators DataCollatorForSeq2Seq padding=True).
    if (!r.truthy("sample_packing") && r.truthy("pad_to_sequence_len"))
        r.flag("pad_to_sequence_len", "--padding", "max", "every row padded to sequence_len");
    else
        read_padding(r, {"sample_packing"}, "dynamic", "axolotl's default: no packing, each batch padded to its longest");
    read_deepspeed(r, "deepspeed");
    if (r.get("fsdp") || r.get("fsdp_config")) r.flag("fsdp", "--sharding", "fsdp", "give --devices N");
    r.assume("(framework)", "--framework", "hf-transformers", "axolotl trains through transformers' Trainer and PEFT");
}

// ---- LLaMA-Factory: src/llamafactory/hparams/{model_args,finetuning_args,data_args}.py ----
void read_llama_factory(Reader& r, ConfigImport& out, const ProfileLibrary* lib) {
    model_flags(r, out, "model_name_or_path", lib);
    const json* ft = r.get("finetuning_type");
    const std::string type = ft ? text_of(*ft) : "lora";
    if (!ft) out.defaults.push_back({"finetuning_type", "lora: LLaMA-Factory's default (finetuning_args.py)"});
    const auto bits = r.integer("quantization_bit");
    if (type == "full" || type == "freeze") r.flag("finetuning_type", "--method", "full", type == "freeze" ? "freeze tunes some layers in full: planned as full" : "");
    else r.flag("finetuning_type", "--method", bits ? "qlora" : "lora");
    if (bits && *bits == 4)
        r.flag("quantization_bit", "--quant", (!r.get("double_quantization") || r.truthy("double_quantization")) ? "nf4-dq" : "nf4",
               "bitsandbytes 4-bit; double_quantization defaults to true (model_args.py)");
    else if (bits && *bits == 8) r.flag("quantization_bit", "--quant", "int8");
    else if (bits) r.ignore("quantization_bit", std::to_string(*bits) + "-bit (hqq) is not modelled");
    r.count("lora_rank", "--rank", type == "lora" ? "8" : nullptr, "LLaMA-Factory's default lora_rank");
    if (const json* v = r.get("lora_alpha")) r.flag("lora_alpha", "--alpha", text_of(*v));
    else if (type == "lora") {
        const json* rank = r.get("lora_rank");
        r.assume("lora_alpha", "--alpha", std::to_string(2 * (rank ? (long long)rank->get<double>() : 8)),
                 "LLaMA-Factory's default: lora_rank × 2 (finetuning_args.py __post_init__)");
    }
    if (const json* v = r.get("lora_dropout")) r.flag("lora_dropout", "--dropout", text_of(*v));
    if (const json* v = r.get("lora_target")) read_targets(r, "lora_target", *v);
    else if (type == "lora") r.assume("lora_target", "--targets", "all", "LLaMA-Factory's default lora_target: all");
    read_modules_to_save(r, "additional_target");
    if (r.truthy("use_dora")) r.flag("use_dora", "--dora", "");
    r.count("cutoff_len", "--seq", "2048", "LLaMA-Factory's default cutoff_len (data_args.py)");
    r.count("per_device_train_batch_size", "--batch", "8", "transformers TrainingArguments' default");
    r.count("gradient_accumulation_steps", "--grad-accum");
    // LLaMA-Factory checkpoints unless told not to: model_args.py disable_gradient_checkpointing
    // (default False) and model/model_utils/checkpointing.py prepare_model_for_training.
    r.on_off("disable_gradient_checkpointing", "--grad-checkpointing", "on",
             "LLaMA-Factory turns gradient checkpointing on unless disable_gradient_checkpointing", true);
    read_optimizer(r, "optim");
    read_technique(r, "torch_compile", "--compile", "torch.compile's fused kernels");
    // model_args.py use_unsloth_gc: Unsloth's gradient checkpointing, the checkpoints in host RAM.
    read_technique(r, "use_unsloth_gc", "--activation-offload", "Unsloth's checkpointing keeps the checkpoints in host RAM");
    if (r.truthy("pure_bf16")) r.flag("pure_bf16", "--precision", "bf16", "weights, gradients and moments in bf16");
    else read_precision(r, "bf16", "fp16");
    if (const json* v = r.get("flash_attn")) {
        const std::string a = text_of(*v);
        if (a == "fa2" || a == "fa3") r.flag("flash_attn", "--attention", "flash");
        else if (a == "sdpa") r.flag("flash_attn", "--attention", "sdpa");
        else if (a == "disabled") r.flag("flash_attn", "--attention", "eager");
    }
    // LLaMA-Factory: packing / neat_packing (data_args.py; packing defaults to on for stage pt
    // only); otherwise its SFT collator pads each batch to its longest (data/collator.py).
    const json* stage = r.get("stage");
    if (!r.get("packing") && !r.get("neat_packing") && stage && text_of(*stage) == "pt")
        r.assume("packing", "--padding", "packed", "LLaMA-Factory packs pre-training (stage pt) unless packing: false");
    else if (r.truthy("neat_packing")) r.flag("neat_packing", "--padding", "packed", "sequences packed without cross-attention");
    else read_padding(r, {"packing"}, "dynamic", "LLaMA-Factory's default for SFT: no packing, each batch padded to its longest");
    read_deepspeed(r, "deepspeed");
    config_reader::read_llama_factory_objective(r);
    r.assume("(framework)", "--framework", "hf-transformers", "LLaMA-Factory trains through transformers' Trainer and PEFT");
}

// torchtune builders: "torchtune.models.llama3_1.lora_llama3_1_8b" -> "llama-3.1-8b" / "llama3.1-8b".
std::vector<std::string> torchtune_model_names(const std::string& component) {
    std::string b = component.substr(component.rfind('.') + 1);
    for (const char* p : {"qlora_", "lora_"})
        if (b.rfind(p, 0) == 0) b = b.substr(std::string(p).size());
    static const std::regex re(R"(^([a-z]+)([0-9]+)(?:_([0-9]+))?_([0-9]+(?:_[0-9]+)?)b$)");
    std::smatch m;
    if (!std::regex_match(b, m, re)) return {b};
    std::string version = m[2].str() + (m[3].matched ? "." + m[3].str() : "");
    std::string size = m[4].str();
    std::replace(size.begin(), size.end(), '_', '.');
    return {m[1].str() + "-" + version + "-" + size + "b", m[1].str() + version + "-" + size + "b"};
}

// ---- torchtune: recipes/configs/*.yaml and recipes/lora_finetune_single_device.py ----
void read_torchtune(Reader& r, ConfigImport& out, const ProfileLibrary* lib) {
    const json* comp = r.get("model._component_");
    const std::string c = comp ? text_of(*comp) : "";
    out.model = c;
    bool found = false;
    if (lib)
        for (const auto& name : torchtune_model_names(c))
            if (const ModelProfile* m = bundled_model_for(*lib, name)) {
                r.flag("model._component_", "--model", m->id, "the builder " + c.substr(c.rfind('.') + 1));
                found = true;
                break;
            }
    if (!found) r.ignore("model._component_ (" + c + ")", "no bundled model for this builder: give --model or --hf");
    const bool qlora = c.find(".qlora_") != std::string::npos || r.truthy("model.quantize_base");
    const bool lora = qlora || c.find(".lora_") != std::string::npos;
    r.flag("model._component_", "--method", qlora ? "qlora" : lora ? "lora" : "full");
    // torchao's NF4Tensor also quantizes its block scales (double quantization), QLoRA's default.
    if (qlora) r.note_read("model._component_", "NF4 base through torchao, scales quantized too (nf4-dq)");
    r.count("model.lora_rank", "--rank");
    if (const json* v = r.get("model.lora_alpha")) r.flag("model.lora_alpha", "--alpha", text_of(*v));
    if (const json* v = r.get("model.lora_dropout")) r.flag("model.lora_dropout", "--dropout", text_of(*v));
    if (lora) {
        std::vector<std::string> names;
        if (const json* v = r.get("model.lora_attn_modules"); v && v->is_array())
            for (const auto& x : *v) names.push_back(text_of(x));
        if (r.truthy("model.apply_lora_to_mlp")) names.insert(names.end(), {"w1", "w2", "w3"});
        if (r.truthy("model.apply_lora_to_output")) names.push_back("lm_head");
        read_targets(r, "model.lora_attn_modules/apply_lora_to_mlp/apply_lora_to_output", json(names));
    }
    if (r.get("tokenizer.max_seq_len")) r.count("tokenizer.max_seq_len", "--seq");
    else r.ignore("tokenizer.max_seq_len", "null: torchtune does not cut examples; the plan's --seq (give it) is the longest");
    r.count("batch_size", "--batch");
    r.count("gradient_accumulation_steps", "--grad-accum");
    r.on_off("enable_activation_checkpointing", "--grad-checkpointing", nullptr, {});
    read_optimizer(r, "optimizer._component_");
    if (const json* v = r.get("dtype")) {
        const std::string d = text_of(*v);
        if (d == "bf16") r.flag("dtype", "--precision", "bf16", "torchtune trains in bf16 without autocast");
        else if (d == "fp32") r.flag("dtype", "--precision", "fp32");
        else r.ignore("dtype (" + d + ")", "not a precision Wingspan models");
    }
    read_padding(r, {"dataset.packed"}, "dynamic", "torchtune's default packed: False, each batch padded to its longest "
                                                   "(torchtune/data/_collate.py padded_collate_sft)");
    // Top-level keys of recipes/configs/llama3_1/8B_full_single_device.yaml; the recipe steps each
    // parameter in a post-accumulate-grad hook (torchtune/training/memory.py register_optim_in_bwd_hooks).
    read_technique(r, "optimizer_in_bwd", "--optimizer-in-backward", "each parameter steps as its gradient is ready");
    read_technique(r, "enable_activation_offloading", "--activation-offload", "checkpointed activations in host memory");
    read_technique(r, "compile", "--compile", "torch.compile's fused kernels");
    config_reader::read_torchtune_objective(r);
    r.assume("(framework)", "--framework", "torchtune", "the recipe is torchtune's");
}

// ---- TRL/HF: transformers TrainingArguments, TRL SFTConfig and ModelConfig (trl/trainer/model_config.py) ----
void read_hf(Reader& r, ConfigImport& out, const ProfileLibrary* lib) {
    model_flags(r, out, "model_name_or_path", lib);
    const bool four = r.truthy("load_in_4bit"), eight = r.truthy("load_in_8bit");
    const bool peft = r.truthy("use_peft") || four || eight;
    r.flag("use_peft", "--method", four || eight ? "qlora" : peft ? "lora" : "full", peft ? "" : "use_peft absent: a full fine-tune");
    if (four) r.flag("load_in_4bit", "--quant", r.truthy("use_bnb_nested_quant") ? "nf4-dq" : "nf4");
    else if (eight) r.flag("load_in_8bit", "--quant", "int8");
    r.count("lora_r", "--rank", peft ? "16" : nullptr, "TRL ModelConfig's default lora_r");
    if (const json* v = r.get("lora_alpha")) r.flag("lora_alpha", "--alpha", text_of(*v));
    else if (peft) r.assume("lora_alpha", "--alpha", "32", "TRL ModelConfig's default lora_alpha");
    if (const json* v = r.get("lora_dropout")) r.flag("lora_dropout", "--dropout", text_of(*v));
    if (const json* v = r.get("lora_target_modules")) read_targets(r, "lora_target_modules", *v);
    read_modules_to_save(r, "lora_modules_to_save");
    if (r.truthy("use_dora")) r.flag("use_dora", "--dora", "");
    if (r.get("max_seq_length")) r.count("max_seq_length", "--seq");
    else if (r.has("max_length") || !config_reader::trl_grpo_keys(r))
        r.count("max_length", "--seq", "1024", "TRL SFTConfig's default max_length");
    r.count("per_device_train_batch_size", "--batch", "8", "transformers TrainingArguments' default");
    r.count("gradient_accumulation_steps", "--grad-accum");
    r.on_off("gradient_checkpointing", "--grad-checkpointing", "off", "TrainingArguments' default");
    read_optimizer(r, "optim");
    read_technique(r, "torch_compile", "--compile", "torch.compile's fused kernels");
    // ModelConfig's dtype (torch_dtype before transformers 4.56): bfloat16 weights without bf16/fp16
    // autocast train in pure bf16; with autocast, or in fp32, the bf16/fp16 switches decide.
    const char* dtype_key = r.get("dtype") ? "dtype" : "torch_dtype";
    const json* dtype = r.get(dtype_key);
    if (dtype && *dtype == "bfloat16" && !r.truthy("bf16") && !r.truthy("fp16"))
        r.flag(dtype_key, "--precision", "bf16", "bfloat16 weights, no autocast");
    else read_precision(r, "bf16", "fp16");
    if (const json* v = r.get("attn_implementation")) {
        const std::string a = text_of(*v);
        r.flag("attn_implementation", "--attention", a.find("flash") != std::string::npos ? "flash" : a == "eager" ? "eager" : "sdpa");
    }
    read_padding(r, {"packing"}, "dynamic", "TRL SFTConfig's default packing False: each batch padded to its longest "
                                           "(sft_config.py, sft_trainer.py DataCollatorForLanguageModeling)");
    read_deepspeed(r, "deepspeed");
    if (r.get("fsdp")) r.flag("fsdp", "--sharding", "fsdp", "give --devices N");
    config_reader::read_trl_objective(r);
    r.assume("(framework)", "--framework", "hf-transformers", "TRL and PEFT on transformers");
}

// ---- Wingspan's Unsloth recipe (resources/recipes/unsloth/config.yaml.in): Unsloth has no config
// format, so the recipe keeps the keyword arguments of FastLanguageModel.from_pretrained
// (unsloth/models/loader.py), FastLanguageModel.get_peft_model (unsloth/models/llama.py) and TRL's
// SFTConfig as three groups, which its train.py passes on. ----
void read_unsloth(Reader& r, ConfigImport& out, const ProfileLibrary* lib) {
    model_flags(r, out, "from_pretrained.model_name", lib);
    const bool peft = r.get("get_peft_model") != nullptr;
    const bool four = r.truthy("from_pretrained.load_in_4bit"), eight = r.truthy("from_pretrained.load_in_8bit");
    if (r.truthy("from_pretrained.full_finetuning") || !peft)
        r.flag("from_pretrained.full_finetuning", "--method", "full", peft ? "" : "no get_peft_model: every weight trains");
    else r.flag("get_peft_model", "--method", four || eight ? "qlora" : "lora");
    // Unsloth's load_in_4bit is NF4 with its scales quantized too (its -bnb-4bit models are stored so).
    if (peft && four) r.flag("from_pretrained.load_in_4bit", "--quant", "nf4-dq", "Unsloth's 4-bit: NF4, scales quantized");
    else if (peft && eight) r.flag("from_pretrained.load_in_8bit", "--quant", "int8");
    r.count("get_peft_model.r", "--rank");
    if (const json* v = r.get("get_peft_model.lora_alpha")) r.flag("get_peft_model.lora_alpha", "--alpha", text_of(*v));
    if (const json* v = r.get("get_peft_model.lora_dropout")) r.flag("get_peft_model.lora_dropout", "--dropout", text_of(*v));
    if (const json* v = r.get("get_peft_model.target_modules")) read_targets(r, "get_peft_model.target_modules", *v);
    read_modules_to_save(r, "get_peft_model.modules_to_save");
    if (r.get("from_pretrained.max_seq_length")) r.count("from_pretrained.max_seq_length", "--seq");
    else r.count("sft_config.max_length", "--seq", "1024", "TRL SFTConfig's default max_length");
    r.count("sft_config.per_device_train_batch_size", "--batch", "8", "transformers TrainingArguments' default");
    r.count("sft_config.gradient_accumulation_steps", "--grad-accum");
    // get_peft_model's use_gradient_checkpointing: "unsloth" (its default) checkpoints and offloads
    // the checkpointed inputs to host RAM; a full fine-tune checkpoints through SFTConfig.
    if (const json* g = r.get("get_peft_model.use_gradient_checkpointing"))
        r.flag("get_peft_model.use_gradient_checkpointing", "--grad-checkpointing", r.truthy("get_peft_model.use_gradient_checkpointing") || *g == "unsloth" ? "on" : "off");
    else if (peft) r.assume("get_peft_model.use_gradient_checkpointing", "--grad-checkpointing", "on", "Unsloth's default \"unsloth\"");
    else r.on_off("sft_config.gradient_checkpointing", "--grad-checkpointing", "off", "TrainingArguments' default");
    read_optimizer(r, "sft_config.optim");
    read_precision(r, "sft_config.bf16", "sft_config.fp16");
    read_padding(r, {"sft_config.packing"}, "dynamic", "TRL SFTConfig's default packing False: each batch padded to its longest");
    r.assume("(framework)", "--framework", "unsloth", "the config of Wingspan's Unsloth recipe");
}

// ---- PEFT adapter_config.json: peft/tuners/lora/config.py LoraConfig ----
void read_peft(Reader& r, ConfigImport& out, const ProfileLibrary* lib) {
    model_flags(r, out, "base_model_name_or_path", lib);
    if (const json* t = r.get("peft_type"); t && *t != "LORA") r.ignore("peft_type (" + text_of(*t) + ")", "only LoRA adapters are modelled");
    r.flag("peft_type", "--method", "lora", "the adapter file does not say whether the base was quantized");
    r.count("r", "--rank");
    if (const json* v = r.get("lora_alpha")) r.flag("lora_alpha", "--alpha", text_of(*v));
    if (const json* v = r.get("lora_dropout")) r.flag("lora_dropout", "--dropout", text_of(*v));
    if (const json* v = r.get("target_modules")) read_targets(r, "target_modules", *v);
    read_modules_to_save(r, "modules_to_save");
    if (r.truthy("use_dora")) r.flag("use_dora", "--dora", "");
    r.assume("(training)", "--framework", "hf-transformers", "an adapter file says nothing of sequence, batch or precision: "
                                                            "the plan's own defaults stand (give --seq, --batch)");
}

// ---- mlx-lm: mlx_lm/lora.py CONFIG_DEFAULTS and build_parser ----
void read_mlx(Reader& r, ConfigImport& out, const ProfileLibrary* lib) {
    model_flags(r, out, "model", lib);
    const json* ft = r.get("fine_tune_type");
    const std::string type = ft ? text_of(*ft) : "lora";
    if (!ft) out.defaults.push_back({"fine_tune_type", "lora: mlx-lm's default (CONFIG_DEFAULTS)"});
    const bool quantized = out.model.find("4bit") != std::string::npos || out.model.find("8bit") != std::string::npos;
    if (type == "full") r.flag("fine_tune_type", "--method", "full");
    else r.flag("fine_tune_type", "--method", quantized ? "qlora" : "lora", quantized ? "a quantized model: LoRA on it is QLoRA" : "");
    if (type == "dora") r.flag("fine_tune_type", "--dora", "");
    const json* layers = r.get("num_layers");
    const std::string layers_key = layers ? "num_layers" : "lora_layers";
    if (!layers) layers = r.get("lora_layers");
    if (layers && type == "full") r.ignore(layers_key, "a full fine-tune trains every layer");
    else if (layers) {
        const long long n = layers->get<long long>();
        // -1 is every layer: the model's count where the model is bundled (the same plan as the
        // framework's default of 16 on a 16-layer model), else 0 (all).
        const ModelProfile* m = lib ? bundled_model_for(*lib, out.model) : nullptr;
        const std::string all = m ? std::to_string(m->arch.layers) : "0";
        r.flag(layers_key, "--lora-layers", n < 0 ? all : std::to_string(n), n < 0 ? "-1: every layer" : "");
    }
    const auto rank = r.integer("lora_parameters.rank");
    if (rank) r.flag("lora_parameters.rank", "--rank", std::to_string(*rank));
    else if (type != "full") r.assume("lora_parameters.rank", "--rank", "8", "mlx-lm's default rank");
    // mlx-lm scales the adapter's output by `scale` (mlx_lm/tuner/lora.py); PEFT's factor is
    // alpha / rank, so alpha = scale × rank gives the same update.
    if (const json* s = r.get("lora_parameters.scale"))
        r.flag("lora_parameters.scale", "--alpha", text_of(json(s->get<double>() * double(rank.value_or(8)))), "alpha = scale × rank");
    if (r.get("lora_parameters.alpha")) r.ignore("lora_parameters.alpha", "older mlx-lm kept it beside scale; scale is what it applies");
    if (const json* v = r.get("lora_parameters.dropout")) r.flag("lora_parameters.dropout", "--dropout", text_of(*v));
    if (const json* v = r.get("lora_parameters.keys")) read_targets(r, "lora_parameters.keys", *v);
    else if (type != "full")
        r.assume("lora_parameters.keys", "--targets", "all",
                 "mlx-lm's default: every linear of each adapted block (mlx_lm/tuner/utils.py linear_to_lora_layers)");
    r.count("batch_size", "--batch", "4", "mlx-lm's default batch_size");
    r.count("grad_accumulation_steps", "--grad-accum");
    r.count("max_seq_length", "--seq", "2048", "mlx-lm's default max_seq_length");
    r.on_off("grad_checkpoint", "--grad-checkpointing", nullptr, {});
    read_optimizer(r, "optimizer");
    r.assume("(padding)", "--padding", "dynamic", "mlx-lm has no packing: each batch padded to its longest, rounded up to "
                                                   "a multiple of 32 (mlx_lm/tuner/trainer.py iterate_batches)");
    r.assume("(framework)", "--framework", "mlx-lm", "the config is mlx-lm's");
}

}  // namespace

ConfigImport import_config(const json& doc, std::optional<ConfigFormat> forced, const ProfileLibrary* library) {
    ConfigImport out;
    out.format = forced ? *forced : detect_config_format(doc);
    Reader r(doc, out);
    switch (out.format) {
        case ConfigFormat::Axolotl: read_axolotl(r, out, library); break;
        case ConfigFormat::LlamaFactory: read_llama_factory(r, out, library); break;
        case ConfigFormat::Torchtune: read_torchtune(r, out, library); break;
        case ConfigFormat::HfTrl: read_hf(r, out, library); break;
        case ConfigFormat::PeftAdapter: read_peft(r, out, library); break;
        case ConfigFormat::MlxLm: read_mlx(r, out, library); break;
        case ConfigFormat::Unsloth: read_unsloth(r, out, library); break;
    }
    r.finish();
    return out;
}

}  // namespace wingspan
