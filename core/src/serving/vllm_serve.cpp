#include "wingspan/vllm_serve.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "wingspan/checked_math.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/quant_formats.hpp"

namespace wingspan::vllm {

namespace {

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v)); }

template <class T>
T field(const nlohmann::json& j, const char* key, T fallback, T lo, T hi, const std::string& where) {
    if (!j.contains(key)) return fallback;
    const auto& v = j.at(key);
    if (!v.is_number()) throw InputError(where + ": " + key + " must be a number");
    const T x = v.get<T>();
    if (!(x >= lo && x <= hi)) throw InputError(where + ": " + key + " is out of range");
    return x;
}

// Each KV head is kept whole on a GPU: with fewer KV heads than GPUs they are replicated
// (vllm/model_executor/layers/linear.py QKVParallelLinear: num_kv_head_replicas).
std::int64_t kv_heads_per_gpu(const Architecture& a, std::int64_t tp) { return std::max<std::int64_t>(1, a.kv_heads / tp); }

}  // namespace

Profile parse_profile(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object()) throw InputError(where + ": a vLLM serving profile is a JSON object");
    Profile p;
    p.id = j.value("id", std::string("vllm"));
    p.name = j.value("name", std::string("vLLM"));
    p.version = j.value("version", std::string());
    p.gpu_memory_utilization = field(j, "gpu_memory_utilization", 0.9, 0.01, 1.0, where);
    p.block_size = field<std::int64_t>(j, "block_size", 16, 1, 1024, where);
    p.max_num_seqs = field<std::int64_t>(j, "max_num_seqs", 256, 1, 1 << 20, where);
    p.min_batched_tokens = field<std::int64_t>(j, "min_batched_tokens", 2048, 1, 1 << 24, where);
    p.sampler_bytes_per_logit = field(j, "sampler_bytes_per_logit", 0.0, 0.0, 1024.0, where);
    p.non_torch_bytes = field<std::uint64_t>(j, "non_torch_bytes", 0, 0, std::uint64_t{1} << 40, where);
    if (j.contains("sources") && j.at("sources").is_object())
        for (const auto& [k, v] : j.at("sources").items())
            if (v.is_string()) p.sources[k] = v.get<std::string>();
    return p;
}

Profile load_profile(const std::filesystem::path& profiles_dir) {
    const auto file = profiles_dir / "serving" / "vllm.json";
    return parse_profile(read_untrusted_json_file(file), file.string());
}

std::uint64_t block_bytes(const Architecture& a, std::int64_t block_size, std::int64_t kv_bytes, std::int64_t tp) {
    // kv_cache_utils / FullAttentionSpec.page_size_bytes: 2 (K and V) × block_size ×
    // num_kv_heads × head_size × dtype size, per layer; a block spans every layer.
    const std::int64_t per_layer =
        checked_mul(checked_mul(2 * block_size, kv_heads_per_gpu(a, tp), "a vLLM KV block"), a.head_dim * kv_bytes, "a vLLM KV block");
    return u(checked_mul(per_layer, a.layers, "a vLLM KV block"));
}

std::int64_t blocks_for(std::int64_t available_bytes, std::uint64_t block) {
    return available_bytes <= 0 || block == 0 ? 0 : static_cast<std::int64_t>(u(available_bytes) / block);
}

std::uint64_t weight_bytes(const Architecture& a, const Options& o, std::uint64_t* quantized) {
    const auto tp = static_cast<std::uint64_t>(std::max<std::int64_t>(1, o.tensor_parallel));
    if (quantized) *quantized = 0;
    if (!is_checkpoint_format(o.quantization))   // every parameter in the load dtype
        return static_cast<std::uint64_t>(double(a.parameter_count()) * o.weight_bytes_per_param / double(tp));
    // The quantized linear methods create the checkpoint's tensors as stored (quant_formats.hpp:
    // awq.py, gptq.py, fp8.py create_weights); embeddings, head and norms keep the model dtype.
    require_valid_quant_group(o.quantization, o.quant_group_size);
    const int plain = static_cast<int>(o.weight_bytes_per_param);
    std::uint64_t all = 0, packed = 0;
    for (const auto& g : a.tensor_groups()) {
        const auto bytes = u(checkpoint_group_bytes(g, o.quantization, o.quant_group_size, plain));
        all += bytes;
        if (quantized_in_checkpoint(g)) packed += bytes;
    }
    if (quantized) *quantized = packed / tp;
    return all / tp;
}

