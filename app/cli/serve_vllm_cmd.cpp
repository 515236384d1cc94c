#include "serve_vllm_cmd.hpp"
#include "serve_gguf_cmd.hpp"

#include <cstdio>
#include <map>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/quant_formats.hpp"
#include "wingspan/vllm_serve.hpp"

namespace wingspan::cli {

namespace {

using nlohmann::json;

const std::set<std::string> kVllmFlags = {"--framework", "--method", "--model", "--config", "--ctx", "--gpu-memory-utilization",
                                          "--max-num-seqs", "--max-num-batched-tokens", "--tensor-parallel", "--kv-type",
                                          "--unit", "--profiles", "--quant", "--group-size"};

using Args = ServeArgs;

Args parse(const std::vector<std::string>& args) {
    Args a = parse_serve_args(args, kVllmFlags,
                              "a vLLM serve plan (it takes --model/--config, --ctx, --gpu-memory-utilization, "
                              "--max-num-seqs, --max-num-batched-tokens, --tensor-parallel, --kv-type bf16|fp8, --quant "
                              "awq|gptq|gptq-int8|fp8|fp8-channel|fp8-block with --group-size, and --machine)");
    if (const auto it = a.values.find("--method"); it != a.values.end() && it->second != "serve")
        throw InputError("--framework vllm plans serving: use --method serve");
    return a;
}

std::int64_t integer(const Args& a, const std::string& k, std::int64_t min, std::int64_t max) {
    const auto it = a.values.find(k);
    if (it == a.values.end()) return 0;
    size_t used = 0;
    std::int64_t v = 0;
    try {
        v = std::stoll(it->second, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != it->second.size() || v < min || v > max)
        throw InputError(k + " expects a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", got '" +
                         it->second + "'");
    return v;
}

double fraction(const Args& a, const std::string& k) {
    const auto it = a.values.find(k);
    if (it == a.values.end()) return 0;
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(it->second, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != it->second.size() || !(v > 0 && v <= 1)) throw InputError(k + " expects a fraction in (0, 1], got '" + it->second + "'");
    return v;
}

// --quant: the checkpoint format vLLM loads (none: the 16-bit checkpoint); --group-size its AWQ/GPTQ groups.
void set_weight_format(const Args& a, vllm::Options& o) {
    if (const auto q = a.values.find("--quant"); q != a.values.end()) {
        o.quantization = parse_quantization(q->second);
        if (o.quantization != Quantization::None && !is_checkpoint_format(o.quantization))
            throw InputError("vLLM serves pre-quantized checkpoints: --quant awq, gptq, gptq-int8, fp8, fp8-channel or "
                             "fp8-block (or none for the 16-bit one), got '" + q->second + "'");
    }
    const bool grouped = o.quantization == Quantization::Awq || o.quantization == Quantization::Gptq ||
                         o.quantization == Quantization::GptqInt8;
    if (a.values.count("--group-size")) {
        if (!grouped) throw InputError("--group-size is AWQ's and GPTQ's (--quant awq, gptq or gptq-int8)");
        const std::string& text = a.values.at("--group-size");
        o.quant_group_size = text == "-1" ? -1 : integer(a, "--group-size", 1, std::int64_t{1} << 20);
    }
    require_valid_quant_group(o.quantization, o.quant_group_size);
}

json weight_format_json(const vllm::Options& o, const vllm::Plan& p) {
    if (!is_checkpoint_format(o.quantization))
        return {{"name", "none"}, {"label", "16-bit"}, {"formula", "2 B × every parameter"}};
    json j = {{"name", to_string(o.quantization)}, {"label", checkpoint_format_label(o.quantization, o.quant_group_size)},
              {"quantized_bytes", p.quantized_weights}, {"plain_bytes", p.weights - p.quantized_weights},
              {"formula", checkpoint_format_formula(o.quantization, o.quant_group_size) +
                              "; embeddings, head, norms and router in 16-bit"}};
    if (o.quantization == Quantization::Awq || o.quantization == Quantization::Gptq || o.quantization == Quantization::GptqInt8)
        j["group_size"] = o.quant_group_size;
    return j;
}

std::string gib(double bytes) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
    return s;
}

}  // namespace

bool wants_vllm_serve(const std::vector<std::string>& args) {
    for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--framework=vllm") return true;
        if (args[i] == "--framework" && i + 1 < args.size() && args[i + 1] == "vllm") return true;
    }
    return false;
}

