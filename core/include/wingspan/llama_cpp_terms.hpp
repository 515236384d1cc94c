#pragma once
// Serving memory as llama.cpp allocates it (issue 30 item 3): the model buffer (each GGUF
// tensor in its own ggml type, split between the GPU and host RAM by --n-gpu-layers), the KV
// cache (f16/q8_0/q4_0 K and V; sliding-window layers in their own smaller cache; MLA's
// compressed latent) and the compute buffer (the worst-case graph at n_ubatch tokens). Sizes come
// from a GGUF file's header, or from an architecture and a quantization name (q4_k_m, q8_0, ...)
// when there is no file. Every figure is bytes; the sources are cited where each term is made.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "architecture.hpp"
#include "gguf_file.hpp"

namespace wingspan::llama_cpp {

// What llama.cpp's loader needs of a model to size its buffers.
struct ServeModel {
    std::string architecture;                      // general.architecture ("llama", "gemma3", ...)
    std::int64_t layers = 0, embedding = 0, feed_forward = 0, heads = 0, kv_heads = 0;
    std::int64_t key_length = 0, value_length = 0, vocab = 0, context_length = 0;
    // Sliding-window attention: layer i is windowed when swa_period > 0 and
    // i % swa_period < swa_period - 1 (llama_hparams::set_swa_pattern).
    std::int64_t sliding_window = 0, swa_period = 0;
    // Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, GLM-5): the cache holds
    // kv_lora_rank + rope_dim values per token and layer, one "head", no separate V.
    std::int64_t kv_lora_rank = 0, rope_dim = 0;
    std::int64_t experts_used = 0;                 // mixture of experts: routed experts per token (0: dense)
    std::vector<std::uint64_t> layer_bytes;       // blk.N.* tensors, by N
    std::uint64_t input_bytes = 0;                 // token_embd & co.: llama.cpp keeps them in host RAM
    std::uint64_t output_bytes = 0;                // output.weight, output_norm: on the GPU only when all layers are
    std::map<std::string, std::int64_t> tensor_types;   // "Q4_K" -> tensors of that type

