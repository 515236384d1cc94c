// The state rows: weights, adapters, gradients (and their collectives' buffers), master weights,
// optimizer state (paged or offloaded) and the data set in host RAM.
#include <algorithm>
#include <cmath>

#include "state.hpp"
#include "wingspan/nf4.hpp"
#include "wingspan/quant_formats.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

namespace {

std::string n(std::int64_t v) { return format_count(v); }

void write_weight_rows(const PlanContext& c, const StateTotals& t, RowWriter& w, StateOnDevice& d) {
    const auto& setup = c.setup;
    const auto& fw = c.fw;
    const Quantization quant = c.quant;
    std::vector<std::string> qtag = quant != Quantization::None ? std::vector<std::string>{"qlora"} : std::vector<std::string>{};
    // Weights. Frozen and quantized weights shard only under ZeRO-3/FSDP.
    d.frozen = w.shown(
        held(row("frozen weights", Component::FrozenWeights, "all layers", "frozen params", t.frozen_plain_elems, c.frozen_bytes,
                 "parameters that do not train, in the frozen dtype", qtag),
             t.frozen_plain / c.param_div),
        std::to_string(c.frozen_bytes) + " B × " + n(t.frozen_plain_elems) + " frozen params (" + dtype_label(c.frozen_bytes) +
            (quant != Quantization::None ? ", not quantized: embeddings, head, norms, biases" : "") +
            (c.upcast_plain ? "; upcast to fp32 by the QLoRA preparation" : "") + ")" + (c.param_div > 1 ? c.per_dev : ""),
        {{"bytes_per_param", c.frozen_bytes}, {"params", double(t.frozen_plain_elems)}, {"devices", double(c.param_div)}});
    if (quant != Quantization::None) {
        const bool int8 = quant == Quantization::Int8;
        const bool checkpoint = is_checkpoint_format(quant);
        const double code = checkpoint ? checkpoint_code_bytes(quant) : int8 ? 1.0 : 0.5;
        d.packed = w.shown(held(row("quantized weights (packed codes)", Component::FrozenWeights, "all layers",
                                    "quantized params", t.quant_elems, code,
                                    "the frozen linears stored quantized (" + quantization_label(setup, fw) + ")", {"qlora"}),
                                t.packed / c.param_div),
                           std::string(code == 1.0 ? "1 B" : "0.5 B") + " × " + n(t.quant_elems) + " " + quantization_label(setup, fw) +
                               " params (packed codes)" + (c.param_div > 1 ? c.per_dev : ""),
                           {{"params", double(t.quant_elems)}, {"bytes_per_param", code}});
        d.constants = w.shown(
            held(row("quantization constants", Component::QuantConstants, "all layers", "quantized params / block", 0, 0,
                     "the scales (and biases) each block of codes needs to be dequantized", {"qlora"}),
                 t.constants / c.param_div),
            checkpoint ? checkpoint_format_formula(quant, setup.quant_group_size) + " (all constants: " +
                             format_bytes(double(t.constants), ByteUnit::GiB, 2) + ")"
            : fw.quant_format == "affine"
                ? std::to_string(fw.quant_constant_bytes) + " B scale + bias per " + std::to_string(fw.quant_group) +
                      "-value group (" + n((t.quant_elems + fw.quant_group - 1) / fw.quant_group) + " groups)"
            : int8 ? "4 B fp32 scale per output row"
            : quant == Quantization::Nf4DoubleQuant
                ? "double quant: 1 B per 64-value block + 4 B per 256 blocks (" + n(t.quant_elems / kNf4BlockSize) + " blocks)"
                : "4 B fp32 absmax per 64-value block (" + n(t.quant_elems / kNf4BlockSize) + " blocks)",
            {{"params", double(t.quant_elems)}, {"block", double(kNf4BlockSize)}});
    }
    // QLoRA set-up that leaves extra copies of the token embedding on the device (LitGPT swaps in
    // a StableEmbedding: the old one stays referenced, the new one has a gradient no optimizer
    // clears): count × vocab × hidden in the frozen dtype, held from the first step on.
    if (quant != Quantization::None && setup.method == Method::Qlora) {
        const std::int64_t copies = fw.traits.qlora.extra_embedding_copies;
        const auto& a = c.arch;
        if (copies > 0)
            d.embedding_copies = w.shown(
                held(row("extra embedding copies", Component::FrozenWeights, "global", "copies·v·h", copies * a.vocab * a.hidden,
                         c.st.frozen, "left by the framework's QLoRA set-up (profile qlora.extra_embedding_copies)", {"qlora"}),
                     copies * a.vocab * a.hidden * c.st.frozen),
                std::to_string(copies) + " extra copies of the embedding (" + n(a.vocab) + " × " + n(a.hidden) + " × " +
                    std::to_string(c.st.frozen) + " B) left by the framework's QLoRA set-up",
                {{"copies", double(copies)}, {"vocab", double(a.vocab)}, {"hidden", double(a.hidden)}});
    }
    d.adapters = w.shown(
        held(row("LoRA adapters A and B", Component::Adapters, "adapted layers", "r·(d_in + d_out) per adapted linear",
                 t.adapter_elems, c.st.adapter, "the low-rank matrices that train in place of the frozen weights", {"lora"}),
             t.adapter_w),
        std::to_string(c.st.adapter) + " B × " + n(t.adapter_elems) + " adapter params (" + dtype_label(c.st.adapter) +
            ", rank " + std::to_string(setup.lora_rank) + ", r·(d_in+d_out)" + (setup.dora ? " + d_out DoRA magnitude" : "") +
            " per targeted linear: " + targets_to_string(setup.lora_targets) +
            (c.Lg < c.arch.layers ? ", last " + std::to_string(c.Lg) + " of " + std::to_string(c.arch.layers) + " layers" : "") + ")",
        {{"bytes_per_param", c.st.adapter}, {"params", double(t.adapter_elems)}, {"rank", double(setup.lora_rank)}});
    d.trainable = w.shown(
        held(row("trainable weights", Component::TrainableWeights, "all layers", "trainable params", t.trainable_elems,
                 c.st.weight, "the base parameters that train"),
             t.trainable_w / c.param_div),
        std::to_string(c.st.weight) + " B × " + n(t.trainable_elems) + " trainable params (" + dtype_label(c.st.weight) + ")" +
            (c.param_div > 1 ? c.per_dev : ""),
        {{"bytes_per_param", c.st.weight}, {"params", double(t.trainable_elems)}});
}

}  // namespace

void write_gradient_rows(const PlanContext& c, const StateTotals& t, RowWriter& w, StateOnDevice& d);
void write_optimizer_rows(const PlanContext& c, const StateTotals& t, RowWriter& w, StateOnDevice& d, MemoryEstimate& est);

StateOnDevice write_state_rows(const PlanContext& c, const StateTotals& t, RowWriter& w, MemoryEstimate& est) {
    StateOnDevice d;
    write_weight_rows(c, t, w, d);
    d.all_trainable = c.trains ? t.trainable_elems + t.adapter_elems : 0;
    write_gradient_rows(c, t, w, d);
    write_optimizer_rows(c, t, w, d, est);
    return d;
}

}  // namespace wingspan
