#include "wingspan/setup.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "wingspan/errors.hpp"
#include "wingspan/quant_formats.hpp"

namespace wingspan {

namespace {

template <typename E, size_t N>
using Names = std::array<std::pair<E, const char*>, N>;

constexpr Names<Method, 4> kMethods{{{Method::Full, "full"}, {Method::Lora, "lora"},
                                     {Method::Qlora, "qlora"}, {Method::Serve, "serve"}}};
constexpr Names<Precision, 4> kPrecisions{{{Precision::Fp32, "fp32"},
                                           {Precision::Bf16Mixed, "bf16-mixed"},
                                           {Precision::Bf16, "bf16"},
                                           {Precision::Fp16Mixed, "fp16-mixed"}}};
constexpr Names<Optimizer, 6> kOptimizers{{{Optimizer::AdamW, "adamw"},
                                           {Optimizer::AdamW8bit, "adamw8bit"},
                                           {Optimizer::PagedAdamW8bit, "paged-adamw8bit"},
                                           {Optimizer::PagedAdamW, "paged-adamw"},
                                           {Optimizer::Sgd, "sgd"},
                                           {Optimizer::Adafactor, "adafactor"}}};
constexpr Names<Attention, 3> kAttention{
    {{Attention::Eager, "eager"}, {Attention::Sdpa, "sdpa"}, {Attention::Flash, "flash"}}};
constexpr Names<Sharding, 6> kSharding{{{Sharding::None, "none"},
                                        {Sharding::Ddp, "ddp"},
                                        {Sharding::Zero1, "zero1"},
                                        {Sharding::Zero2, "zero2"},
                                        {Sharding::Zero3, "zero3"},
                                        {Sharding::Fsdp, "fsdp"}}};
constexpr Names<Quantization, 10> kQuant{{{Quantization::None, "none"},
                                          {Quantization::Nf4, "nf4"},
                                          {Quantization::Nf4DoubleQuant, "nf4-dq"},
                                          {Quantization::Int8, "int8"},
                                          {Quantization::Awq, "awq"},
                                          {Quantization::Gptq, "gptq"},
                                          {Quantization::GptqInt8, "gptq-int8"},
                                          {Quantization::Fp8, "fp8"},
                                          {Quantization::Fp8Channel, "fp8-channel"},
                                          {Quantization::Fp8Block, "fp8-block"}}};
constexpr Names<Objective, 6> kObjectives{{{Objective::Sft, "sft"},
                                           {Objective::Dpo, "dpo"},
                                           {Objective::Orpo, "orpo"},
                                           {Objective::Simpo, "simpo"},
                                           {Objective::Kto, "kto"},
                                           {Objective::Grpo, "grpo"}}};
constexpr Names<Reference, 5> kReferences{{{Reference::Auto, "auto"},
                                           {Reference::Copy, "copy"},
                                           {Reference::AdapterOff, "adapter-off"},
                                           {Reference::Precomputed, "precomputed"},
                                           {Reference::None, "none"}}};

template <typename E, size_t N>
const char* name_of(const Names<E, N>& names, E e) {
    for (const auto& [v, n] : names)
        if (v == e) return n;
    return "?";
}

template <typename E, size_t N>
E parse_name(const Names<E, N>& names, const std::string& text, const char* what) {
    for (const auto& [v, n] : names)
        if (text == n) return v;
    std::string accepted;
    for (const auto& [v, n] : names) accepted += (accepted.empty() ? "" : ", ") + std::string(n);
    throw InputError("unknown " + std::string(what) + " '" + text + "' (expected one of: " +
                     accepted + ")");
}

}  // namespace

const char* to_string(Method v) { return name_of(kMethods, v); }
const char* to_string(Precision v) { return name_of(kPrecisions, v); }
const char* to_string(Optimizer v) { return name_of(kOptimizers, v); }
const char* to_string(Attention v) { return name_of(kAttention, v); }
const char* to_string(Sharding v) { return name_of(kSharding, v); }
const char* to_string(Quantization v) { return name_of(kQuant, v); }
const char* to_string(Objective v) { return name_of(kObjectives, v); }
const char* to_string(Reference v) { return name_of(kReferences, v); }
Objective parse_objective(const std::string& s) { return parse_name(kObjectives, s, "objective"); }
Reference parse_reference(const std::string& s) { return parse_name(kReferences, s, "reference"); }
Method parse_method(const std::string& s) { return parse_name(kMethods, s, "method"); }
Precision parse_precision(const std::string& s) { return parse_name(kPrecisions, s, "precision"); }
void set_precision(TrainingSetup& s, const std::string& name) {
    if (name == "auto") {
        s.precision_auto = true;
        s.precision = Precision::Bf16Mixed;
        return;
    }
    s.precision = parse_precision(name);
    s.precision_auto = false;
}
Optimizer parse_optimizer(const std::string& s) { return parse_name(kOptimizers, s, "optimizer"); }
Attention parse_attention(const std::string& s) { return parse_name(kAttention, s, "attention"); }
Sharding parse_sharding(const std::string& s) { return parse_name(kSharding, s, "sharding"); }
Quantization parse_quantization(const std::string& s) {
    return parse_name(kQuant, s, "quantization");
}

std::set<LinearRole> parse_targets(const std::string& text) {
    static const std::pair<const char*, LinearRole> kRoles[] = {
        {"q", LinearRole::Q},       {"k", LinearRole::K},   {"v", LinearRole::V},
        {"o", LinearRole::O},       {"gate", LinearRole::Gate}, {"up", LinearRole::Up},
        {"down", LinearRole::Down}};
    std::set<LinearRole> roles;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.size() > 5 && item.substr(item.size() - 5) == "_proj") item.resize(item.size() - 5);
        if (item == "all") {
            for (const auto& [n, r] : kRoles) roles.insert(r);
            continue;
        }
        // The LM head, by the names the frameworks give it ("all" stays the decoder layers' linears,
        // as PEFT's all-linear and LitGPT's lora_head apart from its other flags have it).
        if (item == "head" || item == "lm_head" || item == "output") {
            roles.insert(LinearRole::Head);
            continue;
        }
        if (item == "attention") {
            roles.insert({LinearRole::Q, LinearRole::K, LinearRole::V, LinearRole::O});
            continue;
        }
        if (item == "mlp") {
            roles.insert({LinearRole::Gate, LinearRole::Up, LinearRole::Down});
            continue;
        }
        // Phi-3's fused projections (qkv_proj, gate_up_proj, as PEFT's target_modules name them).
        if (item == "qkv") {
            roles.insert({LinearRole::Q, LinearRole::K, LinearRole::V});
            continue;
        }
        if (item == "gate_up") {
            roles.insert({LinearRole::Gate, LinearRole::Up});
            continue;
        }
        bool found = false;
        for (const auto& [n, r] : kRoles)
            if (item == n) {
                roles.insert(r);
                found = true;
            }
        if (!found)
            throw InputError("unknown LoRA target '" + item +
                             "' (expected q, k, v, o, gate, up, down, attention, mlp, all or head)");
    }
    if (roles.empty()) throw InputError("LoRA targets are empty (use e.g. q,v or all)");
    return roles;
}

