#include "serve_gguf_cmd.hpp"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>

#include "cli.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/gguf_file.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/llama_cpp_fit.hpp"
#include "wingspan/llama_cpp_terms.hpp"
#include "wingspan/quant_formats.hpp"
#include "wingspan/units.hpp"

namespace wingspan::cli {

namespace {

using nlohmann::json;
namespace lc = llama_cpp;

const std::set<std::string> kServeFlags = {"--gguf", "--kv-type", "--ctx", "--n-gpu-layers", "--ubatch", "--parallel", "--flash-attn"};

using Args = ServeArgs;

Args parse(const std::vector<std::string>& args) {
    std::set<std::string> takes = kServeFlags;
    takes.insert({"--model", "--config", "--quant", "--method", "--unit", "--profiles"});
    return parse_serve_args(args, takes,
                            "a llama.cpp serve plan (it takes --gguf or --model/--config with --quant, and --ctx --kv-type "
                            "--n-gpu-layers --ubatch --parallel --flash-attn --machine)");
}

std::int64_t integer(const Args& a, const std::string& k, std::int64_t fallback, std::int64_t min) {
    const auto it = a.values.find(k);
    if (it == a.values.end()) return fallback;
    if (k == "--n-gpu-layers" && (it->second == "all" || it->second == "-1")) return -1;
    size_t used = 0;
    std::int64_t v = 0;
    try {
        v = std::stoll(it->second, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != it->second.size() || v < min || v > (std::int64_t{1} << 30))
        throw InputError(k + " expects a whole number from " + std::to_string(min) + ", got '" + it->second + "'");
    return v;
}

struct Model {
    std::string id, source;
    lc::ServeModel shape;
};

Model choose_model(const ProfileLibrary& lib, const Args& a) {
    const auto get = [&](const char* k) -> std::optional<std::string> {
        const auto it = a.values.find(k);
        return it == a.values.end() ? std::nullopt : std::optional(it->second);
    };
    if (const auto file = get("--gguf")) {
        if (get("--model") || get("--config")) throw InputError("give --gguf or --model/--config, not both");
        if (get("--quant")) throw InputError("--quant does not apply with --gguf: the file's tensors have their own types");
        return {*file, "gguf", lc::model_from_gguf(gguf::read_file(*file))};
    }
    const std::string quant = get("--quant").value_or("q4_k_m");
    if (names_checkpoint_format(quant))
        throw InputError("llama.cpp loads GGUF files, not " + quant + " checkpoints: give a GGUF type (--quant q4_k_m, q8_0, "
                         "f16, ...), or plan " + quant + " with --framework vllm or without the llama.cpp flags (hf-transformers)");
    if (const auto cfg = get("--config"))
        return {*cfg, "config.json + " + quant, lc::model_from_architecture(Architecture::from_hf_config(read_untrusted_json_file(*cfg)), quant)};
    const std::string id = get("--model").value_or("llama-3.1-8b");
    return {id, "profile + " + quant, lc::model_from_architecture(lib.model(id).arch, quant)};
}

// One machine's verdict and solvers (core's llama_cpp::machine_fit, as the window's serve view).
json machine_json(const MachineProfile& m, const lc::ServeModel& model, const lc::ServeOptions& o) {
    const lc::MachineFit f = lc::machine_fit(m, model, o);
    json j = {{"id", m.id}, {"name", m.name}, {"verdict", f.fits ? "fits" : "does not fit"},
              {"device_bytes_needed", f.device_needed}, {"device_bytes_usable", f.device_usable}};
    if (f.gpu) {
        j["host_bytes_needed"] = f.host_needed;
        j["host_bytes_available"] = f.host_available > 0 ? json(f.host_available) : json(nullptr);
        j["most_gpu_layers"] = *f.most_gpu_layers;
    }
    j["longest_context"] = f.longest_context;
    j["decode_tokens_per_s_ceiling"] = f.decode_tokens_per_s_ceiling ? json(*f.decode_tokens_per_s_ceiling) : json(nullptr);
    return j;
}

json plan_json(const Model& model, const lc::ServeOptions& o) {
    const lc::ServePlan p = lc::plan(model.shape, o);
    const auto& m = model.shape;
    json types = json::object();
    for (const auto& [t, n] : m.tensor_types) types[t] = n;
    const auto cache_name = [](std::uint32_t t) { return gguf::ggml_type_name(t); };
    json j;
    j["method"] = "serve";
    j["runtime"] = "llama.cpp";
    j["model"] = {{"id", model.id}, {"source", model.source}, {"architecture", m.architecture}, {"layers", m.layers},
                  {"embedding", m.embedding}, {"heads", m.heads}, {"kv_heads", m.kv_heads}, {"key_length", m.key_length},
                  {"vocab", m.vocab}, {"context_length", m.context_length}, {"sliding_window", m.sliding_window},
                  {"kv_lora_rank", m.kv_lora_rank}};
    j["settings"] = {{"n_ctx", o.n_ctx}, {"n_ubatch", std::min(o.n_ctx, o.n_ubatch)}, {"n_parallel", o.n_parallel},
                     {"type_k", cache_name(o.type_k)}, {"type_v", cache_name(o.type_v)}, {"flash_attn", o.flash_attn},
                     {"n_gpu_layers", o.n_gpu_layers}};
    j["components"] = {
        {"frozen_weights",
         {{"bytes", p.weights_gpu + p.weights_host}, {"gpu_bytes", p.weights_gpu}, {"host_bytes", p.weights_host},
          {"tensor_types", types},
          {"formula", "each tensor's bytes in its ggml type (blocks of 32 or 256 values); token_embd stays in host RAM"}}},
        {"kv_cache",
         {{"bytes", p.kv_gpu + p.kv_host}, {"gpu_bytes", p.kv_gpu}, {"host_bytes", p.kv_host}, {"cells", p.kv.cells},
          {"swa_cells", p.kv.swa_cells}, {"k_bytes", p.kv.k_bytes}, {"v_bytes", p.kv.v_bytes},
          {"formula", m.kv_lora_rank > 0 ? "layers × cells × (kv_lora_rank + rope_dim) values in type_k (MLA: no V)"
                      : "per layer: cells (windowed layers: their own cells) × kv_heads × (key_length in type_k + "
                        "value_length in type_v)"}}},
        {"compute_buffer",
         {{"bytes", p.compute_gpu + p.compute_host}, {"gpu_bytes", p.compute_gpu}, {"host_bytes", p.compute_host},
          {"attention_bytes", p.compute.attention}, {"mlp_bytes", p.compute.mlp}, {"output_bytes", p.compute.output},
          {"formula", p.compute.replayed > 0 ? "the worst-case graph at n_ubatch tokens replayed through ggml's graph allocator, per backend"
                                             : "the largest of the worst-case graph's attention, MLP and output moments at n_ubatch tokens"}}}};
    j["gpu_layers"] = {{"count", p.gpu_layers}, {"of", p.layers}, {"output_on_gpu", p.output_on_gpu},
                       {"gpu_bytes", p.gpu_total()}, {"host_bytes", p.host_total()}};
    j["total_bytes"] = p.gpu_total() + p.host_total();
    return j;
}

std::string mib(std::uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f MiB", double(b) / 1048576.0);
    return s;
}

}  // namespace

bool wants_llama_cpp_serve(const std::vector<std::string>& args) {
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string k = args[i].substr(0, args[i].find('='));
        if (kServeFlags.count(k)) return true;
        if (k == "--quant") {
            const std::string v = args[i].find('=') != std::string::npos ? args[i].substr(args[i].find('=') + 1)
                                  : i + 1 < args.size() ? args[i + 1] : "";
            if (lc::is_gguf_quant(v)) return true;
        }
    }
    return false;
}

int run_serve_gguf(const ProfileLibrary& lib, const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
    const Args a = parse(args);
    if (const auto it = a.values.find("--method"); it != a.values.end() && it->second != "serve")
        throw InputError("--gguf, --kv-type, --ctx and --n-gpu-layers plan llama.cpp serving: use --method serve");
    const Model model = choose_model(lib, a);
    lc::ServeOptions o;
    o.n_ctx = integer(a, "--ctx", 4096, 1);
    o.n_ubatch = integer(a, "--ubatch", 512, 1);
    o.n_parallel = integer(a, "--parallel", 1, 1);
    o.n_gpu_layers = integer(a, "--n-gpu-layers", -1, 0);
    if (const auto it = a.values.find("--kv-type"); it != a.values.end()) o.type_k = o.type_v = lc::parse_cache_type(it->second);
    if (const auto it = a.values.find("--flash-attn"); it != a.values.end()) {
        if (it->second != "on" && it->second != "off") throw InputError("--flash-attn expects on or off, got '" + it->second + "'");
        o.flash_attn = it->second == "on";
    }
    // llama.cpp needs flash attention for a quantized V cache (llama_init_from_model refuses it).
    if (o.type_v != 1 && o.type_v != 0 && !o.flash_attn && !a.values.count("--flash-attn")) o.flash_attn = true;
    if (o.type_v != 1 && o.type_v != 0 && !o.flash_attn)
        throw InputError("a quantized V cache needs --flash-attn on (llama.cpp refuses it without)");
    json j = plan_json(model, o);
    json machines = json::array();
    std::vector<const MachineProfile*> chosen;
    for (const auto& id : a.machines) chosen.push_back(&lib.machine(id));
    if (chosen.empty())
        for (const auto& m : lib.machines()) chosen.push_back(&m);
    for (const auto* m : chosen) machines.push_back(machine_json(*m, model.shape, o));
    j["machines"] = machines;
    if (a.json) {
        out << j.dump(2) << "\n";
        return kExitOk;
    }
    const auto& c = j["components"];
    out << "llama.cpp serving " << model.id << " (" << model.source << ", " << model.shape.architecture << ", "
        << model.shape.layers << " layers) at n_ctx " << o.n_ctx << ", KV " << j["settings"]["type_k"].get<std::string>()
        << ", flash attention " << (o.flash_attn ? "on" : "off") << ", " << j["gpu_layers"]["count"] << "/"
        << model.shape.layers << " layers on the GPU\n\n";
    for (const char* k : {"frozen_weights", "kv_cache", "compute_buffer"})
        out << "  " << k << std::string(16 - std::string(k).size(), ' ') << "GPU " << mib(c[k]["gpu_bytes"]) << "   host "
            << mib(c[k]["host_bytes"]) << "\n";
    out << "  total           GPU " << mib(j["gpu_layers"]["gpu_bytes"]) << "   host " << mib(j["gpu_layers"]["host_bytes"])
        << "\n\n";
    for (const auto& m : machines) {
        out << "  " << m["name"].get<std::string>() << ": " << m["verdict"].get<std::string>() << " (needs "
            << mib(m["device_bytes_needed"]) << " of " << mib(m["device_bytes_usable"]) << ")";
        if (m.contains("most_gpu_layers")) out << "; most GPU layers " << m["most_gpu_layers"];
        out << "; longest context " << m["longest_context"] << "\n";
    }
    out << "\nMiB = 2^20 bytes. Compute buffer: llama.cpp's worst-case graph at n_ubatch tokens (README, \"Serving "
           "with llama.cpp\", gives its measured error).\n";
    return kExitOk;
}

ServeArgs parse_serve_args(const std::vector<std::string>& args, const std::set<std::string>& takes,
                           const std::string& plan_kind) {
    ServeArgs a;
    for (size_t i = 1; i < args.size(); ++i) {
        std::string k = args[i], v;
        const auto eq = k.find('=');
        const bool inline_value = k.rfind("--", 0) == 0 && eq != std::string::npos;
        if (inline_value) v = k.substr(eq + 1), k = k.substr(0, eq);
        if (k == "--json") {
            a.json = true;
            continue;
        }
        if (!inline_value) {
            if (i + 1 >= args.size()) throw InputError("option " + k + " needs a value");
            v = args[++i];
        }
        if (k == "--machine") a.machines.push_back(v);
        else if (!takes.count(k)) throw InputError(k + " does not apply to " + plan_kind);
        else a.values[k] = v;
    }
    return a;
}

}  // namespace wingspan::cli
