#pragma once
// Small but real model fixtures for the Hub tests: config.json files in the shape the Hub
// serves them (a dense Llama, a GQA Qwen2 with tied embeddings and qkv biases, a Mixtral
// MoE) and safetensors files with real headers built here, independently of core's writer.
// Parameter counts are worked out by hand in the comments and checked by formula in tests.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hubtest {

struct Tensor {
    std::string name;
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::int64_t elements() const {
        std::int64_t n = 1;
        for (auto d : shape) n *= d;
        return n;
    }
};

inline int dtype_bytes(const std::string& d) {
    if (d == "F32" || d == "I32" || d == "U32") return 4;
    if (d == "BF16" || d == "F16" || d == "I16") return 2;
    if (d == "F64" || d == "I64") return 8;
    return 1;
}

// A complete safetensors file: 8-byte little-endian length, JSON header padded with spaces
// to a multiple of 8, then zeroed tensor data back to back.
inline std::string safetensors_file(const std::vector<Tensor>& tensors) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    h["__metadata__"] = {{"format", "pt"}};
    std::uint64_t pos = 0;
    for (const auto& t : tensors) {
        std::uint64_t bytes = static_cast<std::uint64_t>(t.elements()) * dtype_bytes(t.dtype);
        h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {pos, pos + bytes}}};
        pos += bytes;
    }
    std::string text = h.dump();
    while (text.size() % 8) text += ' ';
    std::string out(8, '\0');
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    out += text;
    out.append(pos, '\0');
    return out;
}

// A file whose 8-byte prefix claims `claimed` header bytes, followed by `rest`.
inline std::string lying_prefix(std::uint64_t claimed, const std::string& rest) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((claimed >> (8 * i)) & 0xff);
    return out + rest;
}

struct Fixture {
    std::string repo;
    nlohmann::json config;
    std::vector<Tensor> tensors;     // in file order
    std::int64_t expected_params;    // worked out by hand
    // Shards: tensors split into this many files with an index (1 = model.safetensors).
    int shards = 1;

    std::int64_t count() const {
        std::int64_t n = 0;
        for (const auto& t : tensors) n += t.elements();
        return n;
    }
    std::map<std::string, std::pair<std::int64_t, std::uint64_t>> by_dtype() const {
        std::map<std::string, std::pair<std::int64_t, std::uint64_t>> m;
        for (const auto& t : tensors) {
            m[t.dtype].first += t.elements();
            m[t.dtype].second += static_cast<std::uint64_t>(t.elements()) * dtype_bytes(t.dtype);
        }
        return m;
    }
    std::string shard_name(int i) const {
        char buf[64];
        std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, shards);
        return buf;
    }
    // file name -> bytes (config.json, the index if sharded, the safetensors files).
    std::map<std::string, std::string> files() const {
        std::map<std::string, std::string> out;
        out["config.json"] = config.dump(2);
        if (shards == 1) {
            out["model.safetensors"] = safetensors_file(tensors);
            return out;
        }
        std::vector<std::vector<Tensor>> parts(static_cast<size_t>(shards));
        for (size_t i = 0; i < tensors.size(); ++i)
            parts[i * static_cast<size_t>(shards) / tensors.size()].push_back(tensors[i]);
        nlohmann::json index;
        std::uint64_t total = 0;
        for (int s = 0; s < shards; ++s) {
            out[shard_name(s)] = safetensors_file(parts[static_cast<size_t>(s)]);
            for (const auto& t : parts[static_cast<size_t>(s)]) {
                index["weight_map"][t.name] = shard_name(s);
                total += static_cast<std::uint64_t>(t.elements()) * dtype_bytes(t.dtype);
            }
        }
        index["metadata"]["total_size"] = total;
        out["model.safetensors.index.json"] = index.dump(2);
        return out;
    }
};

inline void add_attention(std::vector<Tensor>& t, const std::string& p, std::int64_t hidden,
                          std::int64_t q_dim, std::int64_t kv_dim, bool qkv_bias,
                          const std::string& dt) {
    t.push_back({p + "self_attn.q_proj.weight", dt, {q_dim, hidden}});
    if (qkv_bias) t.push_back({p + "self_attn.q_proj.bias", dt, {q_dim}});
    t.push_back({p + "self_attn.k_proj.weight", dt, {kv_dim, hidden}});
    if (qkv_bias) t.push_back({p + "self_attn.k_proj.bias", dt, {kv_dim}});
    t.push_back({p + "self_attn.v_proj.weight", dt, {kv_dim, hidden}});
    if (qkv_bias) t.push_back({p + "self_attn.v_proj.bias", dt, {kv_dim}});
    t.push_back({p + "self_attn.o_proj.weight", dt, {hidden, q_dim}});
}

