#include "gguf/gguf_quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "wingspan/errors.hpp"

namespace wingspan::train::gguf {

namespace {

std::uint32_t bits_of(float x) {
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
}

float float_of(std::uint32_t b) {
    float x;
    std::memcpy(&x, &b, 4);
    return x;
}

template <class T>
void append(std::string& out, T v) {
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    out.append(raw, sizeof(T));
}

void q8_0_block(const float* x, std::string& out) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    append(out, fp16_bits(d));
    for (int j = 0; j < 32; ++j) append(out, static_cast<std::int8_t>(std::roundf(x[j] * id)));
}

void q4_0_block(const float* x, std::string& out) {
    // The value of largest magnitude, with its sign: it maps to -8, the one end of the
    // asymmetric 4-bit range [-8, 7] that is exact.
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
    const float d = max / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    append(out, fp16_bits(d));
    for (int j = 0; j < 16; ++j) {
        const auto lo = static_cast<std::uint8_t>(std::min<int>(15, static_cast<std::int8_t>(x[j] * id + 8.5f)));
        const auto hi = static_cast<std::uint8_t>(std::min<int>(15, static_cast<std::int8_t>(x[j + 16] * id + 8.5f)));
        append(out, static_cast<std::uint8_t>(lo | (hi << 4)));
    }
}

}  // namespace

std::uint16_t fp16_bits(float f) {
    const std::uint32_t b = bits_of(f), sign = (b >> 16) & 0x8000u, mag = b & 0x7FFFFFFFu;
    if (mag > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);   // NaN stays NaN
    if (mag < 0x38800000u) {   // below fp16's smallest normal (2^-14): multiples of 2^-24
        const float units = std::nearbyint(float_of(mag) * 0x1.0p24f);   // the default mode: to nearest even
        return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(units));   // 1024 carries into the exponent
    }
    // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even;
    // a carry runs into the exponent, and anything from 65520 on becomes infinity.
    const std::uint32_t r = mag - 0x38000000u;
    const std::uint32_t h = (r + 0x0FFFu + ((r >> 13) & 1u)) >> 13;
    return static_cast<std::uint16_t>(sign | std::min<std::uint32_t>(h, 0x7C00u));
}

float fp16_value(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
    if (exp == 0) return std::ldexp(static_cast<float>(man), -24) * (sign ? -1.0f : 1.0f);
    if (exp == 31) return float_of(sign | 0x7F800000u | (man << 13));
    return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

std::uint16_t bf16_bits(float x) {
    const std::uint32_t b = bits_of(x);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((b >> 16) | 64);   // quiet NaN
    return static_cast<std::uint16_t>((b + (0x7FFFu + ((b >> 16) & 1))) >> 16);
}

void encode(GgmlType type, const float* x, std::int64_t n, std::string& out) {
    const TypeTraits tt = traits(type);
    if (n % tt.block_elements != 0) throw InputError("gguf: values are not a whole number of blocks");
    out.reserve(out.size() + static_cast<size_t>(n / tt.block_elements * tt.block_bytes));
    switch (type) {
        case GgmlType::F32: out.append(reinterpret_cast<const char*>(x), static_cast<size_t>(n) * 4); return;
        case GgmlType::F16: for (std::int64_t i = 0; i < n; ++i) append(out, fp16_bits(x[i])); return;
        case GgmlType::BF16: for (std::int64_t i = 0; i < n; ++i) append(out, bf16_bits(x[i])); return;
        case GgmlType::Q8_0: for (std::int64_t i = 0; i < n; i += 32) q8_0_block(x + i, out); return;
        case GgmlType::Q4_0: for (std::int64_t i = 0; i < n; i += 32) q4_0_block(x + i, out); return;
    }
}

void decode(GgmlType type, const std::uint8_t* p, std::int64_t n, float* y) {
    auto u16 = [](const std::uint8_t* q) { return static_cast<std::uint16_t>(q[0] | (q[1] << 8)); };
    switch (type) {
        case GgmlType::F32: std::memcpy(y, p, static_cast<size_t>(n) * 4); return;
        case GgmlType::F16: for (std::int64_t i = 0; i < n; ++i) y[i] = fp16_value(u16(p + 2 * i)); return;
        case GgmlType::BF16: for (std::int64_t i = 0; i < n; ++i) y[i] = float_of(static_cast<std::uint32_t>(u16(p + 2 * i)) << 16); return;
        case GgmlType::Q8_0:
            for (std::int64_t b = 0; b < n / 32; ++b, p += 34) {
                const float d = fp16_value(u16(p));
                for (int j = 0; j < 32; ++j) y[b * 32 + j] = d * static_cast<float>(static_cast<std::int8_t>(p[2 + j]));
            }
            return;
        case GgmlType::Q4_0:
            for (std::int64_t b = 0; b < n / 32; ++b, p += 18) {
                const float d = fp16_value(u16(p));
                for (int j = 0; j < 16; ++j) {
                    y[b * 32 + j] = d * static_cast<float>((p[2 + j] & 0x0F) - 8);
                    y[b * 32 + j + 16] = d * static_cast<float>((p[2 + j] >> 4) - 8);
                }
            }
            return;
    }
}

}  // namespace wingspan::train::gguf
