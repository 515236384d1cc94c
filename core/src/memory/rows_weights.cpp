// The tensor-group walk: what each group of the model's tensors stores, trains and keeps in its
// optimizer, summed once for the state rows (rows_state.cpp).
#include <algorithm>

#include "state.hpp"
#include "wingspan/nf4.hpp"
#include "wingspan/quant_formats.hpp"

namespace wingspan {

namespace {
struct GroupWalk {
    const PlanContext& c;
    StateTotals& t;
    const TensorGroup* current = nullptr;

    // One trainable tensor kind (rows × cols, count of them): weights, gradients by when backward
    // makes them, master copy, optimizer and paged state.
    void add_trainable(std::int64_t rows, std::int64_t cols, std::int64_t count, bool adapter) {
        const std::int64_t el = rows * cols * count;
        const int wb = adapter ? c.st.adapter : c.st.weight;
        const int gbytes = c.st.grad_of(wb);
        (adapter ? t.adapter_w : t.trainable_w) += el * wb;
        (adapter ? t.adapter_elems : t.trainable_elems) += el;
        t.grads += el * gbytes;
        if (current) add_gradient_by_time(el * gbytes, adapter);
        t.master += el * c.st.master_of(wb);
        t.master_elems += c.st.master_of(wb) > 0 ? el : 0;
        t.optimizer += count * optimizer_bytes(c.setup.optimizer, c.st.moment, rows, cols);
        t.paged += count * paged_state_bytes(c.setup.optimizer, rows, cols);
        t.paged_largest = std::max(t.paged_largest, paged_state_bytes(c.setup.optimizer, rows, cols));
        t.largest_trainable = std::max(t.largest_trainable, rows * cols);
        t.largest_grad = std::max(t.largest_grad, rows * cols * gbytes);
        if (!(current && current->kind == TensorKind::Embedding && c.arch.tied_embeddings))
            t.largest_grad_untied = std::max(t.largest_grad_untied, rows * cols * gbytes);
    }

    void add_gradient_by_time(std::int64_t gb, bool adapter) {
        const TensorGroup* g = current;
        if (g->name.rfind("layers.", 0) != 0) {
            const bool last = (g->kind == TensorKind::Embedding && !c.arch.tied_embeddings) || g->kind == TensorKind::PositionEmbedding;
            const bool final_norm = g->kind == TensorKind::Norm || g->kind == TensorKind::Bias;
            (last ? t.g_embed : final_norm ? t.g_final_norm : t.g_head) += gb;
            return;
        }
        const std::int64_t per_layer = gb / (adapter ? std::max<std::int64_t>(1, c.Lg) : c.arch.layers);
        switch (g->role) {
            case LinearRole::Down: t.g_down += per_layer; break;
            case LinearRole::Gate: case LinearRole::Up: case LinearRole::Router:
            case LinearRole::SharedGate: t.g_mlp += per_layer; break;
            case LinearRole::O: t.g_o += per_layer; break;
            case LinearRole::Q: case LinearRole::K: case LinearRole::V: t.g_qkv += per_layer; break;
            default:   // norms (and their biases): half before attention, half before the MLP
                t.g_mlp += per_layer / 2;
                t.g_qkv += per_layer - per_layer / 2;
                t.g_qkv_norm += per_layer - per_layer / 2;
                break;
        }
    }

    void add_quantized(const TensorGroup& g) {
        QuantLayout l;
        if (is_checkpoint_format(c.quant)) {
            // A pre-quantized checkpoint: its tensors as stored, whatever the framework quantizes to.
            l = checkpoint_layout(c.quant, g.rows, g.cols, c.setup.quant_group_size);
        } else if (c.fw.quant_format == "affine") {
            // MLX: bits per value packed in uint32 words, a scale and a bias per group.
            const std::int64_t bits = c.quant == Quantization::Int8 ? 8 : 4;
            l.packed_bytes = g.elements() * bits / 8;
            l.constant_bytes = (g.elements() + c.fw.quant_group - 1) / c.fw.quant_group * c.fw.quant_constant_bytes;
        } else {
            l = c.quant == Quantization::Int8 ? int8_layout(g.rows, g.cols)
                                              : nf4_layout(g.elements(), c.quant == Quantization::Nf4DoubleQuant);
        }
        t.packed += l.packed_bytes * g.count;
        t.constants += l.constant_bytes * g.count;
        t.quant_elems += g.total_elements();
        t.largest_quantized = std::max(t.largest_quantized, g.elements());
        if (g.role == LinearRole::Down) t.down_quantized = std::max(t.down_quantized, g.elements());
    }
};
// Whether group g is stored quantized: a checkpoint format's own choice (quant_formats.hpp), else
// the linears and what the framework's profile quantizes besides.
bool stored_quantized(const PlanContext& c, const TensorGroup& g) {
    if (is_checkpoint_format(c.quant)) return quantized_in_checkpoint(g);
    return g.kind == TensorKind::Linear || (c.fw.quantizes_embeddings && g.kind == TensorKind::Embedding) ||
           (c.fw.quantizes_head && g.kind == TensorKind::Head);
}
}  // namespace

StateTotals walk_tensor_groups(const PlanContext& c) {
    StateTotals t;
    GroupWalk walk{c, t};
    const auto& setup = c.setup;
    for (const auto& g : c.groups) {
        walk.current = &g;
        if (g.name.rfind("layers.", 0) == 0) t.layer_param_elems += g.total_elements() / c.arch.layers;
        const bool trainable = setup.method == Method::Full ||
                               (c.lora && setup.train_embeddings &&
                                (g.kind == TensorKind::Embedding || g.kind == TensorKind::Head));
        if (trainable) {
            walk.add_trainable(g.rows, g.cols, g.count, false);
        } else if (c.quant != Quantization::None && stored_quantized(c, g)) {
            walk.add_quantized(g);
        } else {
            t.frozen_plain += g.total_elements() * c.frozen_bytes;
            t.frozen_plain_elems += g.total_elements();
        }
        if (c.lora && lora_adapts(c.arch, setup, g)) {
            const std::int64_t adapted = adapted_count(c.arch, setup, g);
            walk.add_trainable(setup.lora_rank, g.cols, adapted, true);   // A: r x d_in
            walk.add_trainable(g.rows, setup.lora_rank, adapted, true);   // B: d_out x r
            if (setup.dora) walk.add_trainable(g.rows, 1, adapted, true);   // DoRA magnitude per output row
            // (DoRA's compose is counted in a layer's backward: the layers' linears only.)
            if (g.kind == TensorKind::Linear) t.largest_adapted = std::max(t.largest_adapted, g.elements());
        }
    }
    if (!c.trains) t.trainable_w = t.grads = t.master = t.optimizer = t.paged = t.paged_largest = 0;
    return t;
}

}  // namespace wingspan