std::string targets_to_string(const std::set<LinearRole>& roles) {
    std::string out;
    for (LinearRole r : roles) out += (out.empty() ? "" : ",") + std::string(linear_role_name(r));
    return out;
}

Quantization TrainingSetup::effective_quantization() const {
    if (method == Method::Qlora && quantization == Quantization::None)
        return Quantization::Nf4DoubleQuant;
    if (method == Method::Full || method == Method::Lora) return Quantization::None;
    return quantization;
}

void TrainingSetup::validate(const Architecture& arch) const {
    auto need = [](bool ok, const std::string& message) {
        if (!ok) throw InputError(message);
    };
    need(seq_len >= 1, "sequence length must be at least 1 (got " + std::to_string(seq_len) + ")");
    need(seq_len <= (std::int64_t(1) << 24), "sequence length " + std::to_string(seq_len) +
                                                 " is beyond any model's context (max 16,777,216)");
    need(micro_batch >= 1, "micro-batch must be at least 1 (got " + std::to_string(micro_batch) + ")");
    need(grad_accum >= 1, "gradient accumulation must be at least 1 (got " +
                              std::to_string(grad_accum) + ")");
    need(devices >= 1, "devices must be at least 1 (got " + std::to_string(devices) + ")");
    need(serve_batch >= 1, "serving batch must be at least 1");
    need(loss_chunk_tokens >= 0, "loss chunk must be 0 (off) or a positive number of tokens");
    need(!(devices > 1 && sharding == Sharding::None) || method == Method::Serve,
         "several devices need a sharding strategy (ddp, zero1, zero2, zero3 or fsdp)");
    if (method == Method::Lora || method == Method::Qlora) {
        need(lora_rank >= 1, "LoRA rank must be at least 1 (got " + std::to_string(lora_rank) + ")");
        need(lora_rank <= arch.hidden, "LoRA rank " + std::to_string(lora_rank) +
                                           " is larger than the hidden size " +
                                           std::to_string(arch.hidden));
        need(!lora_targets.empty(), "LoRA needs at least one target module");
        need(lora_dropout >= 0 && lora_dropout < 1, "LoRA dropout must be in [0, 1)");
        need(lora_layers >= 0, "LoRA layers must be 0 (all) or a positive number of last layers (got " +
                                   std::to_string(lora_layers) + ")");
    }
    // torchtune's recipes refuse these combinations (recipes/full_finetune_single_device.py:
    // "Gradient accumulation is not supported with optimizer_in_bwd"); the model covers one device.
    need(!optimizer_in_backward || method != Method::Serve, "--optimizer-in-backward needs a training method");
    need(!optimizer_in_backward || grad_accum == 1,
         "--optimizer-in-backward steps each parameter as its gradient is ready: no gradient accumulation (--grad-accum 1)");
    need(!optimizer_in_backward || devices == 1, "--optimizer-in-backward is modelled on one device (--devices 1)");
    need(!optimizer_in_backward || !offload, "--optimizer-in-backward and --optimizer-offload do not combine");
    need(!activation_offload || method != Method::Serve, "--activation-offload offloads what training keeps for backward: it needs a training method");
    need(!activation_offload || grad_checkpointing,
         "--activation-offload moves the checkpointed layer inputs to host RAM: it needs --grad-checkpointing on");
    // AWQ, GPTQ and fp8 checkpoints are loaded as stored to serve them; QLoRA here quantizes a
    // 16-bit checkpoint with bitsandbytes-style NF4 or int8 at load.
    need(!is_checkpoint_format(quantization) || method == Method::Serve,
         std::string("--quant ") + to_string(quantization) + " prices a pre-quantized checkpoint for serving: use --method serve "
         "(QLoRA takes nf4, nf4-dq or int8)");
    require_valid_quant_group(quantization, quant_group_size);
    need(!(method == Method::Full && quantization != Quantization::None),
         "a full fine-tune cannot train quantized weights (use qlora)");
    validate_objective();
    require_plan_size_bounded(arch, *this);
}

