#include "wingspan/llama_cpp_graph.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "wingspan/checked_math.hpp"

// Sources (ggml-org/llama.cpp; the allocator as of commit 0450e2f, unchanged in what is used here
// since 2024):
//   ggml/src/ggml-alloc.c  ggml_dyn_tallocr_alloc / ggml_dyn_tallocr_free_bytes (the best-fit
//                          allocator), ggml_gallocr_allocate_node (in-place reuse),
//                          ggml_gallocr_alloc_graph_impl (inputs first, frees), ggml_op_can_inplace
//   ggml/src/ggml-backend.cpp  ggml_backend_sched_split_graph: graph inputs are assigned to the
//                          CPU backend ("1.inp"); a split's inputs from another backend are copied
//                          into its own buffer at the split's start; GET_ROWS on the host's
//                          token_embd is not offloaded (ggml-cuda.cu get_op_batch_size returns 0)
//   src/llama-graph.cpp    build_inp_embd, build_attn (KV stored with set_rows at k_idxs/v_idxs),
//                          build_attn_mha; src/models/llama.cpp the layer; 2024: src/llama.cpp
//                          llm_build_llama, llm_build_kv (ggml_cpy into the cache), llm_build_ffn

namespace wingspan::llama_cpp {

namespace {

constexpr int kHost = 0, kDevice = 1;

struct Tensor {
    std::uint64_t bytes = 0;
    int backend = kHost;
    std::vector<int> src;
    int view_of = -1;            // a view allocates nothing; it keeps view_of alive
    bool counts_as_view = true;  // ggml-backend's dependency nodes (op NONE) are not counted as views
    bool inplace = false;        // ggml_op_can_inplace: RMS_NORM, MUL, ADD, ROPE, SOFT_MAX, UNARY ...
    bool input = false;          // ggml_set_input: allocated before any node
    bool keep = false;           // never freed (GGML_TENSOR_FLAG_OUTPUT, or held for the whole graph)
    bool leaf = false;           // a weight or the KV cache: not in the compute buffer
    int children = 0, views = 0;
    bool allocated = false;
    std::uint64_t offset = 0;
};

// ggml_dyn_tallocr: free blocks sorted by offset, the last one unbounded. A request takes the
// smallest block that fits among all but the last (the later one on a tie), else the last; freed
// bytes merge with their neighbours. max() is the buffer the backend allocates.
class DynAllocator {
public:
    explicit DynAllocator(std::uint64_t alignment) : align_(alignment) {}
    std::uint64_t alloc(std::uint64_t size) {
        size = aligned(size);
        size_t best = blocks_.size() - 1;
        std::uint64_t best_size = std::numeric_limits<std::uint64_t>::max();
        for (size_t i = 0; i + 1 < blocks_.size(); ++i)
            if (blocks_[i].size >= size && blocks_[i].size <= best_size) best = i, best_size = blocks_[i].size;
        const std::uint64_t at = blocks_[best].offset;
        blocks_[best].offset += size;
        blocks_[best].size -= size;
        if (blocks_[best].size == 0) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
        max_ = std::max(max_, at + size);
        return at;
    }
    void free(std::uint64_t at, std::uint64_t size) {
        size = aligned(size);
        for (size_t i = 0; i < blocks_.size(); ++i) {
            Block& b = blocks_[i];
            if (b.offset + b.size == at) {
                b.size += size;
                if (i + 1 < blocks_.size() && b.offset + b.size == blocks_[i + 1].offset) {
                    b.size += blocks_[i + 1].size;
                    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i + 1));
                }
                return;
            }
            if (at + size == b.offset) {
                b.offset = at;
                b.size += size;
                if (i > 0 && blocks_[i - 1].offset + blocks_[i - 1].size == b.offset) {
                    blocks_[i - 1].size += b.size;
                    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
                }
                return;
            }
        }
        auto pos = std::find_if(blocks_.begin(), blocks_.end(), [&](const Block& b) { return b.offset > at; });
        blocks_.insert(pos, Block{at, size});
    }
    std::uint64_t max() const { return max_; }

private:
    struct Block {
        std::uint64_t offset, size;
    };
    std::uint64_t aligned(std::uint64_t v) const { return (v + align_ - 1) / align_ * align_; }
    std::uint64_t align_, max_ = 0;
    std::vector<Block> blocks_{Block{0, std::numeric_limits<std::uint64_t>::max() / 2}};
};

class Graph {
public:
    std::vector<Tensor> t;
    std::vector<int> nodes;

