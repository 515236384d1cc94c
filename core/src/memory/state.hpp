#pragma once
// The state a step holds between steps: weights (frozen, quantized, adapters, trainable),
// gradients and their collectives' buffers, master weights and optimizer state. Internal.
#include <cstdint>

#include "builder.hpp"

namespace wingspan {

// Sums over the model's tensor groups (tensor_groups()), walked once.
struct StateTotals {
    std::int64_t frozen_plain = 0, frozen_plain_elems = 0;
    std::int64_t packed = 0, constants = 0, quant_elems = 0;
    std::int64_t trainable_w = 0, adapter_w = 0, grads = 0, master = 0, optimizer = 0;
    std::int64_t trainable_elems = 0, adapter_elems = 0, largest_trainable = 0, master_elems = 0;
    std::int64_t largest_adapted = 0;
    // One tensor's gradient, the largest (ZeRO-2's whole gradient in flight); the second figure
    // leaves out a tied embedding, whose gradient is held through the whole backward.
    std::int64_t largest_grad = 0, largest_grad_untied = 0;
    std::int64_t largest_quantized = 0, layer_param_elems = 0, down_quantized = 0;
    // Paged optimizer state (bitsandbytes unified memory): all of it, and the largest tensor's.
    std::int64_t paged = 0, paged_largest = 0;
    // Gradient bytes by when backward makes them (one layer's share for layer tensors): the
    // head first, then the final norm (its backward follows the loss's and the head's), then per
    // layer the down projection, the rest of the MLP block with its norm, the output projection,
    // then q/k/v with the input norm; an untied embedding (and learned positions) last.
    std::int64_t g_head = 0, g_final_norm = 0, g_embed = 0, g_down = 0, g_mlp = 0, g_o = 0, g_qkv = 0;
    std::int64_t g_qkv_norm = 0;   // g_qkv's norm share: the input norms, whose backward follows q/k/v's
};
StateTotals walk_tensor_groups(const PlanContext& c);

// The device figures of the state rows, which the phases are built from.
struct StateOnDevice {
    std::int64_t frozen = 0, packed = 0, constants = 0, embedding_copies = 0, adapters = 0, trainable = 0;
    std::int64_t all_trainable = 0;        // trainable elements when the setup trains
    bool in_bwd = false;                   // optimizer in backward
    std::int64_t tied_in_bwd = 0;          // ... a tied embedding's gradient, held until complete
    std::int64_t grads = 0;                // the gradients' term
    std::int64_t sync_buffers = 0;         // DDP's buckets or ZeRO-1's wire buffer, held throughout
    std::int64_t zero2_bucket = 0, zero2_in_flight = 0, zero2_tied = 0;
    std::int64_t broadcast_piece = 0;      // ZeRO-1/-2: a parameter piece's fp32 copy on the wire (optimizer step)
    bool offload = false;
    std::int64_t master = 0, optimizer = 0;
    std::int64_t paged_resident = 0;
};
StateOnDevice write_state_rows(const PlanContext& c, const StateTotals& t, RowWriter& w, MemoryEstimate& est);

}  // namespace wingspan
