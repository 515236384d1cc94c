#include "wingspan/plan_flags.hpp"

#include <cmath>
#include <ostream>
#include <sstream>

#include "wingspan/errors.hpp"
#include "wingspan/hub.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/quant_formats.hpp"
#include "wingspan/verdict.hpp"

namespace wingspan {

std::optional<std::string> PlanFlags::get(const std::string& k) const {
    auto it = values.find(k);
    if (it == values.end()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> PlanFlags::all(const std::string& k) const {
    std::vector<std::string> out;
    auto it = values.find(k);
    if (it == values.end()) return out;
    for (const auto& v : it->second) {
        std::stringstream ss(v);
        std::string item;
        while (std::getline(ss, item, ','))
            if (!item.empty()) out.push_back(item);
    }
    return out;
}

const std::set<std::string>& plan_value_flags() {
    static const std::set<std::string> flags = {
    "--model", "--size", "--family", "--config", "--method", "--seq", "--batch", "--grad-accum",
    "--rank", "--alpha", "--dropout", "--targets", "--quant", "--grad-checkpointing",
    "--loss-chunk", "--precision", "--optimizer", "--attention", "--devices", "--sharding",
    "--framework", "--machine", "--examples", "--tokens-per-example", "--epochs", "--unit",
    "--solve", "--scenario", "--format", "--profiles", "--hf", "--model-dir", "--revision",
    "--lora-layers", "--num-layers", "--objective", "--reference", "--prompt-length", "--completion-length",
    "--generations", "--beta", "--vllm-share", "--from", "--from-format", "--data", "--padding",
    "--gguf", "--kv-type", "--ctx", "--n-gpu-layers", "--ubatch", "--parallel", "--flash-attn",
    "--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens", "--tensor-parallel", "--group-size"};
    return flags;
}
const std::set<std::string>& plan_switch_flags() {
    static const std::set<std::string> flags = {"--json", "--offload", "--train-embeddings", "--help", "--offline", "--dora",
                                            "--optimizer-in-backward", "--activation-offload", "--compile",
                                            "--optimizer-offload", "--rows"};
    return flags;
}

PlanFlags PlanFlags::parse(const std::vector<std::string>& args, size_t from) {
    PlanFlags o;
    for (size_t i = from; i < args.size(); ++i) {
        std::string a = args[i];
        std::optional<std::string> inline_value;
        if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            inline_value = a.substr(eq + 1);
            a = a.substr(0, eq);
        }
        if (plan_switch_flags().count(a)) {
            o.switches.insert(a);
        } else if (plan_value_flags().count(a)) {
            if (!inline_value) {
                if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
                inline_value = args[++i];
            }
            o.values[a].push_back(*inline_value);
        } else if (a.rfind("--", 0) == 0) {
            std::vector<std::string> known(plan_value_flags().begin(), plan_value_flags().end());
            known.insert(known.end(), plan_switch_flags().begin(), plan_switch_flags().end());
            throw InputError("unknown option " + a + " (did you mean " + closest_names(a, known, 1).front() +
                             "?); `wingspan --help` lists them");
        } else {
            o.positional.push_back(a);
        }
    }
    return o;
}

std::int64_t PlanFlags::integer(const std::string& k, std::int64_t fallback, std::int64_t min) const {
    auto v = get(k);
    if (!v) return fallback;
    std::int64_t value = 0;
    size_t used = 0;
    try {
        value = std::stoll(*v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v->size()) throw InputError(k + " expects a whole number, got '" + *v + "'");
    if (value < min) throw InputError(k + " must be at least " + std::to_string(min) + " (got " + *v + ")");
    return value;
}

double PlanFlags::number(const std::string& k, double fallback) const {
    auto v = get(k);
    if (!v) return fallback;
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(*v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v->size() || !std::isfinite(value)) throw InputError(k + " expects a number, got '" + *v + "'");
    return value;
}

ByteUnit PlanFlags::unit() const {
    auto v = get("--unit");
    if (!v || *v == "GB" || *v == "gb") return ByteUnit::GB;
    if (*v == "GiB" || *v == "gib") return ByteUnit::GiB;
    throw InputError("--unit expects GB (10^9 bytes) or GiB (2^30 bytes), got '" + *v + "'");
}

namespace {

// Imports print their warnings (fields that were missing and what was assumed) to stderr.
ResolvedModel imported(const hub::ImportedModel& m, std::ostream& err) {
    for (const auto& w : m.warnings) err << "wingspan: warning: " << w << "\n";
    ResolvedModel r;
    r.id = m.profile.id;
    r.name = m.profile.name;
    r.family = m.profile.family;
    r.arch = m.arch;
    return r;
}

}  // namespace


ResolvedModel model_from_flags(const ProfileLibrary& lib, const PlanFlags& o, std::ostream& err) {
    const int given = int(o.has("--model")) + int(o.has("--size")) + int(o.has("--config")) + int(o.has("--hf")) +
                      int(o.has("--model-dir"));
    if (given > 1) throw InputError("give one of --model, --size, --config, --hf or --model-dir");
    if (auto repo = o.get("--hf")) {
        hub::HubOptions options;
        if (auto rev = o.get("--revision")) options.revision = *rev;
        if (o.has("--offline")) options.offline = true;
        const hub::ImportedModel m = hub::import_from_hub(*repo, options);
        hub::save_imported_profile(m, ProfileLibrary::user_dir());
        return imported(m, err);
    }
    if (auto dir = o.get("--model-dir")) return imported(hub::import_from_folder(*dir), err);
    ModelChoice choice;   // the rest is what the window's model choice resolves (resolve_model)
    if (auto cfg = o.get("--config")) {
        choice.config = read_untrusted_json_file(*cfg);
        choice.config_name = *cfg;
        ResolvedModel r = resolve_model(lib, choice);
        r.id = *cfg;   // the file names the model on the command line
        return r;
    }
    if (auto size = o.get("--size")) {
        std::int64_t params = 0;
        try {
            params = parse_param_count(*size);
        } catch (const std::invalid_argument& e) {
            throw InputError(std::string("--size: ") + e.what());
        }
        if (params <= 0) throw InputError("--size must be positive");
        choice.family = o.get("--family").value_or("");
        if (choice.family.empty()) choice.model_id = lib.nearest_model(params).id;
        else choice.target_params = params;
        return resolve_model(lib, choice);
    }
    choice.model_id = o.get("--model").value_or("llama-3.1-8b");
    return resolve_model(lib, choice);
}

TrainingSetup setup_from_flags(const PlanFlags& o, const Architecture& arch) {
    TrainingSetup s;
    if (auto v = o.get("--method")) s.method = parse_method(*v);
    set_precision(s, o.get("--precision").value_or("auto"));   // auto: per machine (issue 35)
    if (auto v = o.get("--optimizer")) s.optimizer = parse_optimizer(*v);
    if (auto v = o.get("--attention")) s.attention = parse_attention(*v);
    if (auto v = o.get("--sharding")) s.sharding = parse_sharding(*v);
    if (auto v = o.get("--quant")) s.quantization = parse_quantization(*v);
    if (auto v = o.get("--targets")) s.lora_targets = parse_targets(*v);
    s.quant_group_size = o.integer("--group-size", s.quant_group_size, -1);   // AWQ / GPTQ (validate says which)
    if (o.has("--group-size") && s.quantization != Quantization::Awq && s.quantization != Quantization::Gptq &&
        s.quantization != Quantization::GptqInt8)
        throw InputError("--group-size is AWQ's and GPTQ's (--quant awq, gptq or gptq-int8)");
    if (auto v = o.get("--grad-checkpointing")) {
        if (*v == "on" || *v == "true" || *v == "1") s.grad_checkpointing = true;
        else if (*v == "off" || *v == "false" || *v == "0") s.grad_checkpointing = false;
        else throw InputError("--grad-checkpointing expects on or off, got '" + *v + "'");
    }
    s.seq_len = o.integer("--seq", s.seq_len);
    s.micro_batch = o.integer("--batch", s.micro_batch);
    s.serve_batch = s.micro_batch;
    s.grad_accum = o.integer("--grad-accum", s.grad_accum);
    s.lora_rank = o.integer("--rank", s.lora_rank);
    s.lora_alpha = o.number("--alpha", 2.0 * double(s.lora_rank));
    // A data set named on the command line is counted where the framework holds it in RAM (wingspan-train).
    if (o.get("--examples") || o.get("--tokens-per-example")) {
        s.dataset_examples = o.integer("--examples", 1000);
        s.dataset_tokens = std::llround(checked_dataset_tokens(s.dataset_examples, o.integer("--tokens-per-example", 512),
                                                               1, "data set (--examples, --tokens-per-example)"));
    }
    s.lora_dropout = o.number("--dropout", 0.0);
    s.loss_chunk_tokens = o.integer("--loss-chunk", 0, 0);
    s.devices = o.integer("--devices", 1);
    if (s.devices > 1 && !o.has("--sharding")) s.sharding = Sharding::Ddp;
    s.offload = o.has("--offload") || o.has("--optimizer-offload");
    s.optimizer_in_backward = o.has("--optimizer-in-backward");
    s.activation_offload = o.has("--activation-offload");
    s.compile = o.has("--compile");
    s.train_embeddings = o.has("--train-embeddings");
    s.lora_layers = o.integer(o.has("--num-layers") ? "--num-layers" : "--lora-layers", 0, 0);
    s.dora = o.has("--dora");
    if (auto v = o.get("--objective")) s.objective.kind = parse_objective(*v);
    if (auto v = o.get("--reference")) s.objective.reference = parse_reference(*v);
    s.objective.prompt_len = o.integer("--prompt-length", 0, 0);
    s.objective.completion_len = o.integer("--completion-length", 0, 0);
    s.objective.generations = o.integer("--generations", s.objective.generations);
    s.objective.beta = o.number("--beta", s.objective.beta);
    s.objective.vllm_share = o.number("--vllm-share", 0.0);
    if (s.method == Method::Full && s.quantization != Quantization::None && !is_checkpoint_format(s.quantization))
        throw InputError("--quant needs --method qlora or serve");
    s.validate(arch);
    return s;
}

// What the user chose on the command line; the rest follows each machine's framework.
ChosenFields chosen_from_flags(const PlanFlags& o) {
    ChosenFields c;
    c.precision = o.get("--precision").value_or("auto") != "auto";   // auto leaves it to the framework, then the machine
    c.quantization = o.has("--quant");
    c.grad_checkpointing = o.has("--grad-checkpointing");
    c.lora_layers = o.has("--lora-layers") || o.has("--num-layers");
    return c;
}

std::vector<const MachineProfile*> machines_from_flags(const ProfileLibrary& lib, const PlanFlags& o) {
    std::vector<const MachineProfile*> out;
    for (const auto& id : o.all("--machine")) out.push_back(&lib.machine(id));
    if (out.empty())
        for (const auto& m : lib.machines()) out.push_back(&m);
    return out;
}


double dataset_tokens_from_flags(const PlanFlags& o) {
    return checked_dataset_tokens(o.integer("--examples", 1000), o.integer("--tokens-per-example", 512),
                                  o.integer("--epochs", 1), "data set (--examples, --tokens-per-example, --epochs)");
}

const FrameworkProfile* framework_from_flags(const ProfileLibrary& lib, const PlanFlags& o) {
    auto id = o.get("--framework");
    return id ? &lib.framework(*id) : nullptr;
}

}  // namespace wingspan
