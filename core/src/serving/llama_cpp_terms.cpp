#include "wingspan/llama_cpp_terms.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "wingspan/checked_math.hpp"
#include "wingspan/llama_cpp_graph.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::llama_cpp {

namespace {

constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kBF16 = 30;

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v)); }

// Products and sums of sizes a file or the command line gave: an overflow is an InputError.
std::uint64_t mul(std::uint64_t a, std::uint64_t b, const char* what) {
    return u(checked_mul(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b), what));
}
std::uint64_t add(std::uint64_t a, std::uint64_t b, const char* what) {
    return u(checked_add(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b), what));
}
std::int64_t pad(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// llama.cpp's sliding-window layouts by architecture (src/llama-model.cpp, load_hparams:
// hparams.set_swa_pattern(N) for gemma2 2, gemma3 6, cohere2 4, gpt-oss 2).
std::int64_t swa_period_of(const std::string& arch) {
    if (arch == "gemma2" || arch == "gpt-oss") return 2;
    if (arch == "gemma3") return 6;
    if (arch == "cohere2") return 4;
    return 0;
}

// The block index of "blk.N.…", or -1.
std::int64_t block_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    std::int64_t n = 0;
    size_t i = 4;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && n < (std::int64_t{1} << 20); ++i) n = n * 10 + (name[i] - '0');
    return i > 4 && i < name.size() && name[i] == '.' ? n : -1;
}

// One head's bytes in a cache type; llama.cpp refuses a type whose block does not divide it.
std::uint64_t head_bytes(std::uint32_t type, std::int64_t values) {
    const auto b = gguf::ggml_type_bytes(type, u(values));
    if (!b)
        throw InputError("KV cache: " + gguf::ggml_type_name(type) + " blocks do not divide a head of " +
                         std::to_string(values) + " values (llama.cpp refuses this cache type for this model)");
    return *b;
}

// Bytes of a rows × cols matrix in `type`; K-quants need rows of whole 256-blocks, and llama.cpp's
// quantizer falls back to Q8_0/Q5_0-class types where they do not divide: priced as Q8_0.
std::uint64_t matrix_bytes(std::uint32_t type, std::int64_t rows, std::int64_t cols) {
    if (const auto b = gguf::ggml_type_bytes(type, u(cols))) return *b * u(rows);
    return gguf::ggml_type_bytes(kQ8_0, u(pad(cols, 32))).value_or(0) * u(rows);
}

struct QuantScheme {
    std::uint32_t base, more_bits, output;   // most matrices, attn_v/ffn_down on "more bits" layers, the head
    std::uint32_t embedding;
};

QuantScheme scheme_of(const std::string& q) {
    if (q == "f32") return {kF32, kF32, kF32, kF32};
    if (q == "f16") return {kF16, kF16, kF16, kF16};
    if (q == "bf16") return {kBF16, kBF16, kBF16, kBF16};
    if (q == "q8_0") return {kQ8_0, kQ8_0, kQ8_0, kQ8_0};
    if (q == "q6_k") return {kQ6_K, kQ6_K, kQ6_K, kQ6_K};
    if (q == "q5_k_m") return {kQ5_K, kQ6_K, kQ6_K, kQ5_K};
    if (q == "q4_k_m") return {kQ4_K, kQ6_K, kQ6_K, kQ4_K};
    if (q == "q4_0") return {kQ4_0, kQ4_0, kQ6_K, kQ4_0};
    throw InputError("--quant for a GGUF serve plan expects f32, f16, bf16, q8_0, q6_k, q5_k_m, q4_k_m or q4_0, got '" + q + "'");
}

// llama-quant.cpp's use_more_bits(i, n): the first and last eighth, and every third layer between.
bool use_more_bits(std::int64_t i, std::int64_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

}  // namespace

bool ServeModel::is_swa_layer(std::int64_t layer) const {
    return sliding_window > 0 && swa_period > 0 && layer % swa_period < swa_period - 1;
}

std::uint64_t ServeModel::weight_bytes() const {
    std::uint64_t n = input_bytes + output_bytes;
    for (auto b : layer_bytes) n += b;
    return n;
}

bool is_gguf_quant(const std::string& q) {
    try {
        scheme_of(q);
        return true;
    } catch (const InputError&) {
        return false;
    }
}

std::uint32_t parse_cache_type(const std::string& name) {
    if (name == "f16") return kF16;
    if (name == "q8_0") return kQ8_0;
    if (name == "q4_0") return kQ4_0;
    if (name == "f32") return kF32;
    if (name == "bf16") return kBF16;
    throw InputError("--kv-type expects f16, q8_0, q4_0, bf16 or f32, got '" + name + "'");
}