    int leaf() {
        Tensor x;
        x.leaf = true;
        return add(std::move(x), false);
    }
    int input(std::uint64_t bytes, bool keep = false) {
        Tensor x;
        x.bytes = bytes;
        x.input = true;
        x.keep = keep;
        return add(std::move(x), false);
    }
    int op(std::uint64_t bytes, int backend, std::vector<int> src, bool inplace = false) {
        Tensor x;
        x.bytes = bytes;
        x.backend = backend;
        x.src = std::move(src);
        x.inplace = inplace;
        return add(std::move(x), true);
    }
    int view(int of, int backend, std::vector<int> src, bool counts_as_view = true) {
        Tensor x;
        x.backend = backend;
        x.src = std::move(src);
        x.view_of = root(of);
        x.counts_as_view = counts_as_view;
        return add(std::move(x), true);
    }
    // ggml_backend_sched's split input: a dependency node on the source (so it lives until the
    // copy) and the copy in the consuming backend's buffer, allocated at the split's start.
    int copy_to(int src, int backend) {
        view(src, t[static_cast<size_t>(src)].backend, {src}, false);
        return op(t[static_cast<size_t>(src)].bytes, backend, {});
    }
    int root(int i) const { return t[static_cast<size_t>(i)].view_of >= 0 ? t[static_cast<size_t>(i)].view_of : i; }

private:
    int add(Tensor x, bool node) {
        t.push_back(std::move(x));
        const int id = static_cast<int>(t.size()) - 1;
        if (node) nodes.push_back(id);
        return id;
    }
};

// ggml_gallocr_alloc_graph_impl over the node list; returns each backend's highest offset.
GraphBuffers allocate(Graph& g) {
    DynAllocator alloc[2] = {DynAllocator(32), DynAllocator(128)};   // CPU TENSOR_ALIGNMENT, CUDA 128
    auto allocate_node = [&](int id) {
        Tensor& n = g.t[static_cast<size_t>(id)];
        if (n.allocated || n.leaf || n.view_of >= 0) return;
        n.allocated = true;
        if (n.inplace)
            for (int p : n.src) {
                Tensor& parent = g.t[static_cast<size_t>(p)];
                // Views are never the allocator's own (is_own), so only a whole parent is reused.
                if (!parent.allocated || parent.keep || parent.view_of >= 0 || parent.bytes != n.bytes ||
                    parent.backend != n.backend || parent.children != 1 || parent.views != 0)
                    continue;
                n.offset = parent.offset;
                parent.allocated = false;   // the node owns the memory now
                return;
            }
        n.offset = alloc[n.backend].alloc(n.bytes);
    };
    auto free_node = [&](Tensor& n) {
        if (n.keep) return;
        alloc[n.backend].free(n.offset, n.bytes);
        n.allocated = false;
    };
    for (int id : g.nodes) {
        Tensor& n = g.t[static_cast<size_t>(id)];
        if (n.view_of >= 0 && n.counts_as_view) ++g.t[static_cast<size_t>(n.view_of)].views;
        if (n.input) allocate_node(id);
        for (int s : n.src) {
            ++g.t[static_cast<size_t>(s)].children;
            if (g.t[static_cast<size_t>(s)].input) allocate_node(s);
        }
    }
    for (int id : g.nodes) {
        for (int s : g.t[static_cast<size_t>(id)].src) allocate_node(s);
        allocate_node(id);
        for (int s : g.t[static_cast<size_t>(id)].src) {
            Tensor& p = g.t[static_cast<size_t>(s)];
            if (--p.children != 0 || p.views != 0) continue;
            if (p.view_of >= 0) {
                Tensor& v = g.t[static_cast<size_t>(p.view_of)];
                if (--v.views == 0 && v.children == 0 && v.allocated) free_node(v);
            } else if (p.allocated) {
                free_node(p);
            }
        }
    }
    return {alloc[kHost].max(), alloc[kDevice].max()};
}

struct Shape {
    std::uint64_t e = 0, q = 0, kv = 0, ff = 0, heads = 0, head_dim = 0, vocab = 0;
    std::uint64_t tokens = 0, cells = 0, mask_rows = 0;
    std::int64_t layers = 0;
    bool current = true;
    bool flash = false;   // flash attention: an f16 mask, one fused op, V stored untransposed
};

struct Inputs {
    int pos, mask, k_idxs, v_idxs, out_ids;
};

