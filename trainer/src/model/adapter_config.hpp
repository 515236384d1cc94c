#pragma once
// A LoRA adapter folder's adapter_config.json, checked before anything is sized by it. A
// hostile or damaged config ("r": 20000000) made `generate --adapter` allocate ~10 GB before a
// raw c10 error: here the rank, alpha and targets are validated, and the adapter file's tensor
// shapes (read from its safetensors header, nothing allocated) must match the rank and the
// base model's weights. Used by `generate` and `merge`.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "wingspan/architecture.hpp"

namespace wingspan::train {

// Far above any adapter trained in practice (r 256 is large), far below a width's worth of
// memory per layer.
inline constexpr std::int64_t kMaxAdapterRank = 1 << 16;

struct AdapterConfig {
    std::int64_t rank = 0;
    double alpha = 0;
    bool rslora = false;
    std::set<LinearRole> targets;
    double scaling() const;   // alpha / r, or alpha / sqrt(r) with rsLoRA
};

// The shape of a base weight by name ("model.layers.0.self_attn.q_proj.weight"), nullopt when
// the base has none.
using BaseShape = std::function<std::optional<std::vector<std::int64_t>>(const std::string&)>;

// Reads `adir`/adapter_config.json and the header of `adir`/adapter_model.safetensors. Throws
// InputError, one line naming the file and what is wrong.
AdapterConfig read_adapter_config(const std::filesystem::path& adir, const BaseShape& base_shape);

}  // namespace wingspan::train
