#pragma once
// What `wingspan-train --model` names: a folder (a plain one or a Hugging Face cache
// snapshot), or OWNER/NAME[@REVISION] of a model already in the Hugging Face cache.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace wingspan::train {

// The folder to read. A path that exists is taken as it is; otherwise OWNER/NAME[@REVISION]
// is looked up in the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub).
// Throws InputError saying how to download it when it is neither.
std::filesystem::path resolve_model_argument(const std::string& text);

// The folder of a LoRA/QLoRA run holding adapter_config.json and adapter_model.safetensors:
// RUN_DIR itself, or its final/ or adapter/ folder. Throws InputError.
std::filesystem::path adapter_dir_of(const std::filesystem::path& run);

// A JSON object from a file; throws InputError naming the file.
nlohmann::json read_json_object(const std::filesystem::path& file);

}  // namespace wingspan::train
