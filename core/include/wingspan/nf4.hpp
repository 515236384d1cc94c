#pragma once
// Storage layout of the quantized formats, shared by the planner (bytes) and the trainer
// (the buffers it really allocates), so both count the same bytes.
#include <array>
#include <cstdint>

namespace wingspan {

// The 16 NormalFloat-4 levels (QLoRA, Dettmers et al. 2023), quantiles of N(0,1) scaled to [-1, 1].
inline constexpr std::array<float, 16> kNf4Levels = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
    0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

inline constexpr std::int64_t kNf4BlockSize = 64;          // elements per absmax
inline constexpr std::int64_t kDoubleQuantBlockSize = 256; // absmax values per second-level constant

struct QuantLayout {
    std::int64_t elements = 0;
    std::int64_t blocks = 0;
    std::int64_t packed_bytes = 0;     // the 4-bit (or 8-bit) codes
    std::int64_t constant_bytes = 0;   // absmax / scales, all levels
};

// NF4: two codes per byte; constants are fp32 absmax per 64-element block, or with double
// quantization one uint8 per block plus, per 256 blocks, an fp32 scale, plus one fp32 mean.
constexpr QuantLayout nf4_layout(std::int64_t elements, bool double_quant) {
    QuantLayout l;
    l.elements = elements;
    l.blocks = (elements + kNf4BlockSize - 1) / kNf4BlockSize;
    l.packed_bytes = (elements + 1) / 2;
    if (double_quant) {
        const std::int64_t second = (l.blocks + kDoubleQuantBlockSize - 1) / kDoubleQuantBlockSize;
        l.constant_bytes = l.blocks * 1 + second * 4 + 4;
    } else {
        l.constant_bytes = l.blocks * 4;
    }
    return l;
}

// LLM.int8-style: one byte per weight plus an fp32 scale per output row.
constexpr QuantLayout int8_layout(std::int64_t rows, std::int64_t cols) {
    QuantLayout l;
    l.elements = rows * cols;
    l.blocks = rows;
    l.packed_bytes = rows * cols;
    l.constant_bytes = rows * 4;
    return l;
}

}  // namespace wingspan