int run_serve_vllm(const ProfileLibrary& lib, const std::filesystem::path& profiles_dir, const std::vector<std::string>& args,
                   std::ostream& out) {
    const Args a = parse(args);
    const vllm::Profile profile = vllm::load_profile(profiles_dir);
    std::string model_id = "llama-3.1-8b";
    Architecture arch;
    if (const auto cfg = a.values.find("--config"); cfg != a.values.end()) {
        if (a.values.count("--model")) throw InputError("give --model or --config, not both");
        model_id = cfg->second;
        arch = Architecture::from_hf_config(read_untrusted_json_file(cfg->second));
    } else {
        if (const auto m = a.values.find("--model"); m != a.values.end()) model_id = m->second;
        arch = lib.model(model_id).arch;
    }
    vllm::Options o;
    o.gpu_memory_utilization = fraction(a, "--gpu-memory-utilization");
    o.max_model_len = integer(a, "--ctx", 1, std::int64_t{1} << 24);
    o.max_num_seqs = integer(a, "--max-num-seqs", 1, 1 << 20);
    o.max_num_batched_tokens = integer(a, "--max-num-batched-tokens", 1, std::int64_t{1} << 24);
    o.tensor_parallel = a.values.count("--tensor-parallel") ? integer(a, "--tensor-parallel", 1, 64) : 1;
    if (const auto kv = a.values.find("--kv-type"); kv != a.values.end()) {
        if (kv->second == "fp8") o.kv_bytes = 1;
        else if (kv->second == "bf16" || kv->second == "f16" || kv->second == "auto") o.kv_bytes = 2;
        else throw InputError("--kv-type for vLLM expects auto, bf16, f16 or fp8, got '" + kv->second + "'");
    }
    set_weight_format(a, o);
    std::vector<const MachineProfile*> chosen;
    for (const auto& id : a.machines) chosen.push_back(&lib.machine(id));
    if (chosen.empty())
        for (const auto& m : lib.machines())
            if (m.kind == MachineKind::Gpu) chosen.push_back(&m);
    json machines = json::array();
    json weight_format;
    for (const auto* m : chosen) {
        if (m->kind != MachineKind::Gpu) throw InputError(m->id + " is not a CUDA GPU: vLLM's serve plan needs one");
        // vLLM's ceiling is a share of what CUDA reports as the card's total (mem_get_info);
        // the machine profile's memory_bytes stands for it.
        const vllm::Plan p = vllm::plan(arch, profile, o, static_cast<std::uint64_t>(m->memory_bytes));
        weight_format = weight_format_json(o, p);
        machines.push_back({{"id", m->id}, {"name", m->name}, {"total_bytes", p.total}, {"requested_bytes", p.requested},
                            {"frozen_weights_bytes", p.weights}, {"activation_peak_bytes", p.activation_peak},
                            {"forward_peak_bytes", p.forward_peak}, {"sampler_peak_bytes", p.sampler_peak},
                            {"non_torch_bytes", p.non_torch}, {"kv_cache_bytes", p.kv_available},
                            {"block_bytes", p.block_bytes}, {"gpu_blocks", p.num_blocks}, {"kv_cache_tokens", p.kv_tokens},
                            {"max_concurrency", p.max_concurrency},
                            {"verdict", p.kv_tokens >= p.max_model_len ? "fits" : "does not fit"},
                            {"settings", {{"max_model_len", p.max_model_len}, {"max_num_batched_tokens", p.max_num_batched_tokens},
                                          {"max_num_seqs", p.max_num_seqs}, {"block_size", p.block_size},
                                          {"tensor_parallel", o.tensor_parallel}, {"kv_bytes_per_value", o.kv_bytes}}}});
    }
    const json j = {{"method", "serve"}, {"runtime", "vllm"}, {"profile", {{"id", profile.id}, {"version", profile.version}}},
                    {"model", model_id}, {"weight_format", weight_format}, {"machines", machines}};
    if (a.json) {
        out << j.dump(2) << "\n";
        return 0;
    }
    out << "vLLM serving " << model_id << " (profile " << profile.version << ")\n";
    if (!weight_format.is_null())
        out << "Weights: " << weight_format["label"].get<std::string>() << ": " << weight_format["formula"].get<std::string>()
            << "\n";
    out << "\n";
    for (const auto& m : machines) {
        out << "  " << m["name"].get<std::string>() << ": " << gib(m["requested_bytes"].get<double>()) << " of "
            << gib(m["total_bytes"].get<double>()) << " reserved; weights " << gib(m["frozen_weights_bytes"].get<double>())
            << ", activation peak " << gib(m["activation_peak_bytes"].get<double>()) << ", KV cache "
            << gib(m["kv_cache_bytes"].get<double>()) << " = " << m["kv_cache_tokens"].get<std::int64_t>() << " tokens; "
            << m["max_concurrency"].get<double>() << " sequences of " << m["settings"]["max_model_len"].get<std::int64_t>()
            << " tokens at once (" << m["verdict"].get<std::string>() << ")\n";
    }
    out << "\nGiB = 2^30 bytes. vLLM reserves gpu_memory_utilization x the GPU's memory and fills what the weights, "
           "its profile run and memory outside PyTorch leave with KV blocks (profiles/serving/vllm.json).\n";
    return 0;
}

}  // namespace wingspan::cli
