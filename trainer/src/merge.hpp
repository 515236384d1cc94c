#pragma once
// `wingspan-train merge --model BASE --adapter RUN_DIR --out DIR [--max-shard-size BYTES]`:
// a LoRA/QLoRA run's adapters folded into the base weights, written as a Hugging Face model
// folder (config, tokenizer and chat template files, safetensors sharded at 5 GB with
// model.safetensors.index.json) with the base's tensor names, shapes and dtypes, so
// transformers loads it and llama.cpp / mlx-lm convert it.
#include <string>
#include <vector>

namespace wingspan::train {

// Progress on stderr, the output folder as the last stdout line. Exit 0, 2 for bad input
// (missing folders, an adapter that does not fit the base), 1 for failures (disk).
int run_merge(const std::vector<std::string>& args);

}  // namespace wingspan::train
