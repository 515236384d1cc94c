#pragma once
// A training framework's own config file read back as a plan: axolotl YAML, LLaMA-Factory YAML,
// torchtune recipe YAML, TRL/HF TrainingArguments (+ PEFT LoraConfig) YAML or JSON, a PEFT
// adapter_config.json, mlx-lm's LoRA YAML, and the config.yaml of Wingspan's Unsloth recipe. The result is the `wingspan plan` flags the file
// means, with every key accounted for: read, ignored (and why), or a framework default assumed
// where the file is silent. yaml-cpp and nlohmann_json parse; nothing here reads YAML by hand.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profiles.hpp"

namespace wingspan {

enum class ConfigFormat { Axolotl, LlamaFactory, Torchtune, HfTrl, PeftAdapter, MlxLm, Unsloth };
// "axolotl", "llama-factory", "torchtune", "hf-trl", "peft", "mlx-lm", "unsloth" (the config.yaml
// Wingspan's Unsloth recipe writes: Unsloth has no config format of its own)
const char* to_string(ConfigFormat);
// Throws InputError listing the accepted names.
ConfigFormat parse_config_format(const std::string&);

struct ConfigNote {
    std::string key;     // "sequence_len", "model._component_"
    std::string note;    // "--seq 2048", "not a memory setting", "LLaMA-Factory's default: on (...)"
};

struct ConfigImport {
    ConfigFormat format = ConfigFormat::HfTrl;
    std::string model;                                      // as the file names it
    std::vector<std::pair<std::string, std::string>> flags; // plan flags in order ({"--seq", "2048"}; flag-only: value "")
    std::vector<ConfigNote> read, ignored, defaults;

    std::vector<std::string> plan_args() const;            // flags flattened for the command line
    // The same flags as a partial TrainingSetup JSON (TrainingSetup::from_json keeps the rest),
    // for the window, which holds a setup rather than flags. --model/--hf/--framework are not in it.
    nlohmann::json setup_json() const;
    std::string flag_value(const std::string& flag) const;  // "" when the flag is not there
    nlohmann::json to_json() const;                         // {format, model, flags, read, ignored, defaults}
};

// A YAML (or JSON: YAML's subset) document as JSON. Scalars resolve as PyYAML would read them for
// these frameworks (null, booleans incl. yes/no/on/off, integers, floats; quoted stays text).
// Throws InputError for a parse error, a document over 1 MiB, or over 100,000 nodes / 64 levels
// (an alias bomb).
nlohmann::json parse_config_document(const std::string& text);
nlohmann::json read_config_file(const std::filesystem::path& file);

// The format its keys say (throws InputError when none fits: "not a config I know").
ConfigFormat detect_config_format(const nlohmann::json& doc);

// Reads a document. `library` maps the file's model id to a bundled model where one matches
// (else the plan uses --hf with the id).
ConfigImport import_config(const nlohmann::json& doc, std::optional<ConfigFormat> forced,
                           const ProfileLibrary* library);

// The key of a format's config file that a plan flag changes ("--batch" in axolotl:
// "micro_batch_size"), for advice given in the file's own terms; "" when the format has none.
std::string config_key_for(ConfigFormat format, const std::string& flag);

// The bundled model a Hugging Face id (or a torchtune builder) names, if any: its hf_repo equal
// up to case, or the same name without "-Instruct"/"-chat"/"-hf"/"-it"/"-bf16"/"-2507" suffixes.
const ModelProfile* bundled_model_for(const ProfileLibrary& library, const std::string& id);

}  // namespace wingspan
