#pragma once
// An Ollama Modelfile for an exported GGUF: FROM the file beside it, TEMPLATE in Ollama's Go
// template syntax for the chat format the model's chat template renders (chat_format.hpp
// recognises it), and PARAMETER stop for the format's end-of-turn tokens.
// Syntax: ollama/ollama docs/modelfile.md and docs/template.md (.Messages, .Role, .Content).
#include <filesystem>
#include <string>

#include "gguf/gguf_vocab.hpp"

namespace wingspan::train::gguf {

std::string ollama_modelfile(const std::string& gguf_file, const std::filesystem::path& model_dir,
                             const VocabSummary& vocab);

}  // namespace wingspan::train::gguf
