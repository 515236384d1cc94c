// The parts of config import that are not about one framework: YAML into JSON (yaml-cpp),
// which framework a document is, and which bundled model an id names.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "wingspan/config_import.hpp"
#include "wingspan/errors.hpp"

namespace wingspan {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxDocumentBytes = 1 << 20;
constexpr int kMaxNodes = 100000;
constexpr int kMaxDepth = 64;

// A plain scalar as PyYAML (YAML 1.1) reads it, which is what these frameworks load their files
// with: ~/null, true/false/yes/no/on/off, integers, floats; a quoted scalar stays text.
json scalar_to_json(const YAML::Node& n) {
    const std::string s = n.Scalar();
    if (n.Tag() == "!") return s;   // quoted
    static const std::regex null_re("^(~|null|Null|NULL|)$");
    static const std::regex true_re("^(true|True|TRUE|yes|Yes|YES|on|On|ON)$");
    static const std::regex false_re("^(false|False|FALSE|no|No|NO|off|Off|OFF)$");
    static const std::regex int_re("^[-+]?[0-9]+$");
    static const std::regex float_re(R"(^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$)");
    if (std::regex_match(s, null_re)) return nullptr;
    if (std::regex_match(s, true_re)) return true;
    if (std::regex_match(s, false_re)) return false;
    if (std::regex_match(s, int_re)) {
        errno = 0;
        const long long v = std::strtoll(s.c_str(), nullptr, 10);
        if (errno == 0) return v;
    }
    if (std::regex_match(s, float_re)) return std::strtod(s.c_str(), nullptr);
    return s;
}

json node_to_json(const YAML::Node& n, int depth, int& budget) {
    if (--budget < 0) throw InputError("config: more than 100,000 values (an alias bomb?)");
    if (depth > kMaxDepth) throw InputError("config: nested deeper than 64 levels");
    switch (n.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined: return nullptr;
        case YAML::NodeType::Scalar: return scalar_to_json(n);
        case YAML::NodeType::Sequence: {
            json a = json::array();
            for (const auto& item : n) a.push_back(node_to_json(item, depth + 1, budget));
            return a;
        }
        case YAML::NodeType::Map: {
            json o = json::object();
            for (const auto& kv : n) {
                if (!kv.first.IsScalar()) throw InputError("config: a mapping key that is not text");
                o[kv.first.Scalar()] = node_to_json(kv.second, depth + 1, budget);
            }
            return o;
        }
    }
    return nullptr;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

// "NousResearch/Meta-Llama-3.1-8B-Instruct" -> "llama-3.1-8b": the name without owner, case,
// "meta-" and the suffixes that name a tuned or converted variant of the same architecture.
std::string model_key(const std::string& id) {
    std::string s = lower(id);
    while (!s.empty() && s.back() == '/') s.pop_back();
    if (auto slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
    if (s.rfind("meta-", 0) == 0) s = s.substr(5);
    static const std::regex suffix("(-(instruct|chat|hf|it|bf16|fp16|base|[0-9]{4}|4bit|8bit|mlx))+$");
    return std::regex_replace(s, suffix, "");
}

}  // namespace

json parse_config_document(const std::string& text) {
    if (text.size() > kMaxDocumentBytes) throw InputError("config: over 1 MiB; not a training config");
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw InputError(std::string("config: not valid YAML or JSON: ") + e.what());
    }
    int budget = kMaxNodes;
    json doc = node_to_json(root, 0, budget);
    if (!doc.is_object()) throw InputError("config: expected a mapping of keys at the top");
    return doc;
}

json read_config_file(const std::filesystem::path& file) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (ec) throw InputError("config: cannot read " + file.string() + ": " + ec.message());
    if (size > kMaxDocumentBytes) throw InputError("config: " + file.string() + " is over 1 MiB; not a training config");
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_config_document(ss.str());
}

const char* to_string(ConfigFormat f) {
    switch (f) {
        case ConfigFormat::Axolotl: return "axolotl";
        case ConfigFormat::LlamaFactory: return "llama-factory";
        case ConfigFormat::Torchtune: return "torchtune";
        case ConfigFormat::HfTrl: return "hf-trl";
        case ConfigFormat::PeftAdapter: return "peft";
        case ConfigFormat::MlxLm: return "mlx-lm";
        case ConfigFormat::Unsloth: return "unsloth";
    }
    return "unknown";
}

