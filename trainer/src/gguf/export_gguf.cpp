// The GGUF exporter: which tensors and keys an architecture gets (convert_hf_to_gguf.py's
// LlamaModel, Qwen2Model, Qwen3Model, GemmaModel and TextModel.set_gguf_parameters; names from
// gguf-py/gguf/tensor_mapping.py), then the tensors streamed one at a time.
#include "gguf/export_gguf.hpp"

#include <cmath>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "support/emit.hpp"
#include "gguf/gguf_modelfile.hpp"
#include "gguf/gguf_quant.hpp"
#include "gguf/gguf_vocab.hpp"
#include "run/merge.hpp"
#include "model/model.hpp"
#include "model/model_source.hpp"
#include "model/weights_io.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/version.hpp"
#include "wingspan/safe_file.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;
using protocol::EventType;
using gguf::GgmlType;

namespace {

struct Failure : std::runtime_error {   // not the user's input: exit 1
    using std::runtime_error::runtime_error;
};

struct Args {
    std::string format, quant = "f16", model, adapter, out;
};

Args parse(const std::vector<std::string>& a) {
    Args o;
    const std::map<std::string, std::string*> flags = {{"--format", &o.format}, {"--quant", &o.quant},
                                                       {"--model", &o.model},   {"--adapter", &o.adapter},
                                                       {"--out", &o.out}};
    for (size_t i = 0; i < a.size(); i += 2) {
        const auto flag = flags.find(a[i]);
        if (flag == flags.end()) throw InputError("export: unknown argument \"" + a[i] + "\"");
        if (i + 1 >= a.size()) throw InputError(a[i] + " needs a value");
        *flag->second = a[i + 1];
    }
    if (o.format.empty() || o.model.empty() || o.out.empty())
        throw InputError("usage: wingspan-train export --format gguf --quant f32|f16|bf16|q8_0|q4_0 --model DIR "
                         "[--adapter RUN_DIR] --out FILE.gguf");
    if (o.format != "gguf") throw InputError("--format: \"" + o.format + "\" is not a format export writes (gguf)");
    return o;
}

// The quantization's type for matrices and its general.file_type (llama.h's llama_ftype).
struct Quant {
    GgmlType matrix;
    std::uint32_t file_type;
};
Quant quant_named(const std::string& q) {
    if (q == "f32") return {GgmlType::F32, 0};
    if (q == "f16") return {GgmlType::F16, 1};
    if (q == "q4_0") return {GgmlType::Q4_0, 2};
    if (q == "q8_0") return {GgmlType::Q8_0, 7};
    if (q == "bf16") return {GgmlType::BF16, 32};
    throw InputError("--quant: \"" + q + "\" is not one export writes (f32, f16, bf16, q8_0, q4_0)");
}

// llama.cpp's name for the architecture, or an InputError for one it cannot export yet.
std::string gguf_arch(const ModelConfig& c) {
    if (c.model_type == "llama" || c.model_type == "mistral" || c.model_type == "smollm" || c.model_type == "smollm2")
        return "llama";
    if (c.model_type == "qwen2" || c.model_type == "qwen3" || c.model_type == "gemma") return c.model_type;
    throw InputError("export: model_type \"" + c.model_type + "\" cannot be exported to GGUF yet (llama, mistral, " +
                     "smollm, qwen2, qwen3 and gemma can); merge it and use llama.cpp's convert_hf_to_gguf.py");
}

// How a tensor's values change on the way (convert_hf_to_gguf.py's modify_tensors).
enum class Transform { None, PermuteHeads, PlusOne };

struct Planned {
    std::string hf;                 // the safetensors name; "" for rope_freqs, which is computed
    gguf::TensorDesc desc;
    Transform transform = Transform::None;
    std::int64_t heads = 0;         // PermuteHeads: the tensor's head count
};

// gguf-py's tensor_mapping.py names for the HF names of these architectures.
std::optional<std::string> gguf_name(const std::string& hf) {
    if (hf == "model.embed_tokens.weight") return "token_embd.weight";
    if (hf == "model.norm.weight") return "output_norm.weight";
    if (hf == "lm_head.weight") return "output.weight";
    static const std::vector<std::pair<std::string, std::string>> in_layer = {
        {"input_layernorm", "attn_norm"},       {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},         {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
        {"self_attn.k_norm", "attn_k_norm"},    {"post_attention_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "ffn_gate"},          {"mlp.up_proj", "ffn_up"},           {"mlp.down_proj", "ffn_down"}};
    const std::string prefix = "model.layers.";
    if (hf.rfind(prefix, 0) != 0) return std::nullopt;
    const size_t dot = hf.find('.', prefix.size());
    if (dot == std::string::npos) return std::nullopt;
    const std::string layer = hf.substr(prefix.size(), dot - prefix.size()), rest = hf.substr(dot + 1);
    for (const auto& [from, to] : in_layer)
        for (const char* suffix : {".weight", ".bias"})
            if (rest == from + suffix) return "blk." + layer + "." + to + suffix;
    return std::nullopt;
}

// What the converter stores each tensor as: vectors (norms, biases) in F32, matrices in the
// chosen type, or F16 where a row is not a whole number of quantization blocks.
GgmlType type_for(const std::vector<std::int64_t>& shape, GgmlType matrix, std::vector<std::string>& warnings,
                  const std::string& name) {
    if (shape.size() < 2) return GgmlType::F32;
    const auto blocks = gguf::traits(matrix).block_elements;
    if (shape.back() % blocks != 0) {
        warnings.push_back(name + ": rows of " + std::to_string(shape.back()) + " values are not whole " +
                           gguf::traits(matrix).name + " blocks; stored as F16 (as convert_hf_to_gguf.py does)");
        return GgmlType::F16;
    }
    return matrix;
}

// Llama 3's RoPE scaling as llama.cpp applies it: a divisor per frequency, in the tensor
// rope_freqs.weight (convert_hf_to_gguf.py LlamaModel.generate_extra_tensors).
std::vector<float> llama3_rope_factors(const ModelConfig& c) {
    std::vector<float> f;
    const double low_wavelen = c.original_max_positions / c.low_freq_factor;
    const double high_wavelen = c.original_max_positions / c.high_freq_factor;
    for (std::int64_t i = 0; i < c.head_dim / 2; ++i) {
        const double freq = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(c.head_dim));
        const double wavelen = 2 * M_PI / freq;
        if (wavelen < high_wavelen) f.push_back(1.0f);
        else if (wavelen > low_wavelen) f.push_back(static_cast<float>(c.rope_factor));
        else {
            const double smooth = (c.original_max_positions / wavelen - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
            f.push_back(static_cast<float>(1.0 / ((1 - smooth) / c.rope_factor + smooth)));
        }
    }
    return f;
}

std::vector<Planned> plan_tensors(const ModelConfig& c, const std::string& arch, GgmlType matrix,
                                  std::vector<std::string>& warnings) {
    std::vector<Planned> plan;
    if (arch == "llama" && c.rope_type == "llama3")
        plan.push_back({"", {"rope_freqs.weight", {c.head_dim / 2}, GgmlType::F32}, Transform::None, 0});
    for (const auto& [hf, shape] : expected_tensors(c)) {
        const auto name = gguf_name(hf);
        if (!name) throw InputError("export: no GGUF name for the tensor " + hf);
        Planned p{hf, {*name, shape, type_for(shape, matrix, warnings, *name)}, Transform::None, 0};
        // llama.cpp's "llama" graph rotates interleaved pairs, Hugging Face's Llama the two
        // halves of each head: the converter permutes q and k rows (LlamaModel.permute).
        if (arch == "llama" && (hf.find("self_attn.q_proj.") != std::string::npos)) p.transform = Transform::PermuteHeads, p.heads = c.heads;
        if (arch == "llama" && (hf.find("self_attn.k_proj.") != std::string::npos)) p.transform = Transform::PermuteHeads, p.heads = c.kv_heads;
        // Gemma's RMSNorm scales by (1 + weight), llama.cpp's by weight (GemmaModel.modify_tensors).
        if (arch == "gemma" && p.desc.name.ends_with("norm.weight")) p.transform = Transform::PlusOne;
        plan.push_back(std::move(p));
    }
    return plan;
}

void add_arch_keys(const ModelConfig& c, const json& config, const std::string& arch, const std::string& name,
                   std::uint32_t file_type, gguf::Metadata& m) {
    m.add_string("general.architecture", arch);
    m.add_string("general.type", "model");
    m.add_string("general.name", name);
    auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    m.add_u32(arch + ".block_count", u32(c.layers));
    m.add_u32(arch + ".context_length", u32(c.max_positions));
    m.add_u32(arch + ".embedding_length", u32(c.hidden));
    m.add_u32(arch + ".feed_forward_length", u32(c.intermediate));
    m.add_u32(arch + ".attention.head_count", u32(c.heads));
    m.add_u32(arch + ".attention.head_count_kv", u32(c.kv_heads));
    m.add_f32(arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
    m.add_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_eps));
    if (config.contains("head_dim") && config["head_dim"].is_number_integer()) {
        m.add_u32(arch + ".attention.key_length", u32(c.head_dim));
        m.add_u32(arch + ".attention.value_length", u32(c.head_dim));
    }
    m.add_u32("general.file_type", file_type);
    if (arch == "llama") {
        m.add_u32(arch + ".vocab_size", u32(c.vocab));
        m.add_u32(arch + ".rope.dimension_count", u32(c.head_dim));
    }
    if (c.rope_type == "linear") {
        m.add_string(arch + ".rope.scaling.type", "linear");
        m.add_f32(arch + ".rope.scaling.factor", static_cast<float>(c.rope_factor));
    }
    m.add_u32("general.quantization_version", 2);   // ggml.h GGML_QNT_VERSION
}

// One tensor, in slices of whole rows converted to fp32 and encoded one after another.
void write_tensor(gguf::Writer& w, const Planned& p, at::Tensor t) {
    if (p.transform == Transform::PermuteHeads) {
        const std::int64_t rows = t.size(0);
        std::vector<std::int64_t> shape{p.heads, 2, rows / p.heads / 2};
        for (std::int64_t d = 1; d < t.dim(); ++d) shape.push_back(t.size(d));
        t = t.reshape(shape).transpose(1, 2).reshape(t.sizes());
    }
    if (p.transform == Transform::PlusOne) t = t.to(at::kFloat) + 1;
    const std::int64_t row = p.desc.shape.back();
    const at::Tensor rows = t.contiguous().reshape({-1, row});
    const std::int64_t per_slice = std::max<std::int64_t>(1, (std::int64_t{16} << 20) / row);   // ~64 MiB of fp32
    std::string bytes;
    for (std::int64_t r = 0; r < rows.size(0); r += per_slice) {
        const at::Tensor slice = rows.narrow(0, r, std::min(per_slice, rows.size(0) - r)).to(at::kFloat).contiguous();
        bytes.clear();
        gguf::encode(p.desc.type, slice.data_ptr<float>(), slice.numel(), bytes);
        w.write(bytes.data(), bytes.size());
    }
}

void export_gguf(const Args& a) {
    const Quant quant = quant_named(a.quant);
    const fs::path dir = resolve_model_argument(a.model);
    const json config = read_json_object(dir / "config.json");
    const ModelConfig cfg = ModelConfig::from_hf(config);
    const std::string arch = gguf_arch(cfg);
    auto reader = WeightReader::open_dir(dir);
    if (!reader) throw InputError("--model: " + dir.string() + " has no safetensors weights");
    std::vector<std::string> ignored;
    check_weights(*reader, expected_tensors(cfg), ignored);
    std::optional<AdapterFold> fold;
    if (!a.adapter.empty()) fold.emplace(a.adapter, *reader);

    std::vector<std::string> warnings = cfg.warnings;
    if (cfg.sliding_window > 0)
        warnings.push_back("config.json's sliding_window is not a key of llama.cpp's \"" + arch +
                           "\" architecture: llama.cpp attends to the whole context");
    const fs::path out = a.out;
    if (out.filename().empty() || fs::is_directory(out)) throw InputError("--out: " + out.string() + " is a folder; name the .gguf file");
    gguf::Metadata meta;
    add_arch_keys(cfg, config, arch, dir.filename().string(), quant.file_type, meta);
    const gguf::VocabSummary vocab = gguf::add_tokenizer(dir, cfg.vocab, meta);
    std::vector<Planned> plan = plan_tensors(cfg, arch, quant.matrix, warnings);
    for (const auto& w : warnings) log_warning("export: " + w);

    std::vector<gguf::TensorDesc> descs;
    for (const auto& p : plan) descs.push_back(p.desc);
    std::error_code ec;
    if (!out.parent_path().empty()) fs::create_directories(out.parent_path(), ec);
    if (ec) throw IoError("cannot create " + out.parent_path().string() + ": " + ec.message());
    AtomicFile file(out);   // a temporary beside --out, renamed over it only when complete
    gguf::Writer writer(file, meta, descs);
    for (size_t i = 0; i < plan.size(); ++i) {
        const Planned& p = plan[i];
        at::Tensor t = p.hf.empty() ? at::tensor(llama3_rope_factors(cfg), at::kFloat) : reader->read(p.hf);
        if (fold && !p.hf.empty()) t = fold->apply(p.hf, t);
        write_tensor(writer, p, t);
        emit(EventType::Log, {{"level", "info"},
                              {"message", "export: " + p.desc.name + " (" + gguf::traits(p.desc.type).name + ")"},
                              {"export", {{"tensor", i + 1}, {"tensors", plan.size()}, {"name", p.desc.name},
                                          {"type", gguf::traits(p.desc.type).name}, {"bytes_written", file.bytes_written()},
                                          {"total_bytes", writer.total_bytes()}}}});
    }
    if (fold) fold->check_all_used();
    writer.finish();
    file.commit();

    const fs::path modelfile = out.parent_path() / "Modelfile";
    write_file_atomic(modelfile, gguf::ollama_modelfile(out.filename().string(), dir, vocab));
    emit(EventType::Done, {{"reason", "completed"}, {"out", fs::absolute(out).string()}, {"bytes", writer.total_bytes()},
                           {"tensors", plan.size()}, {"quant", a.quant}, {"architecture", arch},
                           {"modelfile", fs::absolute(modelfile).string()}, {"merged_adapters", fold ? fold->merged() : 0}});
}

}  // namespace

int run_export(const std::vector<std::string>& args) {
    emit(EventType::Hello, {{"trainer", "wingspan-train"}, {"version", kVersion}, {"command", "export"}});
    auto fail = [](const char* code, const std::string& message, int rc) {
        emit(EventType::Error, {{"code", code}, {"message", valid_utf8("export: " + message)}});
        emit(EventType::Done, {{"reason", "error"}});
        return rc;
    };
    Args a;
    try {
        a = parse(args);
    } catch (const InputError& e) {
        return fail("bad_argument", e.what(), 2);
    }
    try {
        export_gguf(a);
        return 0;
    } catch (const InputError& e) {
        return fail("bad_model", e.what(), 2);
    } catch (const IoError& e) {
        return fail("io", e.what(), 1);
    } catch (const c10::Error& e) {   // one line, not libtorch's stack trace
        return fail("internal", one_line(e), 1);
    } catch (const std::exception& e) {
        return fail("internal", e.what(), 1);
    }
}

}  // namespace wingspan::train
