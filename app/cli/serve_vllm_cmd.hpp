#pragma once
// `wingspan plan --method serve --framework vllm [--model ID | --config F] [--ctx N]
//  [--gpu-memory-utilization F] [--max-num-seqs N] [--max-num-batched-tokens N]
//  [--tensor-parallel N] [--kv-type bf16|fp8] [--machine ID] [--json]`: what vLLM reserves on
// each GPU and the KV cache it is left with (core/src/serving/vllm_serve.cpp, profiles/serving/vllm.json):
// tokens of KV cache and how many sequences of --ctx tokens fit at once.
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "wingspan/profiles.hpp"

namespace wingspan::cli {

// True when a `plan` names --framework vllm.
bool wants_vllm_serve(const std::vector<std::string>& args);

int run_serve_vllm(const ProfileLibrary& lib, const std::filesystem::path& profiles_dir, const std::vector<std::string>& args,
                   std::ostream& out);

}  // namespace wingspan::cli
