#pragma once
// llama.cpp's compute buffers replayed (issue 30): the worst-case decoder graph of a dense
// llama-family model (llama, mistral, qwen2) built node by node in llama.cpp's order, each node
// placed on the host or the device as ggml_backend_sched splits the graph, and every tensor
// allocated and freed by a copy of ggml-alloc.c's graph allocator (best-fit free blocks, a
// parent's memory reused in place, a tensor freed after its last child). Each backend's buffer
// is the highest offset its allocator reached: what llama.cpp prints as "CPU compute buffer
// size" and "CUDA0 compute buffer size" / "CUDA_Host compute buffer size".
//
// Verified, nothing fitted: the current graph against llama-cpp-python 0.3.36's CPU printouts
// (tests/gguf/check_serve_memory.py, test_core_llama_cpp_graph), the 2024 graph against the
// CUDA0 and CUDA_Host figures in bench/published/serving.json.
#include <cstdint>
#include <optional>

#include "llama_cpp_terms.hpp"

namespace wingspan::llama_cpp {

struct GraphBuffers {
    std::uint64_t host = 0;     // the CPU backend's compute buffer (CPU, or CUDA_Host when offloaded)
    std::uint64_t device = 0;   // the GPU backend's (CUDA0); 0 when nothing is offloaded
};

// Whether the replay covers this model and these options: a dense llama-family graph (no
// sliding window, MLA or experts), without flash attention or with it over an f16 cache on the
// current graph. Elsewhere compute_buffer's formula holds.
bool graph_replay_covers(const ServeModel& m, const ServeOptions& o);

// The buffers of the worst-case graph (n_ubatch tokens, every one an output) with every layer
// and the output on the device (offload) or none of them; std::nullopt where
// graph_replay_covers is false.
std::optional<GraphBuffers> replay_compute_graph(const ServeModel& m, const ServeOptions& o, bool offload);

}  // namespace wingspan::llama_cpp
