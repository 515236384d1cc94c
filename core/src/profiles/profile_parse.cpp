// The bundled and user profiles read from their JSON: models, machines and frameworks, each
// field checked with the file and field named (profiles/*/README.md document them).
#include "wingspan/profiles.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "wingspan/errors.hpp"
#include "wingspan/units.hpp"

using nlohmann::json;

namespace wingspan {

namespace {

// Field readers that name the file and field and say what was expected.
class Fields {
public:
    Fields(const json& j, const std::string& file) : j_(j), file_(file) {
        if (!j.is_object()) throw ProfileError(file, "(root)", "expected a JSON object");
    }
    std::string str(const char* k, std::optional<std::string> fallback = std::nullopt) const {
        auto it = j_.find(k);
        if (it == j_.end() || it->is_null()) {
            if (fallback) return *fallback;
            throw ProfileError(file_, k, "is required (a string)");
        }
        if (!it->is_string()) throw ProfileError(file_, k, "expected a string, got " + it->dump());
        return it->get<std::string>();
    }
    std::int64_t bytes(const char* k, std::optional<std::int64_t> fallback = std::nullopt) const {
        auto it = j_.find(k);
        if (it == j_.end() || it->is_null()) {
            if (fallback) return *fallback;
            throw ProfileError(file_, k, "is required (a byte count)");
        }
        if (it->is_string()) {
            try {
                return parse_bytes(it->get<std::string>());
            } catch (const std::exception&) {
                throw ProfileError(file_, k, "expected a byte count such as 25769803776 or \"24GiB\", got " + it->dump());
            }
        }
        if (!it->is_number() || it->get<double>() < 0)
            throw ProfileError(file_, k, "expected a non-negative byte count, got " + it->dump());
        return static_cast<std::int64_t>(std::llround(it->get<double>()));
    }
    double num(const char* k, std::optional<double> fallback = std::nullopt) const {
        auto it = j_.find(k);
        if (it == j_.end() || it->is_null()) {
            if (fallback) return *fallback;
            throw ProfileError(file_, k, "is required (a number)");
        }
        if (!it->is_number()) throw ProfileError(file_, k, "expected a number, got " + it->dump());
        return it->get<double>();
    }
    bool boolean(const char* k, bool fallback) const {
        auto it = j_.find(k);
        if (it == j_.end() || it->is_null()) return fallback;
        if (!it->is_boolean()) throw ProfileError(file_, k, "expected true or false, got " + it->dump());
        return it->get<bool>();
    }
    std::map<std::string, std::string> strings(const char* k) const {
        std::map<std::string, std::string> out;
        auto it = j_.find(k);
        if (it == j_.end() || it->is_null()) return out;
        if (!it->is_object()) throw ProfileError(file_, k, "expected an object of strings");
        for (auto& [key, v] : it->items()) {
            if (!v.is_string()) throw ProfileError(file_, std::string(k) + "." + key, "expected a string");
            out[key] = v.get<std::string>();
        }
        return out;
    }

private:
    const json& j_;
    const std::string& file_;
};

}  // namespace

ModelProfile parse_model_profile(const json& j, const std::string& file) {
    Fields f(j, file);
    ModelProfile m;
    m.id = f.str("id");
    m.name = f.str("name", m.id);
    m.hf_repo = f.str("hf_repo", std::string());
    m.family = f.str("family", std::string("other"));
    if (!j.contains("config") || !j["config"].is_object())
        throw ProfileError(file, "config", "expected the model's Hugging Face config.json object");
    try {
        m.arch = Architecture::from_hf_config(j["config"]);
    } catch (const InputError& e) {
        throw ProfileError(file, "config", e.what());
    }
    m.file = file;
    return m;
}

MachineProfile parse_machine_profile(const json& j, const std::string& file) {
    Fields f(j, file);
    MachineProfile m;
    m.id = f.str("id");
    m.name = f.str("name", m.id);
    const std::string kind = f.str("kind", std::string("gpu"));
    if (kind == "gpu") m.kind = MachineKind::Gpu;
    else if (kind == "unified") m.kind = MachineKind::Unified;
    else if (kind == "cpu") m.kind = MachineKind::Cpu;
    else throw ProfileError(file, "kind", "expected \"gpu\", \"unified\" or \"cpu\", got \"" + kind + "\"");
    m.memory_bytes = f.bytes("memory_bytes");
    if (m.memory_bytes <= 0) throw ProfileError(file, "memory_bytes", "must be positive");
    m.usable_bytes = f.bytes("usable_bytes", m.memory_bytes);
    if (m.usable_bytes <= 0 || m.usable_bytes > m.memory_bytes)
        throw ProfileError(file, "usable_bytes", "must be positive and at most memory_bytes");
    m.host_memory_bytes = f.bytes("host_memory_bytes", m.kind == MachineKind::Gpu ? 0 : m.memory_bytes);
    m.bandwidth_gb_s = f.num("bandwidth_gb_s", 0.0);
    m.link_gb_s = f.num("link_gb_s", m.kind == MachineKind::Unified ? m.bandwidth_gb_s : 0.0);
    if (m.bandwidth_gb_s < 0 || m.link_gb_s < 0 || !std::isfinite(m.bandwidth_gb_s) || !std::isfinite(m.link_gb_s))
        throw ProfileError(file, "bandwidth_gb_s", "bandwidths must be finite and not negative");
    m.tflops_bf16 = f.num("tflops_bf16", 0.0);
    m.tflops_fp16 = f.num("tflops_fp16", 0.0);
    m.tflops_fp32 = f.num("tflops_fp32", 0.0);
    if (m.tflops_bf16 <= 0 && m.tflops_fp16 <= 0 && m.tflops_fp32 <= 0)
        throw ProfileError(file, "tflops_fp32", "at least one of tflops_bf16, tflops_fp16, tflops_fp32 must be positive");
    m.tflops_matmul_measured = f.num("tflops_matmul_measured", 0.0);
    if (m.tflops_matmul_measured < 0 || !std::isfinite(m.tflops_matmul_measured))
        throw ProfileError(file, "tflops_matmul_measured", "must be finite and not negative");
    m.tops_int8 = f.num("tops_int8", 0.0);
    if (m.tops_int8 < 0 || !std::isfinite(m.tops_int8))
        throw ProfileError(file, "tops_int8", "must be finite and not negative");
    m.flash_attention_relative = f.num("flash_attention_relative", 1.0);
    if (!(m.flash_attention_relative > 0) || m.flash_attention_relative > 1.5 || !std::isfinite(m.flash_attention_relative))
        throw ProfileError(file, "flash_attention_relative", "must be in (0, 1.5]");
    m.bf16 = f.boolean("bf16", m.tflops_bf16 > 0);
    m.power_w = f.num("power_w", 0.0);
    if (j.contains("price_per_hour") && !j["price_per_hour"].is_null())
        m.price_per_hour = f.num("price_per_hour");
    m.default_framework = f.str("default_framework", ProfileLibrary::default_framework_id(m.kind));
    m.sources = f.strings("sources");
    m.user_defined = f.boolean("user_defined", false);
    m.file = file;
    return m;
}

json machine_profile_to_json(const MachineProfile& m) {
    json j = {{"id", m.id},
              {"name", m.name},
              {"kind", m.kind == MachineKind::Gpu ? "gpu" : m.kind == MachineKind::Unified ? "unified" : "cpu"},
              {"memory_bytes", m.memory_bytes},
              {"usable_bytes", m.usable_bytes},
              {"host_memory_bytes", m.host_memory_bytes},
              {"bandwidth_gb_s", m.bandwidth_gb_s},
              {"link_gb_s", m.link_gb_s},
              {"tflops_bf16", m.tflops_bf16},
              {"tflops_fp16", m.tflops_fp16},
              {"tflops_fp32", m.tflops_fp32},
              {"bf16", m.bf16},
              {"power_w", m.power_w},
              {"price_per_hour", m.price_per_hour ? json(*m.price_per_hour) : json(nullptr)},
              {"default_framework", m.default_framework},
              {"sources", m.sources}};
    if (m.tflops_matmul_measured > 0) j["tflops_matmul_measured"] = m.tflops_matmul_measured;
    if (m.tops_int8 > 0) j["tops_int8"] = m.tops_int8;
    if (m.flash_attention_relative != 1.0) j["flash_attention_relative"] = m.flash_attention_relative;
    if (m.user_defined) j["user_defined"] = true;
    return j;
}

namespace {

std::vector<std::string> string_list(const json& j, const char* k, const std::string& file) {
    std::vector<std::string> out;
    if (!j.contains(k) || j[k].is_null()) return out;
    if (!j[k].is_array()) throw ProfileError(file, k, "expected an array of strings");
    for (const auto& v : j[k]) {
        if (!v.is_string()) throw ProfileError(file, k, "expected an array of strings");
        out.push_back(v.get<std::string>());
    }
    return out;
}

// A key the planner does not read is a typo or a field of another version: an error naming the
// file and the key, with the closest known one.
void reject_unknown_keys(const json& j, const std::vector<std::string>& known, const std::string& file,
                         const std::string& prefix) {
    for (const auto& [key, value] : j.items()) {
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        const auto near = closest_names(key, known, 1);
        throw ProfileError(file, prefix + key,
                           "is not a framework profile key" + (near.empty() ? std::string() : " (did you mean '" + prefix + near.front() + "'?)") +
                               "; the keys are listed in profiles/frameworks/README.md");
    }
}

// The behaviour sections (profiles/frameworks/README.md). Every one is optional: a profile
// without them behaves as the planner's reference (and as before they existed).
void parse_framework_behaviour(const json& j, const std::string& file, FrameworkProfile& p) {
    p.aliases = string_list(j, "aliases", file);
    p.devices = string_list(j, "devices", file);
    for (const auto& d : p.devices)
        if (d != "gpu" && d != "unified" && d != "cpu")
            throw ProfileError(file, "devices", "expected gpu, unified or cpu, got '" + d + "'");
    auto section = [&](const char* k) -> const json* {
        if (!j.contains(k) || j[k].is_null()) return nullptr;
        if (!j[k].is_object()) throw ProfileError(file, k, "expected an object");
        if (std::string(k) != "dtypes") reject_unknown_keys(j[k], framework_profile_keys().at(k), file, std::string(k) + ".");
        p.behaviour[k] = j[k];
        return &j[k];
    };
    if (!p.aliases.empty()) p.behaviour["aliases"] = p.aliases;
    if (!p.devices.empty()) p.behaviour["devices"] = p.devices;
    const std::string where = file;
    if (const json* d = section("defaults")) {
        Fields f(*d, where);
        p.default_precision = f.str("precision", std::string());
        p.default_quantization = f.str("quantization", std::string());
        if (d->contains("grad_checkpointing")) p.default_grad_checkpointing = f.boolean("grad_checkpointing", false) ? 1 : 0;
        p.default_lora_layers = f.bytes("lora_layers", 0);
    }
    if (const json* d = section("dtypes")) {
        static const std::set<std::string> kKeys = {"frozen", "trainable", "adapter", "gradient", "master", "moments"};
        for (const auto& [key, entry] : d->items()) {
            if (!entry.is_object()) throw ProfileError(file, "dtypes." + key, "expected an object of byte sizes");
            for (const auto& [field, v] : entry.items()) {
                if (!kKeys.count(field))
                    throw ProfileError(file, "dtypes." + key + "." + field,
                                       "unknown (expected frozen, trainable, adapter, gradient, master or moments)");
                if (!v.is_number_integer() || (v.get<int>() != 0 && v.get<int>() != 1 && v.get<int>() != 2 && v.get<int>() != 4))
                    throw ProfileError(file, "dtypes." + key + "." + field, "expected 0, 1, 2 or 4 bytes");
                p.dtypes[key][field] = v.get<int>();
            }
        }
    }
    if (const json* d = section("qlora")) p.qlora_upcast_non_quantized = Fields(*d, where).boolean("upcast_non_quantized", false);
    if (const json* d = section("quantization")) {
        Fields f(*d, where);
        p.quant_format = f.str("format", std::string("nf4"));
        if (p.quant_format != "nf4" && p.quant_format != "affine")
            throw ProfileError(file, "quantization.format", "expected \"nf4\" or \"affine\"");
        p.quant_group = f.bytes("group", 64);
        if (p.quant_group < 1) throw ProfileError(file, "quantization.group", "must be positive");
        p.quant_constant_bytes = static_cast<int>(f.bytes("constant_bytes", 4));
        p.quant_dequantize_bytes = f.num("dequantize_bytes_per_weight", 0.0);
        if (p.quant_dequantize_bytes < 0 || p.quant_dequantize_bytes > 64)
            throw ProfileError(file, "quantization.dequantize_bytes_per_weight", "expected 0 .. 64 bytes per weight");
        p.quant_matmul_reads_packed = f.boolean("matmul_reads_packed", false);
        p.quantizes_embeddings = f.boolean("embeddings", false);
        p.quantizes_head = f.boolean("head", false);
    }
    if (const json* d = section("loss")) {
        Fields f(*d, where);
        p.logits_held = f.boolean("logits_held", true);
        p.loss_upcast_fp32 = f.boolean("upcast_fp32", true);
        p.loss_fused = f.boolean("fused", false);
        p.loss_chunks = f.bytes("chunks", 0);
        p.loss_chunk_positions = f.bytes("chunk_positions", 0);
        p.loss_chunk_fp32_bytes = f.bytes("chunk_fp32_bytes", 0);
        p.loss_chunks_multiple = std::max<std::int64_t>(1, f.bytes("chunks_multiple", 1));
    } else if (p.fused_loss) {
        // The older flag: a fused loss over 4096-token chunks that never holds the full logits.
        p.loss_fused = true;
        p.logits_held = false;
        p.loss_chunk_tokens = 4096;
    }
    if (const json* d = section("checkpointing")) p.checkpoint_offload = Fields(*d, where).boolean("offload", false);
    for (const char* k : {"compile", "kernels", "attention", "model", "objective"}) section(k);
    // Every flag of the sections above (and qlora's), typed, read once: framework_behaviour.cpp.
    p.traits = parse_framework_behaviour_flags(j, file);
}

// Earlier releases (profile key "releases"): each one's behaviour sections are merged over the
// profile and the result parsed like any profile, so a typo in a release is an error too.
void parse_framework_releases(const json& j, const std::string& file, FrameworkProfile& p) {
    const auto list = j.find("releases");
    if (list == j.end() || list->is_null()) return;
    if (!list->is_object()) throw ProfileError(file, "releases", "expected an object keyed by release");
    static const std::vector<std::string> kEntryKeys = {"summary", "behaviour"};
    static const std::vector<std::string> kSections = {"defaults", "dtypes", "qlora", "quantization", "loss", "checkpointing",
                                                       "compile", "kernels", "attention", "model", "objective"};
    for (const auto& [name, entry] : list->items()) {
        const std::string at = "releases." + name;
        if (name.empty() || name.find('@') != std::string::npos) throw ProfileError(file, at, "a release name without '@'");
        if (!entry.is_object()) throw ProfileError(file, at, "expected an object with summary and behaviour");
        reject_unknown_keys(entry, kEntryKeys, file, at + ".");
        if (!entry.contains("summary") || !entry["summary"].is_string() || entry["summary"].get<std::string>().empty())
            throw ProfileError(file, at + ".summary", "expected the versions and the source that shows the difference");
        if (!entry.contains("behaviour") || !entry["behaviour"].is_object())
            throw ProfileError(file, at + ".behaviour", "expected an object of behaviour sections");
        const json& behaviour = entry["behaviour"];
        reject_unknown_keys(behaviour, kSections, file, at + ".behaviour.");
        for (const auto& [section, keys] : behaviour.items())
            if (keys.is_object() && section != "dtypes")
                reject_unknown_keys(keys, framework_profile_keys().at(section), file, at + ".behaviour." + section + ".");
        json merged = j;
        merged.erase("releases");
        merged.merge_patch(behaviour);
        auto released = std::make_shared<FrameworkProfile>(parse_framework_profile(merged, file));
        released->release = name;
        released->name = p.name + " (release " + name + ")";
        p.releases.push_back({name, entry["summary"].get<std::string>(), behaviour, std::move(released)});
    }
}

}  // namespace

const std::map<std::string, std::vector<std::string>>& framework_profile_keys() {
    static std::map<std::string, std::vector<std::string>> keys = {
        {"", {"id", "name", "context_bytes", "workspace_bytes", "queued_bytes", "kv_cache_step", "allocator_slack", "allocator_slack_of",
              "activation_factor", "mfu", "quantized_speed_factor", "speed_scale", "working_set_fraction", "optimizer_step",
              "fused_loss", "grouped_eager_attention", "softmax_fp32", "norm_saves_square", "loss_in_place",
              "tied_grad_in_place", "bf16_collectives_in_fp32", "zero1_wire_buffer", "checkpoint_state_bytes",
              "dataset_bytes_per_token", "dataset_bytes_per_example",
              "technique_lead", "sources", "aliases", "devices", "defaults", "dtypes", "qlora", "quantization", "loss",
              "checkpointing", "compile", "kernels", "attention", "model", "objective", "releases"}},
    };
    // The sections' keys are those of the generated table (framework_behaviour.cpp behaviour_keys).
    static const bool sections_added = [] {
        for (const auto& k : behaviour_keys())
            if (*k.section && std::string(k.key) != "*") keys[k.section].push_back(k.key);
        return true;
    }();
    (void)sections_added;
    return keys;
}

FrameworkProfile parse_framework_profile(const json& j, const std::string& file) {
    Fields f(j, file);
    reject_unknown_keys(j, framework_profile_keys().at(""), file, "");
    FrameworkProfile p;
    p.id = f.str("id");
    p.name = f.str("name", p.id);
    p.context_bytes = f.bytes("context_bytes", 0);
    p.workspace_bytes = f.bytes("workspace_bytes", 0);
    p.queued_bytes = f.bytes("queued_bytes", 0);
    if (p.queued_bytes > (std::int64_t{1} << 50)) throw ProfileError(file, "queued_bytes", "expected at most 1 PiB");
    p.kv_cache_step = f.bytes("kv_cache_step", 0);
    if (p.kv_cache_step > (1 << 20)) throw ProfileError(file, "kv_cache_step", "expected at most 1,048,576 positions");
    p.allocator_slack = f.num("allocator_slack", 0.0);
    p.allocator_slack_of = f.str("allocator_slack_of", std::string("peak"));
    p.activation_factor = f.num("activation_factor", 1.0);
    p.mfu = f.num("mfu", 0.3);
    p.quantized_speed_factor = f.num("quantized_speed_factor", 0.7);
    p.speed_scale = f.num("speed_scale", 1.0);
    p.working_set_fraction = f.num("working_set_fraction", 1.0);
    p.optimizer_step = f.str("optimizer_step", std::string("foreach"));
    p.fused_loss = f.boolean("fused_loss", false);
    p.grouped_eager_attention = f.boolean("grouped_eager_attention", false);
    p.softmax_fp32 = f.boolean("softmax_fp32", true);
    p.norm_saves_square = f.boolean("norm_saves_square", false);
    p.loss_in_place = f.boolean("loss_in_place", false);
    p.tied_grad_in_place = f.boolean("tied_grad_in_place", false);
    p.bf16_collectives_in_fp32 = f.boolean("bf16_collectives_in_fp32", false);
    p.zero1_wire_buffer = f.boolean("zero1_wire_buffer", false);
    p.checkpoint_state_bytes = f.bytes("checkpoint_state_bytes", 0);
    p.dataset_bytes_per_token = f.num("dataset_bytes_per_token", 0);
    p.dataset_bytes_per_example = f.num("dataset_bytes_per_example", 0);
    p.technique_lead = static_cast<int>(f.num("technique_lead", 0));
    p.sources = f.strings("sources");
    parse_framework_behaviour(j, file, p);
    auto in_range = [&](double v, double lo, double hi, const char* k) {
        if (!(v >= lo && v <= hi))
            throw ProfileError(file, k, "expected a number between " + std::to_string(lo) + " and " + std::to_string(hi));
    };
    in_range(p.allocator_slack, 0, 1, "allocator_slack");
    in_range(p.activation_factor, 0.01, 10, "activation_factor");
    in_range(p.mfu, 0.001, 1, "mfu");
    in_range(p.quantized_speed_factor, 0.01, 1, "quantized_speed_factor");
    in_range(p.speed_scale, 0.01, 100, "speed_scale");
    in_range(p.working_set_fraction, 0.01, 1, "working_set_fraction");
    if (p.allocator_slack_of != "peak" && p.allocator_slack_of != "transient")
        throw ProfileError(file, "allocator_slack_of", "expected \"peak\" or \"transient\"");
    if (p.optimizer_step != "foreach" && p.optimizer_step != "per_tensor" && p.optimizer_step != "fused")
        throw ProfileError(file, "optimizer_step", "expected \"foreach\", \"per_tensor\" or \"fused\"");
    p.file = file;
    parse_framework_releases(j, file, p);
    return p;
}

}  // namespace wingspan