void TrainingSetup::validate_objective() const {
    auto need = [](bool ok, const std::string& message) {
        if (!ok) throw InputError(message);
    };
    const ObjectiveSetup& o = objective;
    const std::string name = to_string(o.kind);
    need(o.kind == Objective::Sft || method != Method::Serve, "objective " + name + " trains: it needs a training method");
    need(o.prompt_len >= 0 && o.completion_len >= 0, "prompt and completion lengths must be 0 (default) or positive");
    need(o.prompt_len + o.completion_len <= (std::int64_t(1) << 24), "prompt + completion is beyond any model's context");
    need(o.generations >= 1 && o.generations <= 4096, "generations must be in 1..4096 (got " + std::to_string(o.generations) + ")");
    need(o.beta >= 0, "beta must be 0 or positive");
    need(o.vllm_share >= 0 && o.vllm_share < 1, "the vLLM share must be in [0, 1) (a fraction of the GPU)");
    need(o.vllm_share == 0 || o.kind == Objective::Grpo, "--vllm-share is GRPO's colocated generation engine");
    if (o.reference == Reference::Auto) return;
    const bool takes_reference = o.kind == Objective::Dpo || o.kind == Objective::Kto ||
                                 (o.kind == Objective::Grpo && o.beta > 0);
    need(takes_reference || o.reference == Reference::None,
         "objective " + name + (o.kind == Objective::Grpo ? " with beta 0" : "") +
             " uses no reference model (only --reference none)");
    need(o.reference != Reference::AdapterOff || method == Method::Lora || method == Method::Qlora,
         "--reference adapter-off needs an adapter (--method lora or qlora)");
    need(o.reference != Reference::Precomputed || o.kind != Objective::Grpo,
         "GRPO scores fresh completions: its reference log-probs cannot be precomputed");
}