ServeModel model_from_gguf(const gguf::File& f) {
    ServeModel m;
    m.architecture = f.architecture();
    if (m.architecture.empty()) throw InputError("GGUF: general.architecture is missing");
    const std::string a = m.architecture + ".";
    auto need = [&](const std::string& key) {
        const auto v = f.integer(a + key);
        if (!v || *v <= 0 || *v > (std::int64_t{1} << 32))
            throw InputError("GGUF: " + a + key + " is missing or not a single positive number");
        return *v;
    };
    m.layers = need("block_count");
    m.embedding = need("embedding_length");
    m.heads = need("attention.head_count");
    if (m.layers > 100000 || m.embedding > (1 << 24) || m.heads > (1 << 24))
        throw InputError("GGUF: block_count, embedding_length or head_count is not a model's");
    m.kv_heads = f.integer(a + "attention.head_count_kv").value_or(m.heads);
    m.key_length = f.integer(a + "attention.key_length").value_or(m.embedding / m.heads);
    m.value_length = f.integer(a + "attention.value_length").value_or(m.embedding / m.heads);
    // MoE: the routed experts a token passes through are the MLP's width at any moment.
    const auto ff = f.integer(a + "feed_forward_length");
    const auto expert_ff = f.integer(a + "expert_feed_forward_length");
    const auto used = f.integer(a + "expert_used_count");
    const auto sane = [](std::optional<std::int64_t> v) { return v && *v > 0 && *v <= (std::int64_t{1} << 24); };
    m.feed_forward = sane(expert_ff) && sane(used) ? *expert_ff * *used : ff.value_or(4 * m.embedding);
    m.experts_used = sane(expert_ff) && sane(used) ? *used : 0;
    m.context_length = f.integer(a + "context_length").value_or(0);
    m.kv_lora_rank = f.integer(a + "attention.kv_lora_rank").value_or(0);
    if (m.kv_lora_rank > 0) m.rope_dim = f.integer(a + "rope.dimension_count").value_or(64);
    m.sliding_window = f.integer(a + "attention.sliding_window").value_or(0);
    m.swa_period = swa_period_of(m.architecture);
    if (m.sliding_window > 0 && m.swa_period == 0) m.sliding_window = 0;   // llama.cpp gives them a full cache
    for (const auto& [name, v] : {std::pair{"head_count_kv", m.kv_heads}, {"key_length", m.key_length},
                                  {"value_length", m.value_length}, {"feed_forward_length", m.feed_forward},
                                  {"kv_lora_rank", m.kv_lora_rank}, {"sliding_window", m.sliding_window}})
        if (v < 0 || v > (std::int64_t{1} << 24)) throw InputError("GGUF: " + a + name + " = " + std::to_string(v) + " is not a model's");
    const auto tokens = f.array_lengths.find("tokenizer.ggml.tokens");
    m.vocab = tokens != f.array_lengths.end() ? static_cast<std::int64_t>(tokens->second) : f.integer(a + "vocab_size").value_or(0);
    m.vocab = std::clamp<std::int64_t>(m.vocab, 0, std::int64_t{1} << 24);
    m.layer_bytes.assign(static_cast<size_t>(m.layers), 0);
    for (const auto& t : f.tensors) {
        ++m.tensor_types[gguf::ggml_type_name(t.type)];
        const std::int64_t block = block_of(t.name);
        if (block >= 0 && block < m.layers) m.layer_bytes[static_cast<size_t>(block)] += t.bytes;
        else if (t.name.rfind("output", 0) == 0) m.output_bytes += t.bytes;
        else m.input_bytes += t.bytes;
        if (t.name == "token_embd.weight" && m.vocab == 0 && t.ne.size() == 2) m.vocab = static_cast<std::int64_t>(t.ne[1]);
    }
    return m;
}