// One decoder layer in llama.cpp's node order (the order ggml_build_forward_expand visits them:
// GGML_SCHED_DEBUG=2 prints it). d: the layer's backend. Returns the layer's output.
int build_layer(Graph& g, const Shape& s, int d, int in, const Inputs& x, bool last) {
    const std::uint64_t T = s.tokens, f = 4;
    const int w = g.leaf(), k_cache = g.leaf(), v_cache = g.leaf();
    const int norm = g.op(s.e * T * f, d, {in}, true);
    const int attn_norm = g.op(s.e * T * f, d, {norm, w}, true);
    const auto matmul = [&](std::uint64_t width, int a) { return g.op(width * T * f, d, {w, a}); };
    // ROPE may work in place, but its parent is a reshape view, which ggml-alloc never reuses.
    const auto roped = [&](int a, std::uint64_t width) { return g.op(width * T * f, d, {g.view(a, d, {a}), x.pos}, true); };
    int q_rope = 0;
    if (s.current) {   // build_attn: q, then v, then k (the order llama.cpp 0.3.36 prints); set_rows into the cache
        q_rope = roped(matmul(s.q, attn_norm), s.q);
        const int v = matmul(s.kv, attn_norm);
        const int v3 = g.view(v, d, {v});
        const int k_rope = roped(matmul(s.kv, attn_norm), s.kv);
        g.view(k_cache, d, {g.view(k_cache, d, {k_cache}), g.view(k_rope, d, {k_rope}), x.k_idxs});
        g.view(v_cache, d, {g.view(v_cache, d, {v_cache}), g.view(v3, d, {v3}), x.v_idxs});
    } else {           // llm_build_kv: q, k, v expanded together; ggml_cpy into the cache
        q_rope = roped(matmul(s.q, attn_norm), s.q);
        const int k_rope = roped(matmul(s.kv, attn_norm), s.kv);
        const int v = matmul(s.kv, attn_norm);
        g.view(k_cache, d, {k_rope, g.view(k_cache, d, {k_cache})});
        g.view(v_cache, d, {g.view(v, d, {g.view(v, d, {v})}), g.view(v_cache, d, {v_cache})});
    }
    int kqv_out = 0;
    if (s.flash) {   // build_attn_mha: ggml_flash_attn_ext(q, k, v, mask) -> [head_dim, heads, T] f32, then a reshape
        const int fa = g.op(s.head_dim * s.heads * T * f, d,
                            {g.view(q_rope, d, {q_rope}), g.view(k_cache, d, {k_cache}), g.view(v_cache, d, {v_cache}), x.mask});
        kqv_out = g.view(fa, d, {fa});
    } else {         // kq = k·q (f32 scores), soft_max in place, kqv = v·kq, cont
        const int kq = g.op(s.cells * T * s.heads * f, d, {g.view(k_cache, d, {k_cache}), g.view(q_rope, d, {q_rope})});
        const int kq_soft_max = g.op(s.cells * T * s.heads * f, d, {kq, x.mask}, true);
        const int kqv = g.op(s.head_dim * s.heads * T * f, d, {g.view(v_cache, d, {v_cache}), kq_soft_max});
        kqv_out = g.op(s.head_dim * s.heads * T * f, d, {g.view(kqv, d, {kqv})});
    }
    int attn_out = matmul(s.e, kqv_out), residual = in;
    if (last) {   // the last layer keeps the output rows only (every one at the worst case)
        attn_out = g.op(s.e * T * f, d, {attn_out, x.out_ids});
        residual = g.op(s.e * T * f, d, {in, x.out_ids});
    }
    const int ffn_inp = g.op(s.e * T * f, d, {attn_out, residual}, true);
    const int ffn_norm = g.op(s.e * T * f, d, {g.op(s.e * T * f, d, {ffn_inp}, true), w}, true);
    int act = 0;
    if (s.current) {   // fused SWIGLU: a new tensor (GLU is not an in-place op)
        const int gate = matmul(s.ff, ffn_norm);
        act = g.op(s.ff * T * f, d, {gate, matmul(s.ff, ffn_norm)});
    } else {           // llm_build_ffn LLM_FFN_SILU, LLM_FFN_PAR: silu(gate) in place, then × up in place
        const int silu = g.op(s.ff * T * f, d, {matmul(s.ff, ffn_norm)}, true);
        act = g.op(s.ff * T * f, d, {silu, matmul(s.ff, ffn_norm)}, true);
    }
    return g.op(s.e * T * f, d, {matmul(s.e, act), ffn_inp}, true);
}