void require_plan_size_bounded(const Architecture& arch, const TrainingSetup& s) {
    using LD = long double;
    LD params = 0;
    for (const auto& t : arch.tensor_groups()) params += LD(t.rows) * LD(t.cols) * LD(t.count);
    const LD seq = LD(std::max<std::int64_t>(1, s.seq_len));
    const LD batch = LD(std::max({std::int64_t{1}, s.micro_batch, s.serve_batch}));
    const LD tokens = batch * seq;
    // As the memory model sums an MoE layer's inner width (routed experts per token + the shared
    // expert), in long double: the int64 product itself could overflow (found by fuzz_config
    // under UBSan).
    const LD moe_inner = LD(arch.expert_intermediate) * LD(std::max<std::int64_t>(1, arch.experts_per_token)) +
                         LD(arch.shared_expert_intermediate);
    const LD inner = std::max(LD(arch.intermediate), moe_inner);
    // Eager attention keeps every head's seq × seq scores; the fused kernels do not.
    const LD scores = s.attention == Attention::Eager ? LD(arch.heads) * seq * 8 : 0;
    const LD per_layer_token = LD(arch.hidden) * 64 + inner * 16 + scores + LD(arch.kv_dim()) * 8;
    // Every term is a generous upper bound of what the model computes, so no product inside it
    // exceeds this sum.
    const LD bytes = params * 32 + tokens * LD(arch.layers) * per_layer_token + tokens * LD(arch.vocab) * 16 +
                     LD(std::max<std::int64_t>(1, s.lora_rank)) * LD(arch.hidden) * LD(arch.layers) * 7 * 64;
    if (bytes > kMaxPlanBytes) {
        char text[64];
        std::snprintf(text, sizeof text, "%.3Lg", bytes);
        throw PlanTooLargeError("this plan needs on the order of " + std::string(text) +
                                " bytes, more than any machine can hold (check the batch, sequence length and "
                                "the model's sizes)");
    }
}

nlohmann::json TrainingSetup::to_json() const {
    nlohmann::json j = {
        {"method", to_string(method)},
        {"precision", precision_auto ? "auto" : to_string(precision)},
        {"optimizer", to_string(optimizer)},
        {"attention", to_string(attention)},
        {"seq_len", seq_len},
        {"micro_batch", micro_batch},
        {"grad_accum", grad_accum},
        {"grad_checkpointing", grad_checkpointing},
        {"loss_chunk_tokens", loss_chunk_tokens},
        {"lora_rank", lora_rank},
        {"lora_alpha", lora_alpha},
        {"lora_dropout", lora_dropout},
        {"lora_targets", targets_to_string(lora_targets)},
        {"train_embeddings", train_embeddings},
        {"lora_layers", lora_layers},
        {"dora", dora},
        {"quantization", to_string(effective_quantization())},
        {"serve_batch", serve_batch},
        {"devices", devices},
        {"sharding", to_string(sharding)},
        {"offload", offload},
        {"optimizer_in_backward", optimizer_in_backward},
        {"activation_offload", activation_offload},
        {"compile", compile},
        {"objective",
         {{"kind", to_string(objective.kind)},
          {"reference", to_string(objective.reference)},
          {"prompt_len", objective.prompt_len},
          {"completion_len", objective.completion_len},
          {"generations", objective.generations},
          {"beta", objective.beta},
          {"vllm_share", objective.vllm_share}}},
    };
    // Only for the grouped checkpoint formats: other plans stay as they were.
    const Quantization q = effective_quantization();
    if (q == Quantization::Awq || q == Quantization::Gptq || q == Quantization::GptqInt8) j["quant_group_size"] = quant_group_size;
    if (dataset_tokens > 0) {   // only where a data set is counted: older plans stay as they were
        j["dataset_tokens"] = dataset_tokens;
        j["dataset_examples"] = dataset_examples;
    }
    return j;
}