ServeModel model_from_architecture(const Architecture& arch, const std::string& quant) {
    const QuantScheme q = scheme_of(quant);
    ServeModel m;
    m.architecture = arch.model_type;
    // The shape as llama.cpp's converter writes it: key/value length is the head dimension.
    std::tie(m.layers, m.embedding, m.heads, m.kv_heads) = std::tuple(arch.layers, arch.hidden, arch.heads, arch.kv_heads);
    m.key_length = m.value_length = arch.head_dim;
    m.feed_forward = arch.is_moe() ? arch.expert_intermediate * arch.experts_per_token : arch.intermediate;
    m.experts_used = arch.is_moe() ? arch.experts_per_token : 0;
    m.vocab = arch.vocab;
    m.context_length = arch.max_positions;
    m.layer_bytes.assign(static_cast<size_t>(std::max<std::int64_t>(0, arch.layers)), 0);
    for (const auto& g : arch.tensor_groups()) {
        const bool vector = g.cols == 1 || g.kind == TensorKind::Norm || g.kind == TensorKind::Bias;
        if (g.kind == TensorKind::Embedding || g.kind == TensorKind::PositionEmbedding) {
            m.input_bytes += matrix_bytes(vector ? kF32 : q.embedding, g.rows, g.cols) * u(g.count);
            continue;
        }
        if (g.kind == TensorKind::Head) {
            m.output_bytes += matrix_bytes(q.output, g.rows, g.cols) * u(g.count);
            continue;
        }
        if (g.name.rfind("layers.", 0) != 0 || arch.layers <= 0) {   // the final norm
            m.output_bytes += matrix_bytes(kF32, g.rows, g.cols) * u(g.count);
            continue;
        }
        const std::int64_t per_layer = std::max<std::int64_t>(1, g.count / arch.layers);
        for (std::int64_t i = 0; i < arch.layers; ++i) {
            std::uint32_t type = vector ? kF32 : q.base;
            if (!vector && (g.role == LinearRole::V || g.role == LinearRole::Down) && use_more_bits(i, arch.layers))
                type = q.more_bits;
            m.layer_bytes[static_cast<size_t>(i)] += matrix_bytes(type, g.rows, g.cols) * u(per_layer);
        }
        ++m.tensor_types[gguf::ggml_type_name(vector ? kF32 : q.base)];
    }
    return m;
}

KvCache kv_cache(const ServeModel& m, const ServeOptions& o) {
    if (o.n_ctx < 1 || o.n_ctx > (std::int64_t{1} << 24)) throw InputError("--ctx must be 1 .. 16,777,216 tokens");
    if (o.n_ubatch < 1 || o.n_ubatch > 65536 || o.n_parallel < 1 || o.n_parallel > 4096)
        throw InputError("--ubatch must be 1 .. 65,536 and --parallel 1 .. 4,096");
    KvCache kv;
    kv.cells = pad(o.n_ctx, 256);   // llama_context pads n_ctx to 256 cells
    // llama-kv-cache-iswa.cpp: size_swa = GGML_PAD(min(size_base, n_swa × n_seq_max + n_ubatch), 256).
    // swa_full (llama_context_default_params' default, so llama-cpp-python's) gives it every cell;
    // llama-server and llama-cli default to the window.
    kv.swa_cells = m.sliding_window <= 0 ? 0
                   : o.swa_full          ? kv.cells
                                         : pad(std::min(kv.cells, m.sliding_window * o.n_parallel + o.n_ubatch), 256);
    const bool mla = m.kv_lora_rank > 0;
    // MLA caches the compressed latent and the rope part of K for one shared head, and reads V
    // from the latent (no V tensor): unsloth PR#4757's "K-only cache".
    const std::int64_t k_len = mla ? m.kv_lora_rank + m.rope_dim : m.key_length;
    const std::int64_t heads = mla ? 1 : m.kv_heads;
    const std::uint64_t k_cell = mul(head_bytes(o.type_k, k_len), u(heads), "the KV cache");
    const std::uint64_t v_cell = mla ? 0 : mul(head_bytes(o.type_v, m.value_length), u(heads), "the KV cache");
    for (std::int64_t i = 0; i < m.layers; ++i) {
        const std::uint64_t cells = u(m.is_swa_layer(i) ? kv.swa_cells : kv.cells);
        const std::uint64_t k = mul(k_cell, cells, "the KV cache"), v = mul(v_cell, cells, "the KV cache");
        kv.layer_bytes.push_back(add(k, v, "the KV cache"));
        kv.k_bytes = add(kv.k_bytes, k, "the KV cache");
        kv.v_bytes = add(kv.v_bytes, v, "the KV cache");
    }
    return kv;
}

std::uint64_t ComputeBuffer::total() const { return replayed > 0 ? replayed : std::max({attention, mlp, output}); }

ComputeBuffer compute_buffer(const ServeModel& m, const ServeOptions& o) {
    // kv_cache checks n_ctx and n_ubatch; model_from_gguf bounds the dimensions (each < 2^24), so
    // only the products of several need checking.
    const std::uint64_t t = u(std::min(o.n_ctx, o.n_ubatch));
    const std::uint64_t n_kv = u(pad(o.n_ctx, 256));
    // The mask has one row per token: llama.cpp 0.3.36 prints 0.5 MiB of it for 4,096 cells at
    // n_ubatch 32 (older ggml padded the rows to GGML_KQ_MASK_PAD = 64).
    const std::uint64_t row = t * (o.flash_attn ? 2 : 4);
    // A sliding-window model keeps a second mask over the windowed cache's cells beside the first.
    const std::uint64_t mask = (n_kv + u(kv_cache(m, o).swa_cells)) * row;
    const std::uint64_t e = u(m.embedding), hd = u(m.key_length);
    const char* what = "the compute buffer";
    ComputeBuffer c;
    const std::uint64_t scores = o.flash_attn ? 0 : mul(4 * n_kv * t, u(m.heads), what);
    c.attention = add(add(mask, scores, what), mul(4 * t, 4 * e + u(m.heads) * hd + 2 * u(m.kv_heads) * hd, what), what);
    c.mlp = add(mask, mul(4 * t, 3 * u(m.feed_forward) + 4 * e, what), what);
    c.output = mul(4 * t, u(m.vocab) + 3 * e, what);
    if (const auto r = replay_compute_graph(m, o, false)) c.replayed = r->host;
    return c;
}

