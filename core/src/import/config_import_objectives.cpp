// The keys of preference tuning and RL (issue 31) read into `--objective` and its knobs. What a
// key does to memory, and the default assumed where a file is silent, is cited at each reader.
#include "import/config_reader.hpp"
#include "memory/objective_terms.hpp"

namespace wingspan::config_reader {

namespace {

// GRPO, trl/trainer/grpo_config.py (trl 1.16.0, scripts/requirements/frameworks.txt).
constexpr const char* kTrlGenerations = "8";            // num_generations
constexpr const char* kTrlCompletionLength = "512";     // max_completion_length (earlier releases: 256)
constexpr const char* kTrlVllmShare = "0.3";            // vllm_gpu_memory_utilization

// What the file's format cannot say, reported with the defaults (the round trip `wingspan recipe`
// -> `plan --from` gives back every other setting; these the plan keeps at its own default).
// Preference tuning caps prompt + completion with one length in every format Wingspan writes:
// TRL 1.16's DPOConfig and KTOConfig have max_length only, ORPOConfig's and CPOConfig's
// max_completion_length applies to encoder-decoder models only (orpo_trainer.py, cpo_trainer.py
// "is_encoder_decoder"), LLaMA-Factory has cutoff_len (hparams/data_args.py), torchtune the
// tokenizer's max_seq_len.
void split_not_expressible(Reader& r, const std::string& key, const std::string& framework) {
    r.not_expressible(key, framework,
                      "--prompt-length and --completion-length (" + key +
                          " caps prompt + completion together): the plan's sequence is their sum");
}

bool adapter(const Reader& r) {
    const std::string m = r.flag_value("--method");
    return m == "lora" || m == "qlora";
}

// The references a DPO or KTO file of `framework` cannot ask for, given its method; `why` cites it.
void references_not_expressible(Reader& r, const std::string& framework, const std::string& which,
                                const std::string& why) {
    r.not_expressible("(reference)", framework, "--reference " + which + " (" + why + "): the plan takes " + framework +
                                                    "'s own (--reference auto)");
}

void read_trl_grpo(Reader& r) {
    r.count("num_generations", "--generations", kTrlGenerations, "TRL GRPOConfig's default num_generations (grpo_config.py)");
    r.count("max_completion_length", "--completion-length", kTrlCompletionLength,
            "TRL 1.16 GRPOConfig's default max_completion_length (grpo_config.py)");
    // TRL before 0.28 had max_prompt_length (trl#2598 added it, trl#4847 removed it); 1.16 cuts no prompt.
    if (r.has("max_prompt_length")) r.count("max_prompt_length", "--prompt-length");
    else
        r.not_expressible("max_prompt_length", "TRL 1.16",
                          "--prompt-length (GRPOConfig has no max_prompt_length: prompts are not cut, grpo_config.py): "
                          "the plan assumes " + std::to_string(kTrlGrpoPromptLength) + " tokens; give --prompt-length");
    const json* b = r.get("beta");
    if (b) r.flag("beta", "--beta", text_of(*b), b->get<double>() > 0 ? "a reference model is loaded" : "no reference model");
    else r.assume("beta", "--beta", "0", "TRL 1.16 GRPOConfig's default beta 0.0 (grpo_config.py; earlier releases defaulted to 0.04): no reference model");
    // GRPOTrainer.__init__ (grpo_trainer.py line 984): beta > 0 scores the reference with a PEFT
    // policy's adapter disabled, else loads a copy; GRPOConfig has no key for another choice.
    if (b && b->get<double>() > 0 && adapter(r))
        references_not_expressible(r, "TRL 1.16", "copy",
                                   "GRPOConfig has no key for it: GRPOTrainer disables a PEFT policy's adapter, "
                                   "else loads a copy, grpo_trainer.py line 984");
    // per_device_train_batch_size counts completions (grpo_config.py: generation_batch_size =
    // per_device_train_batch_size × num_processes × steps_per_generation); the plan's batch counts
    // prompts of num_generations completions each, rounded up: an upper bound when it does not divide.
    if (r.has("per_device_train_batch_size")) {
        const long long completions = *r.integer("per_device_train_batch_size");
        const long long g = r.has("num_generations") ? *r.integer("num_generations") : std::stoll(kTrlGenerations);
        if (g > 0 && completions > 0) {
            const long long prompts = (completions + g - 1) / g;
            r.flag("per_device_train_batch_size", "--batch", std::to_string(prompts),
                   std::to_string(completions) + " completions per device = " + std::to_string(prompts) + " prompt(s) × " +
                       std::to_string(g) + (completions % g ? " rounded up" : ""));
        }
    }
    if (!r.truthy("use_vllm")) return;
    // vllm_mode "colocate" (TRL 1.16's default) puts the engine on the training GPU; "server", and
    // configs from before vllm_mode that name vllm_device, run it on GPUs of its own.
    const json* mode = r.get("vllm_mode");
    const bool server = mode ? text_of(*mode) == "server" : r.has("vllm_device");
    if (r.has("vllm_device")) r.ignore("vllm_device", "TRL before vllm_mode: vLLM on a GPU of its own (server mode)");
    if (server) {
        r.note_read("use_vllm", "vLLM serves from GPUs of its own: nothing on the training GPU");
        if (r.has("vllm_gpu_memory_utilization")) r.ignore("vllm_gpu_memory_utilization", "the server's GPU, not the trainer's");
        return;
    }
    if (const json* u = r.get("vllm_gpu_memory_utilization"))
        r.flag("vllm_gpu_memory_utilization", "--vllm-share", text_of(*u), "the colocated vLLM engine's share of the GPU");
    else
        r.assume("vllm_gpu_memory_utilization", "--vllm-share", kTrlVllmShare,
                 "TRL GRPOConfig's default vllm_gpu_memory_utilization in colocate mode");
}

}  // namespace

// TRL's configs carry no trainer name (`trl dpo|kto|grpo --config FILE` does): the objective is
// told by keys only its config has (transformers' HfArgumentParser refuses a key its class lacks).
// ORPOConfig's own fields beside DPOConfig's (trl 1.16 trl/experimental/orpo/orpo_config.py):
// is_encoder_decoder, padding_value, generate_during_eval, max_completion_length (CPOConfig has
// the first and the last two too; its loss_type or cpo_alpha tells it apart). Wingspan's ORPO recipe
// writes is_encoder_decoder: False. With none of them, ORPO's keys are DPO's: DPO is assumed.
bool trl_grpo_keys(const Reader& r) {
    return r.has("num_generations") || r.has("use_vllm") || r.has("vllm_mode") || r.has("vllm_gpu_memory_utilization") ||
           r.has("reward_funcs");
}

void read_trl_objective(Reader& r) {
    const bool grpo = trl_grpo_keys(r);
    const bool kto = r.has("desirable_weight") || r.has("undesirable_weight");
    const std::string loss = r.has("loss_type") ? text_of(*r.get("loss_type")) : "";
    const bool simpo = loss.find("simpo") != std::string::npos || r.has("cpo_alpha") || r.has("simpo_gamma");
    const char* orpo_key = nullptr;
    for (const char* k : {"is_encoder_decoder", "padding_value", "generate_during_eval", "max_completion_length"})
        if (!orpo_key && r.has(k)) orpo_key = k;
    const bool orpo = orpo_key && !r.has("loss_type") && !r.has("precompute_ref_log_probs");
    const bool dpo = r.has("beta") || r.has("precompute_ref_log_probs") || r.has("max_prompt_length") ||
                     r.has("ref_model_init_kwargs") || r.has("rpo_alpha");
    if (grpo) {
        r.flag("num_generations/use_vllm", "--objective", "grpo", "GRPOConfig's keys");
        return read_trl_grpo(r);
    }
    if (!kto && !simpo && !orpo && !dpo) return;
    if (orpo && !kto && !simpo) {
        r.flag(orpo_key, "--objective", "orpo", std::string("ORPOConfig's own key ") + orpo_key + ": DPOConfig has no such field");
        if (r.has("beta")) r.note_read("beta", "ORPO's λ: no memory of its own");
        for (const char* k : {"is_encoder_decoder", "padding_value", "generate_during_eval", "max_completion_length"})
            if (r.has(k) && k != std::string(orpo_key)) r.note_read(k, "ORPOConfig's: no memory of its own");
        return split_not_expressible(r, "max_length", "TRL 1.16");
    }
    const std::string objective = kto ? "kto" : simpo ? "simpo" : "dpo";
    r.flag(kto ? "desirable_weight" : simpo ? "loss_type" : "beta", "--objective", objective,
           kto ? "KTOConfig's keys" : simpo ? "CPOConfig with the SimPO loss" : "DPOConfig's keys (an ORPO file without ORPOConfig's own keys reads the same: give --objective orpo)");
    if (kto && r.has("undesirable_weight")) r.note_read("undesirable_weight", "the loss's weight: no memory of its own");
    if (r.has("beta")) r.note_read("beta", "the loss's β: no memory of its own");
    if (!loss.empty()) r.note_read("loss_type", loss + ": the same forwards, the same memory");
    if (r.has("max_prompt_length"))
        r.note_read("max_prompt_length", "the prompt's part of max_length: the plan's sequence is max_length");
    split_not_expressible(r, "max_length", "TRL 1.16");
    if (objective == "simpo") return;
    if (r.truthy("precompute_ref_log_probs"))
        return r.flag("precompute_ref_log_probs", "--reference", "precomputed", "no reference model while training");
    // DPOTrainer/KTOTrainer.__init__ (dpo_trainer.py line 908, kto_trainer.py line 919): without
    // precompute_ref_log_probs a PEFT policy is scored with its adapter disabled, anything else
    // against a loaded copy; a copy beside a PEFT policy is the trainer's ref_model argument only.
    references_not_expressible(r, "TRL 1.16", adapter(r) ? "copy or none" : "none",
                               std::string(adapter(r) ? "a copy beside a PEFT policy is the trainer's ref_model argument, "
                                                        "no config key; "
                                                      : "") +
                                   "DPOTrainer and KTOTrainer always score a reference, dpo_trainer.py line 908");
}

// LLaMA-Factory: finetuning_args.py stage (pt | sft | rm | ppo | dpo | kto), pref_loss (sigmoid |
// hinge | ipo | kto_pair | orpo | simpo: use_ref_model = stage == dpo and pref_loss not in [orpo,
// simpo]), ref_model (a separate reference; without it a LoRA policy is its own reference with
// the adapter disabled, else the base is loaded again: train/trainer_utils.py create_ref_model).
void read_llama_factory_objective(Reader& r) {
    const json* st = r.get("stage");
    const std::string stage = st ? text_of(*st) : "sft";
    if (stage == "sft" || stage == "pt") {
        for (const char* k : {"pref_beta", "pref_loss"})
            if (r.has(k)) r.ignore(k, "stage " + stage + " has no preference loss");
        return;
    }
    if (stage != "dpo" && stage != "kto") return r.ignore("stage (" + stage + ")", "a reward model or PPO is not modelled: planned as SFT");
    std::string objective = stage;
    if (stage == "dpo") {
        const json* l = r.get("pref_loss");
        const std::string loss = l ? text_of(*l) : "sigmoid";
        objective = loss == "orpo" ? "orpo" : loss == "simpo" ? "simpo" : "dpo";
        if (!l) r.assume("pref_loss", "--objective", "dpo", "LLaMA-Factory's default pref_loss sigmoid (finetuning_args.py)");
        else r.flag("pref_loss", "--objective", objective, objective == "dpo" ? loss + ": DPO's forwards with a reference" : "no reference model");
    } else {
        r.flag("stage", "--objective", "kto");
    }
    if (r.has("pref_beta")) r.note_read("pref_beta", "the loss's β: no memory of its own");
    split_not_expressible(r, "cutoff_len", "LLaMA-Factory");
    if (objective != "dpo" && objective != "kto") return;
    if (r.has("ref_model")) r.flag("ref_model", "--reference", "copy", "a separate reference model is loaded");
    // train/dpo/trainer.py and train/kto/trainer.py set precompute_ref_log_probs = False: every step
    // scores the reference.
    references_not_expressible(r, "LLaMA-Factory", "precomputed or none",
                               "its DPO and KTO trainers set precompute_ref_log_probs = False and always score a reference, "
                               "train/dpo/trainer.py line 70");
}

// torchtune: recipes/lora_dpo_single_device.py trains with torchtune.rlhf.loss.DPOLoss (or
// RSOLoss, the same forwards) and scores the reference with the adapters disabled.
void read_torchtune_objective(Reader& r) {
    const json* v = r.get("loss._component_");
    if (!v) return;
    const std::string loss = text_of(*v);
    const bool dpo = loss.find("DPOLoss") != std::string::npos || loss.find("RSOLoss") != std::string::npos;
    if (dpo)
        r.flag("loss._component_", "--objective", "dpo", loss + ": chosen and rejected, the reference with the adapters off");
    else if (loss.find("SimPOLoss") != std::string::npos)
        r.flag("loss._component_", "--objective", "simpo", loss + ": chosen and rejected, no reference");
    else
        return r.note_read("loss._component_", loss + ": the torchtune profile models its chunked loss");
    split_not_expressible(r, "tokenizer.max_seq_len", "torchtune");
    if (dpo)
        references_not_expressible(r, "torchtune", "copy, precomputed or none",
                                   "recipes/lora_dpo_single_device.py scores the reference every step with the adapters disabled");
}

}  // namespace wingspan::config_reader
