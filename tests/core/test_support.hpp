#pragma once
// Shared by the core suites: the bundled profiles, loaded once per process.
#include <nlohmann/json.hpp>

#include "wingspan/memory_model.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/verdict.hpp"

namespace wingspan::test {

inline const ProfileLibrary& library() {
    static const ProfileLibrary lib = ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
    return lib;
}

// A tiny Llama-style architecture whose numbers are easy to check by hand.
inline Architecture tiny_arch() {
    return Architecture::from_hf_config(nlohmann::json{
        {"model_type", "llama"}, {"hidden_size", 64}, {"intermediate_size", 128},
        {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
        {"vocab_size", 100}, {"max_position_embeddings", 256}, {"tie_word_embeddings", false}});
}

// A framework with no fixed costs, so totals equal allocated bytes.
inline FrameworkProfile bare_framework(const std::string& step = "per_tensor") {
    FrameworkProfile f;
    f.id = "bare";
    f.name = "bare";
    f.optimizer_step = step;
    return f;
}

// Bytes of the inventory row named `name`; -1 where there is none (zero-byte rows are left out).
inline std::int64_t row_bytes(const MemoryEstimate& e, const std::string& name) {
    for (const auto& r : e.inventory.rows)
        if (r.name == name) return r.bytes;
    return -1;
}

// Bytes of one component in the phase named `phase`; -1 where there is no such phase.
inline std::int64_t component_at(const MemoryEstimate& e, const std::string& phase, Component c) {
    for (const auto& p : e.phases)
        if (p.name == phase) {
            const auto it = p.bytes.find(c);
            return it == p.bytes.end() ? 0 : it->second;
        }
    return -1;
}

}  // namespace wingspan::test
