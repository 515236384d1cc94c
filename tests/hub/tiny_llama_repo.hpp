#pragma once
// A tiny Llama model repository for end-to-end tests, and publishing it on the loopback Hub
// (test_http_server.hpp) the way the Hub API lists files (?blobs=true: sizes, blob ids, LFS
// sha256). Its vocabulary is the small SentencePiece fixture's (1,482 tokens), its weights
// small deterministic BF16 numbers, its chat template the Llama 2 fixture's: real enough for
// wingspan-train to download, fine-tune and generate with, in seconds.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_http_server.hpp"
#include "wingspan/safetensors.hpp"
#include "wingspan/sha1.hpp"
#include "wingspan/sha256.hpp"

namespace hubtest {

inline std::string read_fixture(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline nlohmann::json tiny_llama_config() {
    return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", 32},
            {"intermediate_size", 48}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
            {"num_key_value_heads", 2}, {"vocab_size", 1482}, {"max_position_embeddings", 256},
            {"tie_word_embeddings", true}, {"bos_token_id", 1}, {"eos_token_id", 2}};
}

// The repository's files: config.json, model.safetensors, tokenizer.json, tokenizer_config.json
// (with the chat template), and a README.md a run does not need.
inline std::map<std::string, std::string> tiny_llama_files(const std::string& sentencepiece_fixtures,
                                                           const std::string& chat_fixtures) {
    const std::int64_t vocab = 1482, hidden = 32, inter = 48;
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes = {{"model.embed_tokens.weight", {vocab, hidden}}};
    for (int i = 0; i < 2; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        for (auto [n, s] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
                 {"input_layernorm.weight", {hidden}}, {"self_attn.q_proj.weight", {hidden, hidden}},
                 {"self_attn.k_proj.weight", {16, hidden}}, {"self_attn.v_proj.weight", {16, hidden}},
                 {"self_attn.o_proj.weight", {hidden, hidden}}, {"post_attention_layernorm.weight", {hidden}},
                 {"mlp.gate_proj.weight", {inter, hidden}}, {"mlp.up_proj.weight", {inter, hidden}},
                 {"mlp.down_proj.weight", {hidden, inter}}})
            shapes.push_back({p + n, s});
    }
    shapes.push_back({"model.norm.weight", {hidden}});
    std::vector<wingspan::safetensors::TensorInfo> infos;
    for (const auto& [name, shape] : shapes) infos.push_back({name, "BF16", shape});
    const std::string header = wingspan::safetensors::build_header(infos);
    std::string st(8, '\0');
    for (int i = 0; i < 8; ++i) st[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    st += header;
    std::uint32_t state = 7;
    for (const auto& info : infos) {
        const bool norm = info.name.find("norm") != std::string::npos;
        for (std::int64_t k = 0; k < info.elements(); ++k) {
            state = state * 1664525u + 1013904223u;
            const float v = norm ? 1.0f : (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.1f;
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            st.push_back(static_cast<char>((bits >> 16) & 0xFF));
            st.push_back(static_cast<char>(bits >> 24));
        }
    }
    nlohmann::json tok_config = nlohmann::json::parse(read_fixture(sentencepiece_fixtures + "/small-llama/tokenizer_config.json"));
    tok_config["chat_template"] = read_fixture(chat_fixtures + "/llama2.jinja");
    return {{"config.json", tiny_llama_config().dump(2)},
            {"model.safetensors", st},
            {"tokenizer.json", read_fixture(sentencepiece_fixtures + "/small-llama/tokenizer.json")},
            {"tokenizer_config.json", tok_config.dump(2)},
            {"README.md", "tiny\n"}};
}

// Serves `files` as `repo` at `commit`: the API listing for revision main and each file.
inline void publish_repo(TestHttpServer& s, const std::string& repo, const std::map<std::string, std::string>& files,
                         const std::string& commit = "feedfacefeedfacefeedfacefeedfacefeedface") {
    nlohmann::json listing = {{"id", repo}, {"sha", commit}, {"siblings", nlohmann::json::array()}};
    for (const auto& [name, bytes] : files) {
        // As the Hub lists them: a file outside LFS by its git blob id (which downloads are checked
        // against), an LFS file by its sha256.
        wingspan::Sha1 blob = wingspan::git_blob_hasher(bytes.size());
        blob.update(bytes);
        nlohmann::json e = {{"rfilename", name}, {"size", bytes.size()}, {"blobId", blob.hex_digest()}};
        if (name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0)
            e["lfs"] = {{"sha256", wingspan::sha256_hex(bytes)}, {"size", bytes.size()}};
        listing["siblings"].push_back(e);
        s.file("/" + repo + "/resolve/" + commit + "/" + name, bytes);
    }
    s.file("/api/models/" + repo + "/revision/main", listing.dump());
}

}  // namespace hubtest