ServePlan plan(const ServeModel& m, const ServeOptions& o) {
    ServePlan p;
    p.layers = m.layers;
    const std::int64_t ngl = o.n_gpu_layers < 0 ? m.layers + 1 : o.n_gpu_layers;
    p.gpu_layers = std::min(ngl, m.layers);
    p.output_on_gpu = ngl > m.layers;
    p.kv = kv_cache(m, o);
    p.compute = compute_buffer(m, o);
    const std::int64_t first_gpu = m.layers - p.gpu_layers;
    for (std::int64_t i = 0; i < m.layers; ++i) {
        const auto w = m.layer_bytes.empty() ? 0 : m.layer_bytes[static_cast<size_t>(i)];
        const auto kv = p.kv.layer_bytes[static_cast<size_t>(i)];
        (i >= first_gpu ? p.weights_gpu : p.weights_host) += w;
        (i >= first_gpu ? p.kv_gpu : p.kv_host) += kv;
    }
    p.weights_host += m.input_bytes;
    (p.output_on_gpu ? p.weights_gpu : p.weights_host) += m.output_bytes;
    // A replayed graph with layers on the GPU: the device's buffer as ggml_backend_sched splits the
    // offloaded graph. With some layers on the host the device buffer stays the same: the CUDA
    // backend's offload_op takes every op of n_ubatch >= 32 rows that reads a host weight
    // (ggml-cuda.cu ggml_backend_cuda_device_offload_op), so each layer's peak is on the GPU
    // still. The host holds the graph's inputs and token_embd's get_rows (everything offloaded),
    // or the whole graph on one backend (an upper bound) when layers stay on the host.
    const auto offloaded = p.gpu_layers > 0 ? replay_compute_graph(m, o, true) : std::nullopt;
    if (offloaded) {
        p.compute_gpu = offloaded->device;
        p.compute_host = p.output_on_gpu ? offloaded->host : p.compute.total();
        return p;
    }
    if (p.gpu_layers > 0) p.compute_gpu = p.compute.total();
    if (p.gpu_layers < m.layers) p.compute_host = p.gpu_layers > 0 ? std::max(p.compute.attention, p.compute.mlp) : p.compute.total();
    return p;
}

std::int64_t most_gpu_layers(const ServeModel& m, ServeOptions o, std::uint64_t gpu_budget) {
    std::int64_t best = 0;
    for (std::int64_t n = 1; n <= m.layers + 1; ++n) {   // GPU bytes grow with n: the first miss ends it
        o.n_gpu_layers = n;
        if (plan(m, o).gpu_total() > gpu_budget) break;
        best = n;
    }
    return best;
}

std::int64_t longest_context(const ServeModel& m, ServeOptions o, std::uint64_t gpu_budget, std::uint64_t host_budget,
                             bool one_pool) {
    const std::int64_t ceiling = m.context_length > 0 ? pad(m.context_length, 256) : std::int64_t{1} << 20;
    auto fits = [&](std::int64_t n_ctx) {
        o.n_ctx = n_ctx;
        const ServePlan p = plan(m, o);
        if (one_pool) return p.gpu_total() + p.host_total() <= gpu_budget;
        return p.gpu_total() <= gpu_budget && p.host_total() <= host_budget;
    };
    if (!fits(256)) return -1;
    std::int64_t lo = 1, hi = ceiling / 256;   // in units of 256 cells; fits(lo × 256) holds
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo + 1) / 2;
        if (fits(mid * 256)) lo = mid;
        else hi = mid - 1;
    }
    return std::min(lo * 256, m.context_length > 0 ? m.context_length : lo * 256);
}

std::uint64_t naive_kv_bytes(const ServeModel& m, std::int64_t n_ctx, double bytes_per_value) {
    const double values = 2.0 * double(m.kv_heads) * double(m.embedding / m.heads) * double(m.layers) * double(n_ctx);
    return static_cast<std::uint64_t>(values * bytes_per_value);
}

}  // namespace wingspan::llama_cpp