ConfigFormat parse_config_format(const std::string& s) {
    for (ConfigFormat f : {ConfigFormat::Axolotl, ConfigFormat::LlamaFactory, ConfigFormat::Torchtune,
                           ConfigFormat::HfTrl, ConfigFormat::PeftAdapter, ConfigFormat::MlxLm, ConfigFormat::Unsloth})
        if (s == to_string(f)) return f;
    throw InputError("--from-format expects axolotl, llama-factory, torchtune, hf-trl, peft, mlx-lm or unsloth, got '" + s + "'");
}

ConfigFormat detect_config_format(const json& doc) {
    auto has = [&](const char* k) { return doc.contains(k); };
    // Each test is a key only that framework's schema has (the readers cite the schemas).
    if (has("peft_type") && (has("r") || has("target_modules"))) return ConfigFormat::PeftAdapter;
    // Wingspan's Unsloth recipe: FastLanguageModel.from_pretrained's keyword arguments as a group.
    if (doc.contains("from_pretrained") && doc["from_pretrained"].is_object() && doc["from_pretrained"].contains("model_name"))
        return ConfigFormat::Unsloth;
    if (has("base_model") || has("sequence_len") || has("micro_batch_size") || has("lora_target_linear"))
        return ConfigFormat::Axolotl;
    if (has("finetuning_type") || has("cutoff_len") || has("lora_target") || has("stage"))
        return ConfigFormat::LlamaFactory;
    if (doc.contains("model") && doc["model"].is_object() && doc["model"].contains("_component_"))
        return ConfigFormat::Torchtune;
    if (has("fine_tune_type") || has("lora_parameters") || has("num_layers") || has("lora_layers") ||
        (has("model") && has("iters")))
        return ConfigFormat::MlxLm;
    if (has("model_name_or_path") || has("per_device_train_batch_size") || has("use_peft"))
        return ConfigFormat::HfTrl;
    throw InputError("config: not a config I know (axolotl, LLaMA-Factory, torchtune, TRL/HF, PEFT adapter_config.json "
                     "mlx-lm or Wingspan's Unsloth config.yaml); name it with --from-format");
}

const ModelProfile* bundled_model_for(const ProfileLibrary& library, const std::string& id) {
    if (id.empty()) return nullptr;
    for (const auto& m : library.models())
        if (lower(m.hf_repo) == lower(id) || lower(m.id) == lower(id)) return &m;
    const std::string key = model_key(id);
    for (const auto& m : library.models())
        if ((!m.hf_repo.empty() && model_key(m.hf_repo) == key) || lower(m.id) == key) return &m;
    return nullptr;
}

std::vector<std::string> ConfigImport::plan_args() const {
    std::vector<std::string> out;
    for (const auto& [flag, value] : flags) {
        out.push_back(flag);
        if (!value.empty()) out.push_back(value);
    }
    return out;
}

std::string ConfigImport::flag_value(const std::string& flag) const {
    for (const auto& [f, v] : flags)
        if (f == flag) return v.empty() ? "true" : v;
    return "";
}

json ConfigImport::setup_json() const {
    // Plan flag -> TrainingSetup::to_json key; the values are the flags' own spellings, which
    // from_json parses with the same parsers as the command line.
    static const std::map<std::string, std::string> text = {
        {"--method", "method"},     {"--quant", "quantization"}, {"--targets", "lora_targets"}, {"--optimizer", "optimizer"},
        {"--precision", "precision"}, {"--attention", "attention"}, {"--sharding", "sharding"}};
    static const std::map<std::string, std::string> whole = {
        {"--rank", "lora_rank"}, {"--seq", "seq_len"}, {"--batch", "micro_batch"}, {"--grad-accum", "grad_accum"},
        {"--lora-layers", "lora_layers"}, {"--loss-chunk", "loss_chunk_tokens"}, {"--devices", "devices"}};
    static const std::map<std::string, std::string> real = {{"--alpha", "lora_alpha"}, {"--dropout", "lora_dropout"}};
    // The objective's flags (issue 31), under setup.objective as to_json writes them.
    static const std::map<std::string, std::string> objective_text = {{"--objective", "kind"}, {"--reference", "reference"}};
    static const std::map<std::string, std::string> objective_whole = {
        {"--prompt-length", "prompt_len"}, {"--completion-length", "completion_len"}, {"--generations", "generations"}};
    static const std::map<std::string, std::string> objective_real = {{"--beta", "beta"}, {"--vllm-share", "vllm_share"}};
    json j = json::object();
    for (const auto& [flag, value] : flags) {
        if (auto t = text.find(flag); t != text.end()) j[t->second] = value;
        else if (auto w = whole.find(flag); w != whole.end()) j[w->second] = std::stoll(value);
        else if (auto r = real.find(flag); r != real.end()) j[r->second] = std::stod(value);
        else if (flag == "--grad-checkpointing") j["grad_checkpointing"] = value == "on";
        else if (flag == "--train-embeddings") j["train_embeddings"] = true;
        else if (flag == "--dora") j["dora"] = true;
        else if (flag == "--compile") j["compile"] = true;
        else if (flag == "--activation-offload") j["activation_offload"] = true;
        else if (flag == "--optimizer-in-backward") j["optimizer_in_backward"] = true;
        else if (auto t = objective_text.find(flag); t != objective_text.end()) j["objective"][t->second] = value;
        else if (auto w = objective_whole.find(flag); w != objective_whole.end()) j["objective"][w->second] = std::stoll(value);
        else if (auto r = objective_real.find(flag); r != objective_real.end()) j["objective"][r->second] = std::stod(value);
    }
    return j;
}

