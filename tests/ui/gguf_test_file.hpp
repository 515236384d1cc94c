#pragma once
// Shared by the window tests of issue 30: a tiny GGUF file written by hand.
#include <cstdint>
#include <fstream>
#include <string>

namespace ui_test {

// A minimal GGUF v3 file llama.cpp's reader would accept the header of: a 2-layer llama of width
// 64, 4 heads, a 16-token vocabulary; tensor data is not read.
inline void write_gguf(const std::string& path) {
    std::ofstream f(path, std::ios::binary);
    auto u32 = [&](std::uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](std::uint64_t v) { f.write(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const std::string& s) { u64(s.size()); f.write(s.data(), std::streamsize(s.size())); };
    f.write("GGUF", 4);
    u32(3);
    u64(3);   // tensors
    u64(6);   // key/values
    str("general.architecture"), u32(8), str("llama");
    str("llama.block_count"), u32(4), u32(2);
    str("llama.embedding_length"), u32(4), u32(64);
    str("llama.attention.head_count"), u32(4), u32(4);
    str("llama.feed_forward_length"), u32(4), u32(128);
    str("tokenizer.ggml.tokens"), u32(9), u32(8), u64(16);
    for (int i = 0; i < 16; ++i) str("t" + std::to_string(i));
    const auto tensor = [&](const std::string& name, std::uint64_t a, std::uint64_t b) {
        str(name), u32(2), u64(a), u64(b), u32(1), u64(0);   // F16
    };
    tensor("token_embd.weight", 64, 16);
    tensor("blk.0.attn_q.weight", 64, 64);
    tensor("blk.1.attn_q.weight", 64, 64);
}

}  // namespace ui_test
