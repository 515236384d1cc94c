#pragma once
// Serving with vLLM (issue 30 item 3): what vLLM reserves on one GPU and how many tokens of KV
// cache it is left with. vLLM takes gpu_memory_utilization × the GPU's total memory as its
// ceiling, loads the weights, runs one dummy batch of max_num_batched_tokens tokens to measure
// its activation peak, and fills the rest with KV cache blocks of block_size tokens
// (vllm/worker/worker.py determine_num_available_blocks, V0; vllm/v1/worker/gpu_worker.py
// determine_available_memory and vllm/v1/core/kv_cache_utils.py, V1). The figures a vLLM
// start-up log prints ("model weights take", "PyTorch activation peak memory", "Available KV
// cache memory", "# GPU blocks" / "GPU KV cache size", "Maximum concurrency") are the fields of
// Plan. The release behaviour (defaults, the sampler's bytes) lives in profiles/serving/vllm.json.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "architecture.hpp"
#include "setup.hpp"

namespace wingspan::vllm {

struct Profile {
    std::string id, name, version;
    double gpu_memory_utilization = 0.9;
    std::int64_t block_size = 16;
    std::int64_t max_num_seqs = 256;
    std::int64_t min_batched_tokens = 2048;   // max_num_batched_tokens = max(max_model_len, this) without chunked prefill
    double sampler_bytes_per_logit = 0;       // what the profile run's sampler holds per (sequence × vocab entry)
    std::uint64_t non_torch_bytes = 0;        // device memory outside PyTorch's allocator after the profile run
    std::map<std::string, std::string> sources;
};
// Throws InputError naming the field.
Profile parse_profile(const nlohmann::json& j, const std::string& where);
// <profiles_dir>/serving/vllm.json.
Profile load_profile(const std::filesystem::path& profiles_dir);

struct Options {
    double gpu_memory_utilization = 0;       // 0: the profile's
    std::int64_t max_model_len = 0;          // 0: the model's max_position_embeddings
    std::int64_t max_num_batched_tokens = 0; // 0: max(max_model_len, profile's min_batched_tokens)
    std::int64_t max_num_seqs = 0;           // 0: the profile's
    std::int64_t tensor_parallel = 1;
    std::int64_t kv_bytes = 2;               // per cached value: 2 for the model's bf16/fp16, 1 for fp8
    double weight_bytes_per_param = 2;       // bf16/fp16 weights (and the activations' dtype)
    // A pre-quantized checkpoint (AWQ, GPTQ, fp8: quant_formats.hpp) loaded as stored; None: 16-bit.
    Quantization quantization = Quantization::None;
    std::int64_t quant_group_size = 128;     // AWQ / GPTQ group_size (-1: one group per column)
};

struct Plan {
    std::uint64_t total = 0, requested = 0;    // the GPU's total; × gpu_memory_utilization
    std::uint64_t weights = 0, activation_peak = 0, non_torch = 0;
    std::uint64_t quantized_weights = 0;       // of weights: the checkpoint format's linears (0 for 16-bit)
    std::uint64_t forward_peak = 0, sampler_peak = 0;   // the profile run's two moments; activation_peak is the larger
    std::int64_t kv_available = 0;             // requested - weights - activation_peak - non_torch (may be < 0)
    std::uint64_t block_bytes = 0;             // one block of block_size tokens, every layer, K and V
    std::int64_t num_blocks = 0, kv_tokens = 0;
    std::int64_t max_model_len = 0, max_num_batched_tokens = 0, max_num_seqs = 0, block_size = 0;
    double max_concurrency = 0;                // kv_tokens / max_model_len: sequences of the full length at once
};

// One GPU of total_bytes (as CUDA reports it: torch.cuda.mem_get_info()[1]).
Plan plan(const Architecture& arch, const Profile& profile, const Options& o, std::uint64_t total_bytes);
// Blocks and tokens from the bytes vLLM found available (kv_cache_utils: num_blocks =
// available // block_bytes), for checking against a log that prints both.
std::int64_t blocks_for(std::int64_t available_bytes, std::uint64_t block_bytes);
std::uint64_t block_bytes(const Architecture& arch, std::int64_t block_size, std::int64_t kv_bytes, std::int64_t tensor_parallel);
// The weights vLLM loads on one of tensor_parallel GPUs ("model weights take"): a checkpoint
// format's quantized linears as stored, the rest in the 16-bit dtype. `quantized` gets the first part.
std::uint64_t weight_bytes(const Architecture& arch, const Options& o, std::uint64_t* quantized = nullptr);

}  // namespace wingspan::vllm