Plan plan(const Architecture& a, const Profile& profile, const Options& o, std::uint64_t total_bytes) {
    if (a.layers <= 0 || a.hidden <= 0 || a.head_dim <= 0 || a.vocab <= 0) throw InputError("vLLM plan: the model has no shape");
    const std::int64_t tp = o.tensor_parallel;
    if (tp < 1 || tp > 64) throw InputError("--tensor-parallel must be 1 .. 64");
    if (o.kv_bytes != 1 && o.kv_bytes != 2 && o.kv_bytes != 4) throw InputError("vLLM's KV cache holds 1, 2 or 4 bytes a value");
    Plan p;
    p.total = total_bytes;
    const double util = o.gpu_memory_utilization > 0 ? o.gpu_memory_utilization : profile.gpu_memory_utilization;
    if (!(util > 0 && util <= 1)) throw InputError("--gpu-memory-utilization must be in (0, 1]");
    p.requested = static_cast<std::uint64_t>(double(total_bytes) * util);
    p.max_model_len = o.max_model_len > 0 ? o.max_model_len : a.max_positions;
    if (p.max_model_len <= 0 || p.max_model_len > (std::int64_t{1} << 24)) throw InputError("--ctx (max_model_len) must be 1 .. 16,777,216");
    // V0 without chunked prefill (arg_utils.py / config.py SchedulerConfig): max_num_batched_tokens
    // = max(max_model_len, 2048); chunked prefill or V1 set it themselves (--max-num-batched-tokens).
    p.max_num_batched_tokens = o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens
                                                            : std::max(p.max_model_len, profile.min_batched_tokens);
    p.max_num_seqs = o.max_num_seqs > 0 ? o.max_num_seqs : profile.max_num_seqs;
    p.block_size = profile.block_size;
    // Weights split over the tensor-parallel GPUs ("model weights take", the allocator's bytes
    // after load_model).
    p.weights = weight_bytes(a, o, &p.quantized_weights);
    // The profile run's forward pass over max_num_batched_tokens tokens, in the model dtype, no
    // autograd: the MLP holds the residual and the normed hidden state (fused_add_rms_norm
    // works in place), gate_up (MergedColumnParallelLinear, 2 × intermediate) and SiluAndMul's
    // output (intermediate); the attention step holds less (qkv + its output).
    const std::uint64_t n = u(p.max_num_batched_tokens);
    const std::int64_t ff = a.is_moe() ? a.expert_intermediate * a.experts_per_token : a.intermediate;
    const std::uint64_t mlp = u(2 * a.hidden) + u(3 * ff / tp);
    const std::uint64_t attention = u(2 * a.hidden) + u((a.q_dim() + 2 * kv_heads_per_gpu(a, tp) * a.head_dim + a.q_dim()) / tp);
    p.forward_peak = static_cast<std::uint64_t>(o.weight_bytes_per_param) * n * std::max(mlp, attention);
    // Then the sampler on one token per sequence, min(max_num_seqs, tokens) rows of the
    // vocabulary, while the forward's output (every token's hidden state) is still held. The
    // forward's temporaries are freed by then: the profile's peak is the larger moment.
    const std::uint64_t rows = u(std::min(p.max_num_seqs, p.max_num_batched_tokens));
    p.sampler_peak = static_cast<std::uint64_t>(o.weight_bytes_per_param) * n * u(a.hidden) +
                     static_cast<std::uint64_t>(profile.sampler_bytes_per_logit * double(rows) * double(a.vocab));
    p.activation_peak = std::max(p.forward_peak, p.sampler_peak);
    p.non_torch = profile.non_torch_bytes;
    p.kv_available = static_cast<std::int64_t>(p.requested) - static_cast<std::int64_t>(p.weights + p.activation_peak + p.non_torch);
    p.block_bytes = block_bytes(a, p.block_size, o.kv_bytes, tp);
    p.num_blocks = blocks_for(p.kv_available, p.block_bytes);
    p.kv_tokens = p.num_blocks * p.block_size;
    p.max_concurrency = double(p.kv_tokens) / double(p.max_model_len);
    return p;
}

}  // namespace wingspan::vllm