std::string config_key_for(ConfigFormat format, const std::string& flag) {
    // The keys each reader in config_import.cpp reads for the flag.
    static const std::map<ConfigFormat, std::map<std::string, std::string>> keys = {
        {ConfigFormat::Axolotl,
         {{"--batch", "micro_batch_size"}, {"--grad-accum", "gradient_accumulation_steps"}, {"--seq", "sequence_len"},
          {"--grad-checkpointing", "gradient_checkpointing"}, {"--rank", "lora_r"}, {"--method", "adapter"},
          {"--optimizer", "optimizer"}}},
        {ConfigFormat::LlamaFactory,
         {{"--batch", "per_device_train_batch_size"}, {"--grad-accum", "gradient_accumulation_steps"}, {"--seq", "cutoff_len"},
          {"--grad-checkpointing", "disable_gradient_checkpointing"}, {"--rank", "lora_rank"},
          {"--method", "finetuning_type / quantization_bit"}, {"--optimizer", "optim"}}},
        {ConfigFormat::Torchtune,
         {{"--batch", "batch_size"}, {"--grad-accum", "gradient_accumulation_steps"}, {"--seq", "tokenizer.max_seq_len"},
          {"--grad-checkpointing", "enable_activation_checkpointing"}, {"--rank", "model.lora_rank"},
          {"--method", "model._component_"}, {"--loss-chunk", "loss._component_"}}},
        {ConfigFormat::HfTrl,
         {{"--batch", "per_device_train_batch_size"}, {"--grad-accum", "gradient_accumulation_steps"}, {"--seq", "max_length"},
          {"--grad-checkpointing", "gradient_checkpointing"}, {"--rank", "lora_r"}, {"--method", "use_peft / load_in_4bit"},
          {"--optimizer", "optim"}}},
        {ConfigFormat::PeftAdapter, {{"--rank", "r"}}},
        {ConfigFormat::Unsloth,
         {{"--batch", "sft_config.per_device_train_batch_size"}, {"--grad-accum", "sft_config.gradient_accumulation_steps"},
          {"--seq", "from_pretrained.max_seq_length"}, {"--grad-checkpointing", "get_peft_model.use_gradient_checkpointing"},
          {"--rank", "get_peft_model.r"}, {"--method", "from_pretrained.load_in_4bit / full_finetuning"},
          {"--optimizer", "sft_config.optim"}}},
        {ConfigFormat::MlxLm,
         {{"--batch", "batch_size"}, {"--grad-accum", "grad_accumulation_steps"}, {"--seq", "max_seq_length"},
          {"--grad-checkpointing", "grad_checkpoint"}, {"--rank", "lora_parameters.rank"}, {"--method", "fine_tune_type"},
          {"--optimizer", "optimizer"}, {"--lora-layers", "num_layers"}}},
    };
    auto f = keys.find(format);
    if (f == keys.end()) return "";
    auto k = f->second.find(flag);
    return k == f->second.end() ? "" : k->second;
}

json ConfigImport::to_json() const {
    auto notes = [](const std::vector<ConfigNote>& v) {
        json a = json::array();
        for (const auto& n : v) a.push_back({{"key", n.key}, {"note", n.note}});
        return a;
    };
    json flags_json = json::array();
    for (const auto& [f, v] : flags) flags_json.push_back(v.empty() ? f : f + " " + v);
    return {{"format", to_string(format)}, {"model", model},       {"flags", flags_json},
            {"read", notes(read)},         {"ignored", notes(ignored)}, {"defaults", notes(defaults)}};
}

}  // namespace wingspan
