#pragma once
// `wingspan-train merge --model BASE --adapter RUN_DIR --out DIR [--max-shard-size BYTES]`:
// a LoRA/QLoRA run's adapters folded into the base weights, written as a Hugging Face model
// folder (config, tokenizer and chat template files, safetensors sharded at 5 GB with
// model.safetensors.index.json) with the base's tensor names, shapes and dtypes, so
// transformers loads it and llama.cpp / mlx-lm convert it.
#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace wingspan::train {

class WeightReader;

// A LoRA/QLoRA run's adapters, folded into the base's weights one at a time (merge and export).
class AdapterFold {
public:
    // RUN_DIR (or its adapter folder), checked against the base's shapes. Throws InputError.
    AdapterFold(const std::string& run, const WeightReader& base);
    // The base weight `name` with its adapter pair added (in fp32, stored back in w's dtype);
    // w itself when the adapter has no pair for it.
    at::Tensor apply(const std::string& name, at::Tensor w);
    // Throws InputError when a pair was never used or nothing matched (another base model).
    void check_all_used() const;
    double scaling() const { return scaling_; }
    bool qlora() const { return qlora_; }
    int merged() const { return merged_; }
    const std::filesystem::path& dir() const { return dir_; }

private:
    std::filesystem::path dir_;
    double scaling_ = 1;
    bool qlora_ = false;
    int merged_ = 0;
    std::map<std::string, at::Tensor> adapter_;
    std::set<std::string> unused_;
};

// Progress on stderr, the output folder as the last stdout line. Exit 0, 2 for bad input
// (missing folders, an adapter that does not fit the base), 1 for failures (disk).
int run_merge(const std::vector<std::string>& args);

}  // namespace wingspan::train