TrainingSetup TrainingSetup::from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw InputError("plan setup: expected a JSON object");
    TrainingSetup s;
    // The object the readers below read: the setup, then its objective.
    const nlohmann::json* src = &j;
    auto str = [&](const char* k) -> std::optional<std::string> {
        if (!src->contains(k)) return std::nullopt;
        if (!(*src)[k].is_string()) throw InputError(std::string("plan setup: '") + k + "' must be a string");
        return (*src)[k].get<std::string>();
    };
    auto integer = [&](const char* k, std::int64_t& out) {
        if (!src->contains(k)) return;
        if (!(*src)[k].is_number_integer()) throw InputError(std::string("plan setup: '") + k + "' must be an integer");
        out = (*src)[k].get<std::int64_t>();
    };
    auto boolean = [&](const char* k, bool& out) {
        if (!src->contains(k)) return;
        if (!(*src)[k].is_boolean()) throw InputError(std::string("plan setup: '") + k + "' must be true or false");
        out = (*src)[k].get<bool>();
    };
    auto number = [&](const char* k, double& out) {
        if (!src->contains(k)) return;
        if (!(*src)[k].is_number()) throw InputError(std::string("plan setup: '") + k + "' must be a number");
        out = (*src)[k].get<double>();
    };
    if (auto v = str("method")) s.method = parse_method(*v);
    if (auto v = str("precision")) set_precision(s, *v);
    if (auto v = str("optimizer")) s.optimizer = parse_optimizer(*v);
    if (auto v = str("attention")) s.attention = parse_attention(*v);
    if (auto v = str("sharding")) s.sharding = parse_sharding(*v);
    if (auto v = str("quantization")) s.quantization = parse_quantization(*v);
    if (auto v = str("lora_targets")) s.lora_targets = parse_targets(*v);
    integer("seq_len", s.seq_len);
    integer("micro_batch", s.micro_batch);
    integer("grad_accum", s.grad_accum);
    integer("loss_chunk_tokens", s.loss_chunk_tokens);
    integer("lora_rank", s.lora_rank);
    integer("serve_batch", s.serve_batch);
    integer("devices", s.devices);
    boolean("grad_checkpointing", s.grad_checkpointing);
    boolean("train_embeddings", s.train_embeddings);
    integer("lora_layers", s.lora_layers);
    boolean("dora", s.dora);
    boolean("offload", s.offload);
    boolean("optimizer_in_backward", s.optimizer_in_backward);
    boolean("activation_offload", s.activation_offload);
    boolean("compile", s.compile);
    integer("quant_group_size", s.quant_group_size);
    integer("dataset_tokens", s.dataset_tokens);
    integer("dataset_examples", s.dataset_examples);
    number("lora_alpha", s.lora_alpha);
    number("lora_dropout", s.lora_dropout);
    if (j.contains("objective")) {   // absent in plans written before objectives: SFT
        const nlohmann::json& o = j["objective"];
        if (!o.is_object()) throw InputError("plan setup: 'objective' must be an object");
        src = &o;
        if (auto v = str("kind")) s.objective.kind = parse_objective(*v);
        if (auto v = str("reference")) s.objective.reference = parse_reference(*v);
        integer("prompt_len", s.objective.prompt_len);
        integer("completion_len", s.objective.completion_len);
        integer("generations", s.objective.generations);
        number("beta", s.objective.beta);
        number("vllm_share", s.objective.vllm_share);
    }
    return s;
}

int dtype_bytes(Precision p) { return p == Precision::Fp32 ? 4 : 2; }
int compute_dtype_bytes(Precision p) { return p == Precision::Fp32 ? 4 : 2; }

}  // namespace wingspan