GraphBuffers replay(const Shape& s, bool offload) {
    Graph g;
    const std::uint64_t T = s.tokens;
    const int dev = offload ? kDevice : kHost;
    // Graph inputs (ggml_set_input) live in the host's buffer, allocated before any node.
    const int tokens = g.input(T * 4);
    int embd = g.op(s.e * T * 4, kHost, {g.leaf(), tokens});   // get_rows on the host's token_embd
    if (s.current) {
        // build_inp_embd: ggml_build_forward_select between the tokens' rows and an embeddings
        // input; that input stays allocated for the whole graph (without it every llama.cpp
        // 0.3.36 printout is one embedding × n_ubatch × 4 B larger than the replay).
        embd = g.view(embd, kHost, {embd, g.input(s.e * T * 4, true)});
    }
    Inputs x{g.input(T * 4), g.input(s.cells * s.mask_rows * (s.flash ? 2 : 4)), -1, -1, g.input(T * 4)};
    if (s.current) {
        x.k_idxs = g.input(T * 8);
        // Without flash attention V is stored transposed: one index per value; with it, per row.
        x.v_idxs = g.input(T * (s.flash ? 1 : s.kv) * 8);
    }
    int in = embd;
    if (offload) {   // the device split's inputs, copied in the order its nodes first use them
        in = g.copy_to(embd, kDevice);
        x.pos = g.copy_to(x.pos, kDevice);
        if (s.current) x.k_idxs = g.copy_to(x.k_idxs, kDevice), x.v_idxs = g.copy_to(x.v_idxs, kDevice);
        x.mask = g.copy_to(x.mask, kDevice);
        x.out_ids = g.copy_to(x.out_ids, kDevice);
    }
    for (std::int64_t il = 0; il < s.layers; ++il) in = build_layer(g, s, dev, in, x, il + 1 == s.layers);
    const int result_norm = g.op(s.e * T * 4, dev, {g.op(s.e * T * 4, dev, {in}, true), g.leaf()}, true);
    const int logits = g.op(s.vocab * T * 4, dev, {g.leaf(), result_norm});
    g.t[static_cast<size_t>(logits)].keep = true;   // the graph's output
    return allocate(g);
}

}  // namespace

bool graph_replay_covers(const ServeModel& m, const ServeOptions& o) {
    static const char* const kDense[] = {"llama", "mistral", "qwen2"};
    const bool dense = std::any_of(std::begin(kDense), std::end(kDense), [&](const char* a) { return m.architecture == a; });
    // Flash attention: replayed with f16 K and V on the current graph (checked against llama.cpp
    // 0.3.36); a quantized cache adds tensors the replay does not build.
    const bool attention = !o.flash_attn || (o.graph == GraphEra::Current && o.type_k == 1 && o.type_v == 1);
    return dense && attention && m.sliding_window <= 0 && m.kv_lora_rank <= 0 && m.experts_used <= 0 &&
           m.layers > 0 && m.layers <= 1024 && m.heads > 0 && m.key_length == m.value_length;
}

std::optional<GraphBuffers> replay_compute_graph(const ServeModel& m, const ServeOptions& o, bool offload) {
    if (!graph_replay_covers(m, o)) return std::nullopt;
    Shape s;
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v)); };
    s.e = u(m.embedding);
    s.heads = u(m.heads);
    s.head_dim = u(m.key_length);
    s.q = s.heads * s.head_dim;
    s.kv = u(m.kv_heads) * s.head_dim;
    s.ff = u(m.feed_forward);
    s.vocab = u(m.vocab);
    s.layers = m.layers;
    s.tokens = u(std::min(o.n_ctx, o.n_ubatch));
    s.cells = u((o.n_ctx + 255) / 256 * 256);
    s.current = o.graph == GraphEra::Current;
    s.flash = o.flash_attn;
    // The mask's rows: n_ubatch in llama.cpp 0.3.36; padded to GGML_KQ_MASK_PAD (32) in 2024.
    s.mask_rows = s.current ? s.tokens : (s.tokens + 31) / 32 * 32;
    // The largest tensor is the scores, cells × tokens × heads × 4 B: reject what overflows it.
    checked_mul(checked_mul(static_cast<std::int64_t>(s.cells), static_cast<std::int64_t>(s.tokens), "the compute buffer"),
                checked_mul(static_cast<std::int64_t>(s.heads) + static_cast<std::int64_t>(s.ff + s.vocab), 4, "the compute buffer"),
                "the compute buffer");
    return replay(s, offload);
}

}  // namespace wingspan::llama_cpp
