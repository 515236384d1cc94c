#pragma once
// `wingspan-train export --format gguf --quant f32|f16|bf16|q8_0|q4_0 --model DIR [--adapter RUN_DIR]
//     --out FILE.gguf`: a model folder (or base + a LoRA/QLoRA run's adapters, merged on the fly)
// as one GGUF file for llama.cpp, Ollama and LM Studio, with an Ollama Modelfile beside it.
// Tensor names and metadata keys are those llama.cpp's convert_hf_to_gguf.py writes for the
// architecture (Llama, Mistral and SmolLM as "llama", Qwen2, Qwen3, Gemma). One tensor is read, merged,
// converted and written at a time into a temporary file that is renamed at the end.
// stdout carries run-protocol lines (docs/protocol.md "Export"): a `log` per tensor with its
// progress, then `done`; an `error` line and exit 2 for bad input, 1 for failures.
#include <string>
#include <vector>

namespace wingspan::train {

int run_export(const std::vector<std::string>& args);

}  // namespace wingspan::train