// Dense Llama: V=256, H=64, L=2, 4 heads x 16, 4 KV heads, I=128, untied, all BF16.
// Per layer: q,k,v,o 4*64*64 = 16,384; MLP 3*64*128 = 24,576; 2 norms 128 -> 41,088.
// Total: embed 16,384 + 2*41,088 + final norm 64 + lm_head 16,384 = 115,008.
inline Fixture dense_llama(const std::string& repo = "TestOrg/tiny-llama", int shards = 2) {
    Fixture f;
    f.repo = repo;
    f.shards = shards;
    f.expected_params = 115008;
    f.config = {{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"hidden_size", 64},
                {"intermediate_size", 128},
                {"num_attention_heads", 4},
                {"num_key_value_heads", 4},
                {"num_hidden_layers", 2},
                {"vocab_size", 256},
                {"max_position_embeddings", 2048},
                {"rms_norm_eps", 1e-5},
                {"rope_theta", 10000.0},
                {"hidden_act", "silu"},
                {"tie_word_embeddings", false},
                {"attention_bias", false},
                {"mlp_bias", false},
                {"torch_dtype", "bfloat16"}};
    auto& t = f.tensors;
    t.push_back({"model.embed_tokens.weight", "BF16", {256, 64}});
    for (int l = 0; l < 2; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        t.push_back({p + "input_layernorm.weight", "BF16", {64}});
        add_attention(t, p, 64, 64, 64, false, "BF16");
        t.push_back({p + "post_attention_layernorm.weight", "BF16", {64}});
        t.push_back({p + "mlp.gate_proj.weight", "BF16", {128, 64}});
        t.push_back({p + "mlp.up_proj.weight", "BF16", {128, 64}});
        t.push_back({p + "mlp.down_proj.weight", "BF16", {64, 128}});
    }
    t.push_back({"model.norm.weight", "BF16", {64}});
    t.push_back({"lm_head.weight", "BF16", {256, 64}});
    return f;
}

// GQA Qwen2: V=320, H=96, L=3, 6 heads x 16, 2 KV heads (kv_dim 32), I=224, tied
// embeddings (no lm_head tensor), q/k/v biases; norms stored in F32, the rest BF16.
// Per layer: q 9,216 + 96; k 3,072 + 32; v 3,072 + 32; o 9,216; MLP 3*96*224 = 64,512;
// norms 192 -> 89,440. Total: embed 30,720 + 3*89,440 + final norm 96 = 299,136.
inline Fixture gqa_qwen2(const std::string& repo = "TestOrg/tiny-qwen2") {
    Fixture f;
    f.repo = repo;
    f.shards = 1;
    f.expected_params = 299136;
    f.config = {{"architectures", {"Qwen2ForCausalLM"}},
                {"model_type", "qwen2"},
                {"hidden_size", 96},
                {"intermediate_size", 224},
                {"num_attention_heads", 6},
                {"num_key_value_heads", 2},
                {"num_hidden_layers", 3},
                {"vocab_size", 320},
                {"max_position_embeddings", 4096},
                {"rms_norm_eps", 1e-6},
                {"rope_theta", 1000000.0},
                {"hidden_act", "silu"},
                {"tie_word_embeddings", true},
                {"use_sliding_window", false},
                {"torch_dtype", "bfloat16"}};
    auto& t = f.tensors;
    t.push_back({"model.embed_tokens.weight", "BF16", {320, 96}});
    for (int l = 0; l < 3; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        t.push_back({p + "input_layernorm.weight", "F32", {96}});
        add_attention(t, p, 96, 96, 32, true, "BF16");
        t.push_back({p + "post_attention_layernorm.weight", "F32", {96}});
        t.push_back({p + "mlp.gate_proj.weight", "BF16", {224, 96}});
        t.push_back({p + "mlp.up_proj.weight", "BF16", {224, 96}});
        t.push_back({p + "mlp.down_proj.weight", "BF16", {96, 224}});
    }
    t.push_back({"model.norm.weight", "F32", {96}});
    return f;
}

// Mixtral MoE: V=256, H=64, L=2, 4 heads x 16, 2 KV heads (kv_dim 32), 4 experts (top 2)
// of I=96, untied, BF16. Per layer: attention 4,096 + 2,048 + 2,048 + 4,096 = 12,288;
// router 4*64 = 256; experts 4*3*64*96 = 73,728; norms 128 -> 86,400.
// Total: embed 16,384 + 2*86,400 + final norm 64 + lm_head 16,384 = 205,632.
inline Fixture moe_mixtral(const std::string& repo = "TestOrg/tiny-mixtral", int shards = 3) {
    Fixture f;
    f.repo = repo;
    f.shards = shards;
    f.expected_params = 205632;
    f.config = {{"architectures", {"MixtralForCausalLM"}},
                {"model_type", "mixtral"},
                {"hidden_size", 64},
                {"intermediate_size", 96},
                {"num_attention_heads", 4},
                {"num_key_value_heads", 2},
                {"num_hidden_layers", 2},
                {"num_local_experts", 4},
                {"num_experts_per_tok", 2},
                {"vocab_size", 256},
                {"max_position_embeddings", 32768},
                {"rms_norm_eps", 1e-5},
                {"rope_theta", 1000000.0},
                {"hidden_act", "silu"},
                {"tie_word_embeddings", false},
                {"torch_dtype", "bfloat16"}};
    auto& t = f.tensors;
    t.push_back({"model.embed_tokens.weight", "BF16", {256, 64}});
    for (int l = 0; l < 2; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        t.push_back({p + "input_layernorm.weight", "BF16", {64}});
        add_attention(t, p, 64, 64, 32, false, "BF16");
        t.push_back({p + "post_attention_layernorm.weight", "BF16", {64}});
        t.push_back({p + "block_sparse_moe.gate.weight", "BF16", {4, 64}});
        for (int e = 0; e < 4; ++e) {
            std::string q = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
            t.push_back({q + "w1.weight", "BF16", {96, 64}});
            t.push_back({q + "w2.weight", "BF16", {64, 96}});
            t.push_back({q + "w3.weight", "BF16", {96, 64}});
        }
    }
    t.push_back({"model.norm.weight", "BF16", {64}});
    t.push_back({"lm_head.weight", "BF16", {256, 64}});
    return f;
}

}  // namespace hubtest