    bool is_swa_layer(std::int64_t layer) const;
    std::uint64_t weight_bytes() const;
};

// From a GGUF header. Throws InputError for a file without the keys llama.cpp needs.
ServeModel model_from_gguf(const gguf::File& f);

// From an architecture, each tensor in the type llama.cpp's quantizer gives it for `quant`
// (llama_tensor_get_type in src/llama-quant.cpp: q4_k_m keeps attn_v and ffn_down in Q6_K on the
// first and last eighth of the layers and every third between, the output in Q6_K).
// quant: f32, f16, bf16, q8_0, q6_k, q5_k_m, q4_k_m, q4_0. Throws InputError for another name.
ServeModel model_from_architecture(const Architecture& arch, const std::string& quant);
bool is_gguf_quant(const std::string& quant);
std::uint32_t parse_cache_type(const std::string& name);   // f16|q8_0|q4_0|f32|bf16 -> ggml type

// Which llama.cpp builds the worst-case graph (the compute buffer): Current is llama-graph.cpp's
// build_attn with set_rows into the cache and the fused SWIGLU (llama.cpp from mid-2025;
// llama-cpp-python 0.3.36); Legacy2024 is src/llama.cpp's llm_build_kv (ggml_cpy into the cache,
// silu × up) that printed "llama_new_context_with_model" (2024 to early 2025).
enum class GraphEra { Current, Legacy2024 };

struct ServeOptions {
    std::int64_t n_ctx = 4096;
    std::int64_t n_ubatch = 512;        // llama.cpp's default
    std::int64_t n_parallel = 1;        // sequences sharing the unified cache
    std::uint32_t type_k = 1, type_v = 1;   // ggml types: 1 F16, 8 Q8_0, 2 Q4_0
    bool flash_attn = false;
    bool swa_full = false;              // windowed layers get the full cache (llama.cpp's --swa-full)
    std::int64_t n_gpu_layers = -1;     // -1: every layer and the output (llama.cpp's -ngl 999)
    GraphEra graph = GraphEra::Current;
};

struct KvCache {
    std::int64_t cells = 0, swa_cells = 0;        // full layers' cells, windowed layers' cells
    std::vector<std::uint64_t> layer_bytes;       // K + V of each layer
    std::uint64_t k_bytes = 0, v_bytes = 0;
    std::uint64_t total() const { return k_bytes + v_bytes; }
};
KvCache kv_cache(const ServeModel& m, const ServeOptions& o);

// The worst-case graph's buffer (llama_context's sched reserve at n_tokens = min(n_ctx,
// n_ubatch), every token an output). For dense llama-family models without flash attention the
// graph is replayed through a copy of ggml's allocator (llama_cpp_graph.hpp): `replayed` holds
// the buffer with everything on one backend, and plan() replays the offloaded split for the
// device and host buffers. Elsewhere, three moments of what is live (fitted on llama.cpp's CPU
// printouts: tests/gguf/check_serve_memory.py); the buffer is the largest:
//   attention  mask + (no flash attention: the f32 scores n_kv × T × heads)
//              + 4 B × T × (4·embedding + heads·key_length + 2·kv_heads·key_length)
//   MLP        mask + 4 B × T × (3·feed_forward + 4·embedding)
//   output     logits 4 B × T × vocab + 4 B × T × 3·embedding
// mask: n_kv × T in f32, or f16 with flash attention; sliding-window models hold a
// second one over the windowed cache's cells.
struct ComputeBuffer {
    std::uint64_t attention = 0, mlp = 0, output = 0;
    std::uint64_t replayed = 0;   // the replayed graph on one backend; 0 where not replayed
    std::uint64_t total() const;
};
ComputeBuffer compute_buffer(const ServeModel& m, const ServeOptions& o);

// The whole serve plan: what the GPU and host RAM hold.
struct ServePlan {
    std::int64_t gpu_layers = 0, layers = 0;
    bool output_on_gpu = false;
    std::uint64_t weights_gpu = 0, weights_host = 0;
    std::uint64_t kv_gpu = 0, kv_host = 0;
    std::uint64_t compute_gpu = 0, compute_host = 0;
    KvCache kv;
    ComputeBuffer compute;
    std::uint64_t gpu_total() const { return weights_gpu + kv_gpu + compute_gpu; }
    std::uint64_t host_total() const { return weights_host + kv_host + compute_host; }
};
// Layers [layers - n_gpu_layers, layers) and their KV go to the GPU, the output too when
// n_gpu_layers > layers, token_embd never (llama_model::load_tensors). Where the graph is
// replayed (llama_cpp_graph.hpp) and a layer is on the GPU, the GPU holds the offloaded graph's
// device buffer and the host its inputs and token rows (everything offloaded) or the whole
// graph on one backend (some layers on the host: an upper bound). Elsewhere the compute buffer
// is on the GPU when any layer is, and with some layers on the host the host runs their part of
// the graph, whose buffer is the attention and MLP moments without the logits.
ServePlan plan(const ServeModel& m, const ServeOptions& o);

// Solvers: the most GPU layers (0 .. layers + 1) whose GPU bytes fit `gpu_budget`, and the
// longest context (a multiple of 256 up to the model's native length, or 2^20 without one)
// whose GPU and host bytes fit both budgets (one_pool: their sum fits gpu_budget, for unified
// memory and CPUs); -1 when not even 256 cells do. most_gpu_layers is at least 0 (no layer on the GPU).
std::int64_t most_gpu_layers(const ServeModel& m, ServeOptions o, std::uint64_t gpu_budget);
std::int64_t longest_context(const ServeModel& m, ServeOptions o, std::uint64_t gpu_budget, std::uint64_t host_budget,
                             bool one_pool = false);

// The single formula most calculators use (2 × kv_heads × embedding/heads × layers × n_ctx ×
// bytes), for the comparisons unsloth PR#4757 reports; f16 is 2 bytes.
std::uint64_t naive_kv_bytes(const ServeModel& m, std::int64_t n_ctx, double bytes_per_value);

}  // namespace wingspan::llama_cpp
