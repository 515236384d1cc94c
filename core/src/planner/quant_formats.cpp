#include "wingspan/quant_formats.hpp"

#include <cstdio>

#include "wingspan/errors.hpp"

namespace wingspan {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int gptq_bits(Quantization q) { return q == Quantization::GptqInt8 ? 8 : 4; }

// Groups along the input: GPTQ's group_size -1 is one group over the whole row.
std::int64_t groups_of(std::int64_t in, std::int64_t group) { return group < 0 ? 1 : ceil_div(in, group); }

std::string group_words(std::int64_t group) {
    return group < 0 ? std::string("one group per column") : "group " + std::to_string(group);
}

std::string fixed(double v, int decimals) {
    char s[32];
    std::snprintf(s, sizeof s, "%.*f", decimals, v);
    return s;
}

}  // namespace

bool is_checkpoint_format(Quantization q) {
    switch (q) {
        case Quantization::Awq: case Quantization::Gptq: case Quantization::GptqInt8:
        case Quantization::Fp8: case Quantization::Fp8Channel: case Quantization::Fp8Block: return true;
        case Quantization::None: case Quantization::Nf4: case Quantization::Nf4DoubleQuant: case Quantization::Int8: return false;
    }
    return false;
}

bool names_checkpoint_format(const std::string& name) {
    try {
        return is_checkpoint_format(parse_quantization(name));
    } catch (const InputError&) {   // a GGUF type or a typo: not one of ours
        return false;
    }
}

QuantLayout checkpoint_layout(Quantization q, std::int64_t out, std::int64_t in, std::int64_t group) {
    QuantLayout l;
    l.elements = out * in;
    switch (q) {
        case Quantization::Awq: {
            // qweight [in, out/8] int32; qzeros [in/g, out/8] int32; scales [in/g, out] fp16.
            const std::int64_t words_per_row = ceil_div(out, 8);
            l.blocks = groups_of(in, group);
            l.packed_bytes = in * words_per_row * 4;
            l.constant_bytes = l.blocks * words_per_row * 4 + l.blocks * out * 2;
            break;
        }
        case Quantization::Gptq: case Quantization::GptqInt8: {
            // qweight [in·bits/32, out] int32; qzeros [groups, out·bits/32] int32; scales
            // [groups, out] fp16; g_idx [in] int32.
            const std::int64_t per_word = 32 / gptq_bits(q);
            l.blocks = groups_of(in, group);
            l.packed_bytes = ceil_div(in, per_word) * out * 4;
            l.constant_bytes = l.blocks * ceil_div(out, per_word) * 4 + l.blocks * out * 2 + in * 4;
            break;
        }
        case Quantization::Fp8:   // weight_scale and the static input_scale, fp32 scalars
            l.blocks = 1;
            l.packed_bytes = out * in;
            l.constant_bytes = 2 * 4;
            break;
        case Quantization::Fp8Channel:   // weight_scale fp32 [out, 1]
            l.blocks = out;
            l.packed_bytes = out * in;
            l.constant_bytes = out * 4;
            break;
        case Quantization::Fp8Block:   // weight_scale_inv fp32 [ceil(out/128), ceil(in/128)]
            l.blocks = ceil_div(out, kFp8ScaleBlock) * ceil_div(in, kFp8ScaleBlock);
            l.packed_bytes = out * in;
            l.constant_bytes = l.blocks * 4;
            break;
        case Quantization::None: case Quantization::Nf4: case Quantization::Nf4DoubleQuant: case Quantization::Int8:
            throw InputError(std::string("'") + to_string(q) + "' is not a checkpoint format (awq, gptq, gptq-int8, fp8, fp8-channel, fp8-block)");
    }
    return l;
}

double checkpoint_code_bytes(Quantization q) {
    return q == Quantization::Awq || q == Quantization::Gptq ? 0.5 : 1.0;
}

std::string checkpoint_format_label(Quantization q, std::int64_t group) {
    switch (q) {
        case Quantization::Awq: return "AWQ 4-bit (GEMM, " + group_words(group) + ")";
        case Quantization::Gptq: return "GPTQ 4-bit (" + group_words(group) + ")";
        case Quantization::GptqInt8: return "GPTQ 8-bit (" + group_words(group) + ")";
        case Quantization::Fp8: return "fp8 e4m3, per-tensor fp32 scales";
        case Quantization::Fp8Channel: return "fp8 e4m3, per-channel fp32 scales";
        case Quantization::Fp8Block: return "fp8 e4m3, fp32 scales per 128 × 128 block";
        default: return to_string(q);
    }
}

std::string checkpoint_format_formula(Quantization q, std::int64_t group) {
    const double g = double(group);
    switch (q) {
        case Quantization::Awq:
            if (group < 0) return "0.5 B code + (2 B fp16 scale + 0.5 B packed zero) per output column";
            return "0.5 B code + (2 B fp16 scale + 0.5 B packed zero) per " + std::to_string(group) +
                   " weights = " + fixed(0.5 + 2.5 / g, 4) + " B a weight";
        case Quantization::Gptq: case Quantization::GptqInt8: {
            const double code = gptq_bits(q) / 8.0;
            const std::string c = gptq_bits(q) == 4 ? "0.5 B" : "1 B";
            if (group < 0) return c + " code + (2 B fp16 scale + " + c + " packed zero) per output column + 4 B g_idx per input row";
            return c + " code + (2 B fp16 scale + " + c + " packed zero) per " + std::to_string(group) + " weights = " +
                   fixed(code + (2 + code) / g, 4) + " B a weight, + 4 B g_idx per input row";
        }
        case Quantization::Fp8: return "1 B e4m3 code + 8 B fp32 weight and input scales per tensor";
        case Quantization::Fp8Channel: return "1 B e4m3 code + 4 B fp32 scale per output row";
        case Quantization::Fp8Block:
            return "1 B e4m3 code + 4 B fp32 scale per 128 × 128 block = " + fixed(1 + 4.0 / 16384, 5) + " B a weight";
        default: return to_string(q);
    }
}

bool quantized_in_checkpoint(const TensorGroup& g) {
    return g.kind == TensorKind::Linear && g.role != LinearRole::Router && g.role != LinearRole::SharedGate;
}

std::int64_t checkpoint_group_bytes(const TensorGroup& g, Quantization q, std::int64_t group, int plain_bytes) {
    if (!quantized_in_checkpoint(g)) return g.total_elements() * plain_bytes;
    const QuantLayout l = checkpoint_layout(q, g.rows, g.cols, group);
    return (l.packed_bytes + l.constant_bytes) * g.count;
}

void require_valid_quant_group(Quantization q, std::int64_t group) {
    const bool grouped = q == Quantization::Awq || q == Quantization::Gptq || q == Quantization::GptqInt8;
    if (!grouped) return;
    if (group == -1 && q != Quantization::Awq) return;
    if (group < 1 || group > (std::int64_t{1} << 20))
        throw InputError("--group-size for " + std::string(to_string(q)) + " must be " +
                         (q == Quantization::Awq ? "1 .. 1048576" : "-1 (one group per column) or 1 .. 1048576") + ", got " +
                         std::to_string(group));
}

}  // namespace wingspan
