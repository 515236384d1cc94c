#include "cli.hpp"
#include "data_cmd.hpp"
#include "download_cmd.hpp"
#include "explain_oom_cmd.hpp"
#include "from_config_cmd.hpp"
#include "recipe_cmd.hpp"
#include "serve_gguf_cmd.hpp"
#include "serve_vllm_cmd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "wingspan/errors.hpp"
#include "wingspan/hub.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/recipe_watch.hpp"
#include "wingspan/run_record.hpp"
#include "wingspan/scenario.hpp"
#include "wingspan/units.hpp"
#include "wingspan/speed_model.hpp"
#include "wingspan/verdict.hpp"

namespace wingspan::cli {

using nlohmann::json;

namespace {

constexpr const char* kUsage = R"(usage: wingspan [command] [options]

With no command, starts the planner window:
  wingspan [PLAN.wingspan.json] [--train] [--tab N] [--screenshot FILE.png | --screenshot-dialog NAME FILE.png]
  --train opens the Run tab and starts wingspan-train on the plan (as "Train ▶" does);
  --screenshot saves the window as a PNG and exits; --screenshot-dialog NAME opens the dialog of the menu
  item or button NAME (its text in lower case, words joined by '-', e.g. add-model-from-the-hub) and saves that.

Commands:
  plan      memory, verdicts, speed and cost for one training or serving run
  fit       the largest batch, sequence length, LoRA rank or model size that fits
  table     a lesson's table, computed (Markdown or CSV)
  models    bundled model profiles
  machines  bundled machine profiles
  frameworks, scenarios   the other bundled profiles
  export    charts and tables to PNG/SVG/PDF/CSV without a display (GUI build)
  runs      the run history (runs launched from the window)
  calibrate RUN_DIR... [--framework ID]   fit a framework's fixed overheads and this machine's speed from finished runs
  download  OWNER/NAME [--revision R] [--include GLOB] [--offline]   a model into the HF cache (download --help)
  recipe    --framework ID --out DIR [plan flags]   the plan as a recipe for a training framework
  watch     [--plan predicted.json] -- COMMAND...   run a command and record it in the run history
  explain-oom [plan flags] [--json] < message.txt   a PyTorch CUDA/MPS out-of-memory message read, matched
            against the plan, with the nearest settings that fit

plan / fit options:
  --from CONFIG [--from-format axolotl|llama-factory|torchtune|hf-trl|peft|mlx-lm|unsloth]   a framework's config
                        (YAML/JSON, adapter_config.json) as the plan; flags after it override it
  --model ID | --size 8b [--family F] | --config config.json
  --hf OWNER/NAME [--revision R] [--offline]   any model on the Hugging Face Hub (HF_TOKEN, HF_ENDPOINT)
  --model-dir DIR                              a local folder with config.json and safetensors
  --method full|lora|qlora|serve   --seq N   --batch N   --grad-accum N
  --rank R  --alpha A  --targets q,k,v,o,gate,up,down|all   --train-embeddings
  --lora-layers N (alias --num-layers: adapters on the last N layers, as mlx-lm)   --dora
  --quant nf4|nf4-dq|int8   --grad-checkpointing on|off   --loss-chunk TOKENS
  --precision auto|fp32|bf16-mixed|bf16|fp16-mixed   (auto, the default: each machine's fastest exact one)
  --optimizer adamw|adamw8bit|paged-adamw|paged-adamw8bit|sgd|adafactor
  --optimizer-in-backward   --activation-offload   --compile   --optimizer-offload (alias --offload)
  --rows                (plan) the tensor inventory: one row per kind of tensor, its bytes and lifetime, and
                        each phase's total (with --json: rows and phases as JSON)
  --attention eager|sdpa|flash   --devices N --sharding ddp|zero1|zero2|zero3|fsdp
  --offload   --framework ID (default: each machine's own; `wingspan frameworks`)
  --objective sft|dpo|orpo|simpo|kto|grpo   --reference copy|adapter-off|precomputed|none
  --prompt-length N --completion-length N   --generations G --beta B --vllm-share F (GRPO)
  --machine ID [--machine ID ...]   precision, quantization, checkpointing and LoRA layers
  not given on the command line follow the framework's defaults
  --examples N --tokens-per-example N --epochs N   (data set for time and cost)
  --data FILE.jsonl|FOLDER [--padding dynamic|packed|max]   the data set itself (rows: messages,
                        instruction/input/output, prompt/completion, text), counted with the model's
                        tokenizer and chat template (--model-dir or a downloaded --hf): its length
                        histogram, the examples --seq cuts, and memory at the longest batch it forms
                        (padding: the framework's default when absent); fit solves and explain-oom
                        plans at the data's peak batch
  --unit GB|GiB   --json
serving with llama.cpp (plan --method serve):
  --gguf FILE.gguf | --model ID --quant q4_k_m|q5_k_m|q6_k|q8_0|q4_0|f16|bf16
  --ctx N  --kv-type f16|q8_0|q4_0  --n-gpu-layers N|all  --ubatch N  --parallel N  --flash-attn on|off
serving with vLLM (plan --method serve --framework vllm): --model ID  --ctx N (max_model_len)
  --gpu-memory-utilization F  --max-num-seqs N  --max-num-batched-tokens N  --tensor-parallel N  --kv-type bf16|fp8
fit: --solve batch|seq|rank|size
table: --scenario ID [--format markdown|csv]
)";

struct Options {
    std::map<std::string, std::vector<std::string>> values;
    std::set<std::string> flags;
    std::vector<std::string> positional;

    bool has(const std::string& k) const { return values.count(k) || flags.count(k); }
    std::optional<std::string> get(const std::string& k) const {
        auto it = values.find(k);
        if (it == values.end()) return std::nullopt;
        return it->second.back();
    }
    std::vector<std::string> all(const std::string& k) const {
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
};

const std::set<std::string> kValueOptions = {
    "--model", "--size", "--family", "--config", "--method", "--seq", "--batch", "--grad-accum",
    "--rank", "--alpha", "--dropout", "--targets", "--quant", "--grad-checkpointing",
    "--loss-chunk", "--precision", "--optimizer", "--attention", "--devices", "--sharding",
    "--framework", "--machine", "--examples", "--tokens-per-example", "--epochs", "--unit",
    "--solve", "--scenario", "--format", "--profiles", "--hf", "--model-dir", "--revision",
    "--lora-layers", "--num-layers", "--objective", "--reference", "--prompt-length", "--completion-length",
    "--generations", "--beta", "--vllm-share", "--from", "--from-format", "--data", "--padding",
    "--gguf", "--kv-type", "--ctx", "--n-gpu-layers", "--ubatch", "--parallel", "--flash-attn",
    "--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens", "--tensor-parallel"};
const std::set<std::string> kFlagOptions = {"--json", "--offload", "--train-embeddings", "--help", "--offline", "--dora",
                                            "--optimizer-in-backward", "--activation-offload", "--compile",
                                            "--optimizer-offload", "--rows"};

Options parse_options(const std::vector<std::string>& args, size_t from) {
    Options o;
    for (size_t i = from; i < args.size(); ++i) {
        std::string a = args[i];
        std::optional<std::string> inline_value;
        if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            inline_value = a.substr(eq + 1);
            a = a.substr(0, eq);
        }
        if (kFlagOptions.count(a)) {
            o.flags.insert(a);
        } else if (kValueOptions.count(a)) {
            if (!inline_value) {
                if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
                inline_value = args[++i];
            }
            o.values[a].push_back(*inline_value);
        } else if (a.rfind("--", 0) == 0) {
            std::vector<std::string> known(kValueOptions.begin(), kValueOptions.end());
            known.insert(known.end(), kFlagOptions.begin(), kFlagOptions.end());
            throw InputError("unknown option " + a + " (did you mean " + closest_names(a, known, 1).front() +
                             "?); `wingspan --help` lists them");
        } else {
            o.positional.push_back(a);
        }
    }
    return o;
}

std::int64_t parse_int(const Options& o, const std::string& k, std::int64_t fallback, std::int64_t min = 1) {
    auto v = o.get(k);
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

double parse_double(const Options& o, const std::string& k, double fallback) {
    auto v = o.get(k);
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

ByteUnit parse_unit(const Options& o) {
    auto v = o.get("--unit");
    if (!v || *v == "GB" || *v == "gb") return ByteUnit::GB;
    if (*v == "GiB" || *v == "gib") return ByteUnit::GiB;
    throw InputError("--unit expects GB (10^9 bytes) or GiB (2^30 bytes), got '" + *v + "'");
}

struct ModelChoice {
    std::string id, name, family;
    Architecture arch;
};

// Imports print their warnings (fields that were missing and what was assumed) to stderr.
ModelChoice imported(const hub::ImportedModel& m, std::ostream& err) {
    for (const auto& w : m.warnings) err << "wingspan: warning: " << w << "\n";
    return {m.profile.id, m.profile.name, m.profile.family, m.arch};
}

ModelChoice choose_model(const ProfileLibrary& lib, const Options& o, std::ostream& err) {
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
    if (auto cfg = o.get("--config")) {
        const json j = read_untrusted_json_file(*cfg);
        return {*cfg, *cfg, "imported", Architecture::from_hf_config(j)};
    }
    if (auto size = o.get("--size")) {
        std::int64_t params = 0;
        try {
            params = parse_param_count(*size);
        } catch (const std::invalid_argument& e) {
            throw InputError(std::string("--size: ") + e.what());
        }
        if (params <= 0) throw InputError("--size must be positive");
        const std::string family = o.get("--family").value_or("");
        if (family.empty()) {
            const ModelProfile& m = lib.nearest_model(params);
            return {m.id, m.name, m.family, m.arch};
        }
        std::vector<Architecture> archs;
        for (const auto* m : lib.family(family)) archs.push_back(m->arch);
        if (archs.empty()) throw InputError("no bundled models in family '" + family + "'");
        Architecture a = interpolate_family(archs, params);
        for (const auto* m : lib.family(family))
            if (m->arch.parameter_count() == a.parameter_count()) return {m->id, m->name, family, a};
        return {family + "-" + format_params_short(a.parameter_count()),
                family + " family at " + format_params_short(a.parameter_count()), family, a};
    }
    const ModelProfile& m = lib.model(o.get("--model").value_or("llama-3.1-8b"));
    return {m.id, m.name, m.family, m.arch};
}

TrainingSetup build_setup(const Options& o, const Architecture& arch) {
    TrainingSetup s;
    if (auto v = o.get("--method")) s.method = parse_method(*v);
    set_precision(s, o.get("--precision").value_or("auto"));   // auto: per machine (issue 35)
    if (auto v = o.get("--optimizer")) s.optimizer = parse_optimizer(*v);
    if (auto v = o.get("--attention")) s.attention = parse_attention(*v);
    if (auto v = o.get("--sharding")) s.sharding = parse_sharding(*v);
    if (auto v = o.get("--quant")) s.quantization = parse_quantization(*v);
    if (auto v = o.get("--targets")) s.lora_targets = parse_targets(*v);
    if (auto v = o.get("--grad-checkpointing")) {
        if (*v == "on" || *v == "true" || *v == "1") s.grad_checkpointing = true;
        else if (*v == "off" || *v == "false" || *v == "0") s.grad_checkpointing = false;
        else throw InputError("--grad-checkpointing expects on or off, got '" + *v + "'");
    }
    s.seq_len = parse_int(o, "--seq", s.seq_len);
    s.micro_batch = parse_int(o, "--batch", s.micro_batch);
    s.serve_batch = s.micro_batch;
    s.grad_accum = parse_int(o, "--grad-accum", s.grad_accum);
    s.lora_rank = parse_int(o, "--rank", s.lora_rank);
    s.lora_alpha = parse_double(o, "--alpha", 2.0 * double(s.lora_rank));
    // A data set named on the command line is counted where the framework holds it in RAM (wingspan-train).
    if (o.get("--examples") || o.get("--tokens-per-example")) {
        s.dataset_examples = parse_int(o, "--examples", 1000);
        s.dataset_tokens = std::llround(checked_dataset_tokens(s.dataset_examples, parse_int(o, "--tokens-per-example", 512),
                                                               1, "data set (--examples, --tokens-per-example)"));
    }
    s.lora_dropout = parse_double(o, "--dropout", 0.0);
    s.loss_chunk_tokens = parse_int(o, "--loss-chunk", 0, 0);
    s.devices = parse_int(o, "--devices", 1);
    if (s.devices > 1 && !o.has("--sharding")) s.sharding = Sharding::Ddp;
    s.offload = o.has("--offload") || o.has("--optimizer-offload");
    s.optimizer_in_backward = o.has("--optimizer-in-backward");
    s.activation_offload = o.has("--activation-offload");
    s.compile = o.has("--compile");
    s.train_embeddings = o.has("--train-embeddings");
    s.lora_layers = parse_int(o, o.has("--num-layers") ? "--num-layers" : "--lora-layers", 0, 0);
    s.dora = o.has("--dora");
    if (auto v = o.get("--objective")) s.objective.kind = parse_objective(*v);
    if (auto v = o.get("--reference")) s.objective.reference = parse_reference(*v);
    s.objective.prompt_len = parse_int(o, "--prompt-length", 0, 0);
    s.objective.completion_len = parse_int(o, "--completion-length", 0, 0);
    s.objective.generations = parse_int(o, "--generations", s.objective.generations);
    s.objective.beta = parse_double(o, "--beta", s.objective.beta);
    s.objective.vllm_share = parse_double(o, "--vllm-share", 0.0);
    if (s.method == Method::Full && s.quantization != Quantization::None)
        throw InputError("--quant needs --method qlora or serve");
    s.validate(arch);
    return s;
}

// What the user chose on the command line; the rest follows each machine's framework.
ChosenFields chosen_fields(const Options& o) {
    ChosenFields c;
    c.precision = o.get("--precision").value_or("auto") != "auto";   // auto leaves it to the framework, then the machine
    c.quantization = o.has("--quant");
    c.grad_checkpointing = o.has("--grad-checkpointing");
    c.lora_layers = o.has("--lora-layers") || o.has("--num-layers");
    return c;
}

std::vector<const MachineProfile*> choose_machines(const ProfileLibrary& lib, const Options& o) {
    std::vector<const MachineProfile*> out;
    for (const auto& id : o.all("--machine")) out.push_back(&lib.machine(id));
    if (out.empty())
        for (const auto& m : lib.machines()) out.push_back(&m);
    return out;
}

std::string pad(const std::string& s, size_t width, bool right = false) {
    // Width in code points, so "×" and "–" line up.
    size_t cps = 0;
    for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
    if (cps >= width) return s;
    return right ? std::string(width - cps, ' ') + s : s + std::string(width - cps, ' ');
}

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds)) return "—";
    char buf[32];
    if (seconds < 120) std::snprintf(buf, sizeof buf, "%.0f s", seconds);
    else if (seconds < 7200) std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
    else if (seconds < 3 * 86400) std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
    else std::snprintf(buf, sizeof buf, "%.1f days", seconds / 86400);
    return buf;
}

std::string describe_setup(const TrainingSetup& s, const FrameworkProfile& fw) {
    std::ostringstream d;
    d << to_string(s.method);
    if (s.method == Method::Lora || s.method == Method::Qlora)
        d << " rank " << s.lora_rank << " on " << targets_to_string(s.lora_targets);
    if (s.effective_quantization() != Quantization::None) d << " · " << quantization_label(s, fw);
    if (s.lora_layers > 0 && s.method != Method::Full && s.method != Method::Serve) d << " · last " << s.lora_layers << " layers";
    if (s.dora) d << " · DoRA";
    d << " · " << to_string(s.precision);
    if (s.trains()) d << " · " << to_string(s.optimizer);
    d << " · seq " << s.seq_len << " × batch " << (s.trains() ? s.micro_batch : s.serve_batch);
    if (s.grad_accum > 1) d << " × accum " << s.grad_accum;
    if (s.trains()) d << " · grad checkpointing " << (s.grad_checkpointing ? "on" : "off");
    d << " · attention " << to_string(s.attention);
    if (s.devices > 1) d << " · " << s.devices << " devices " << to_string(s.sharding);
    if (s.offload) d << " · optimizer offload";
    if (s.optimizer_in_backward) d << " · optimizer in backward";
    if (s.activation_offload) d << " · activation offload";
    if (s.compile) d << " · compile";
    if (s.objective.kind != Objective::Sft) d << "\nObjective " << objective_summary(s);
    return d.str();
}

double dataset_tokens(const Options& o) {
    return checked_dataset_tokens(parse_int(o, "--examples", 1000), parse_int(o, "--tokens-per-example", 512),
                                  parse_int(o, "--epochs", 1), "data set (--examples, --tokens-per-example, --epochs)");
}

const FrameworkProfile* explicit_framework(const ProfileLibrary& lib, const Options& o) {
    auto id = o.get("--framework");
    return id ? &lib.framework(*id) : nullptr;
}

// The framework ids, where each runs, its default precision and the ids it also answers to.
int cmd_frameworks(const ProfileLibrary& lib, std::ostream& out) {
    out << pad("id", 18) << pad("runs on", 14) << pad("precision", 12) << "name\n";
    for (const auto& f : lib.frameworks()) {
        std::string where, aliases;
        for (const auto& d : f.devices) where += (where.empty() ? "" : ",") + d;
        for (const auto& a : f.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
        out << pad(f.id, 18) << pad(where.empty() ? "—" : where, 14)
            << pad(f.default_precision.empty() ? "bf16-mixed" : f.default_precision, 12) << f.name
            << (aliases.empty() ? "" : " (also: " + aliases + ")") << "\n";
    }
    out << "Machine defaults: CUDA → " << ProfileLibrary::default_framework_id(MachineKind::Gpu) << ", Apple → "
        << ProfileLibrary::default_framework_id(MachineKind::Unified) << ", CPU → "
        << ProfileLibrary::default_framework_id(MachineKind::Cpu) << "\n";
    return kExitOk;
}

// plan --rows: the tensor inventory (one row per kind of tensor, with its lifetime) and each
// phase's allocated bytes from the lifetime walk, the peak marked.
int print_rows(const MemoryEstimate& est, bool as_json, std::ostream& out) {
    if (as_json) {
        out << json{{"rows", est.inventory.to_json()}, {"phases", est.to_json()["phases"]}, {"peak_phase", est.peak_phase}}.dump(2)
            << "\n";
        return 0;
    }
    out << est.inventory.table() << "\nphases (bytes allocated on one device, from the rows alive in each):\n";
    for (const auto& p : est.phases)
        out << "  " << p.name << ": " << format_count(p.total()) << " B" << (p.name == est.peak_phase ? "  <- peak" : "") << "\n";
    return 0;
}

// --data FILE|FOLDER read with the model's tokenizer (--model-dir, or --hf in the cache).
PlanData plan_data(const Options& o, const TrainingSetup& asked, std::ostream& err) {
    PlanData d;
    d.asked = asked;
    d.epochs = parse_int(o, "--epochs", 1);
    if (auto p = o.get("--padding")) d.padding = parse_padding(*p);
    auto file = o.get("--data");
    if (!file) {
        if (d.padding) throw InputError("--padding shapes the batches of --data FILE; give the data set too");
        return d;
    }
    const auto folder = train::tokenizer_folder(o.get("--model-dir"), o.get("--hf"), o.get("--revision").value_or("main"));
    d.lengths = train::read_data_lengths(*file, folder, err);
    return d;
}

int cmd_plan(const ProfileLibrary& lib, const Options& o, std::ostream& out, std::ostream& err) {
    const ModelChoice model = choose_model(lib, o, err);
    const TrainingSetup asked = build_setup(o, model.arch);
    const ChosenFields chosen = chosen_fields(o);
    const FrameworkProfile* forced = explicit_framework(lib, o);
    const auto machines = choose_machines(lib, o);
    // The totals: the framework asked for, else the one machine's, else the CUDA default.
    const FrameworkProfile& top_fw = forced ? *forced
                                     : o.all("--machine").size() == 1 ? lib.framework_for(*machines.front())
                                                                      : lib.framework(ProfileLibrary::default_framework_id(MachineKind::Gpu));
    TrainingSetup setup = apply_framework_defaults(asked, top_fw, chosen);
    // Precision auto: the totals take the one machine's choice, else what a GPU with bf16 takes;
    // each machine's verdict below makes its own (adapt_setup).
    std::string precision_reason;
    if (setup.precision_auto && machines.size() == 1) {
        setup = adapt_setup(setup, *machines.front(), nullptr, &precision_reason);
    } else if (setup.precision_auto) {
        setup.precision_auto = false;
        precision_reason = "auto: bf16-mixed for these totals (a GPU with bf16); each machine below takes its own";
    }
    setup.validate(model.arch);
    // --data: each framework's batches of the real examples; memory at the peak batch, time from its tokens.
    const PlanData data = plan_data(o, asked, err);
    const MemoryEstimate est = estimate_memory(model.arch, data.at_peak(setup, top_fw.id), top_fw);
    if (o.has("--rows")) return print_rows(est, o.has("--json"), out);
    const ByteUnit unit = parse_unit(o);
    const double tokens = data.tokens(top_fw.id, dataset_tokens(o));
    const bool serving = !setup.trains();
    std::vector<MachineVerdict> verdicts;
    std::vector<double> machine_tokens;
    for (const auto* m : machines) {
        const FrameworkProfile& fw = forced ? *forced : lib.framework_for(*m);
        verdicts.push_back(evaluate(model.arch, data.at_peak(apply_framework_defaults(asked, fw, chosen), fw.id), *m, fw));
        machine_tokens.push_back(data.tokens(fw.id, tokens));
    }

    if (o.has("--json")) {
        json j = est.to_json();
        j["model"] = {{"id", model.id}, {"name", model.name}, {"family", model.family},
                      {"config", model.arch.to_hf_config()}, {"assumptions", model.arch.assumptions}};
        j["setup"] = setup.to_json();
        j["framework"] = top_fw.id;
        j["precision_in_force"] = precision_in_force(setup, top_fw);
        if (!precision_reason.empty()) j["precision_reason"] = precision_reason;
        j["quantization_format"] = quantization_label(setup, top_fw);
        j["objective_in_force"] = objective_summary(setup);
        if (!serving) {
            j["flops_per_token"] = training_flops_per_token(model.arch, setup);
            j["dataset_tokens"] = tokens;
        }
        if (data.lengths) j["data"] = data.to_json(top_fw.id);
        json machines_json = json::array();
        for (size_t i = 0; i < verdicts.size(); ++i) {
            const auto& v = verdicts[i];
            json m = v.to_json();
            m["framework"] = v.framework ? v.framework->id : top_fw.id;
            if (!serving) {
                const RunCost cost = estimate_run(v.speed, *v.machine, machine_tokens[i]);
                m["run_seconds"] = cost.seconds;
                // The spread of measured/predicted on bench_throughput's held-back cases.
                m["run_seconds_likely"] = {cost.seconds * kTimeLow, cost.seconds * kTimeHigh};
                m["step_seconds"] = v.speed.step_seconds;
                m["run_cost_usd"] = cost.dollars ? json(*cost.dollars) : json(nullptr);
            }
            machines_json.push_back(m);
        }
        j["machines"] = machines_json;
        out << j.dump(2) << "\n";
        return kExitOk;
    }

    const auto& p = est.params;
    out << model.name << " (" << model.id << "): " << format_count(p.total) << " parameters, "
        << format_count(p.trainable) << " trainable";
    if (p.total > 0) out << " (" << std::fixed << std::setprecision(2) << 100.0 * double(p.trainable) / double(p.total) << " %)";
    out << "\n" << describe_setup(setup, top_fw) << "\n";
    if (data.lengths) print_data_summary(*data.lengths, data.summary(top_fw.id), setup.seq_len, out);
    for (const auto& a : model.arch.assumptions) out << "warning: " << a << "\n";
    out << "Framework for the totals below: " << top_fw.name << " [" << top_fw.id << "]\n"
        << "Precision in force: " << precision_in_force(setup, top_fw)
        << (!precision_reason.empty() ? " (" + precision_reason + ")"
            : chosen.precision          ? std::string(" (--precision)")
            : top_fw.default_precision.empty() ? std::string()
                                               : std::string(" (the framework's default)"))
        << "\n";
    if (setup.effective_quantization() != Quantization::None)
        out << "Quantized storage: " << quantization_label(setup, top_fw) << "\n";
    out << "\n";
    const bool gib = unit == ByteUnit::GiB;
    // "at peak": the component at the peak phase (they sum to the total); "max": the most it
    // holds in any phase, what its formula computes (shown where it differs).
    const auto maxima = est.component_maxima();
    out << pad("Component", 24) << pad(std::string(gib ? "GiB" : "GB") + " at peak", 12, true)
        << pad("max", 8, true) << "   how (the formula gives the max over phases)\n";
    for (Component c : kAllComponents) {
        auto it = est.components.find(c);
        auto mx = maxima.find(c);
        const std::int64_t at_peak = it == est.components.end() ? 0 : it->second;
        const std::int64_t most = mx == maxima.end() ? 0 : mx->second;
        if (at_peak == 0 && most == 0) continue;
        std::string how = est.explain(c);
        std::replace(how.begin(), how.end(), '\n', ';');
        char value[32], max_value[32] = "";
        std::snprintf(value, sizeof value, "%.2f", double(at_peak) / (gib ? kGiB : kGB));
        if (most != at_peak) std::snprintf(max_value, sizeof max_value, "%.2f", double(most) / (gib ? kGiB : kGB));
        out << pad(std::string(component_label(c)), 24) << pad(value, 12, true) << pad(max_value, 8, true) << "   "
            << how << "\n";
    }
    out << "\nPeak of allocated tensors (" << est.peak_phase << "): " << format_bytes(double(est.peak_allocated_bytes), unit, 2)
        << "\nTotal the device holds at the peak:  " << format_bytes(double(est.total_bytes), unit, 2);
    if (est.host_bytes > 0) out << "\nHost RAM beside the device:          " << format_bytes(double(est.host_bytes), unit, 2);
    out << "\n\n";
    out << pad("Machine", 34) << pad("usable", 10, true) << pad("needed", 10, true) << pad("margin", 10, true) << "  "
        << pad("verdict", 8) << pad("framework", 17);
    if (!serving) out << pad("tokens/s", 10, true) << pad("time", 11, true) << pad("likely", 14, true) << pad("cost", 9, true);
    else out << pad("decode tok/s", 13, true);
    out << "\n";
    for (size_t i = 0; i < verdicts.size(); ++i) {
        const auto& v = verdicts[i];
        out << pad(v.machine->name.substr(0, 33), 34) << pad(format_bytes(double(v.usable_bytes), unit), 10, true)
            << pad(format_bytes(double(v.needed_bytes), unit), 10, true)
            << pad(format_bytes(double(v.margin_bytes), unit), 10, true) << "  " << pad(to_string(v.fit), 8)
            << pad(v.framework ? v.framework->id : top_fw.id, 17);
        if (!serving) {
            const RunCost cost = estimate_run(v.speed, *v.machine, machine_tokens[i]);
            char tps[32], dollars[32] = "—";
            std::snprintf(tps, sizeof tps, "%.0f", v.speed.tokens_per_s);
            if (cost.dollars) std::snprintf(dollars, sizeof dollars, "$%.2f", *cost.dollars);
            out << pad(tps, 10, true) << pad(format_duration(cost.seconds), 11, true)
                << pad(likely_span(cost.seconds), 14, true) << pad(dollars, 9, true);
        } else {
            char tps[32];
            std::snprintf(tps, sizeof tps, "%.1f", v.speed.tokens_per_s);
            out << pad(tps, 13, true);
        }
        out << "\n";
        for (const auto& note : v.notes) out << "    note: " << note << "\n";
    }
    if (serving)
        out << "\nServing " << setup.serve_batch << " sequence" << (setup.serve_batch > 1 ? "s" : "") << " of up to "
            << format_count(setup.seq_len) << " tokens of context (weights, KV cache and one layer's prefill). "
            << "GB = 10^9 bytes, GiB = 2^30.\n";
    else
        out << "\nTime and cost for " << format_count(std::int64_t(tokens))
            << " training tokens (" << (data.lengths ? "--data's batches × --epochs" : "--examples × --tokens-per-example × --epochs")
            << "); \"likely\": the 10th–90th percentile of "
               "measured/predicted on the held-back cases of bench_throughput (bench/results/throughput.md). "
               "GB = 10^9 bytes, GiB = 2^30.\n";
    return kExitOk;
}

// fit --data: the batches the data forms at the solution (its micro batch or cap), for the report.
std::optional<DataSummary> fit_data_summary(const PlanData& data, TrainingSetup at, SolveFor what, const Solution& s,
                                            const std::string& framework_id) {
    if (!data.lengths || !at.trains() || s.value == 0) return std::nullopt;
    if (what == SolveFor::Batch) at.micro_batch = s.value;
    if (what == SolveFor::Seq && !s.completion_length) at.seq_len = s.value;
    return data.summary_for(at, framework_id);
}

int cmd_fit(const ProfileLibrary& lib, const Options& o, std::ostream& out, std::ostream& err) {
    const ModelChoice model = choose_model(lib, o, err);
    const TrainingSetup asked = build_setup(o, model.arch);
    const ChosenFields chosen = chosen_fields(o);
    auto what_text = o.get("--solve");
    if (!what_text) throw InputError("fit needs --solve batch|seq|rank|size");
    const SolveFor what = parse_solve_for(*what_text);
    if (!o.has("--machine")) throw InputError("fit needs --machine ID (see `wingspan machines`)");
    const FrameworkProfile* forced = explicit_framework(lib, o);
    const ByteUnit unit = parse_unit(o);
    const std::string family = o.get("--family").value_or(model.family);
    const PlanData data = plan_data(o, asked, err);
    json results = json::array();
    for (const auto* m : choose_machines(lib, o)) {
        const FrameworkProfile& fw = forced ? *forced : lib.framework_for(*m);
        const TrainingSetup setup = apply_framework_defaults(asked, fw, chosen);
        // --data: each candidate batch (or cap) is planned at the peak batch the data forms with it.
        SetupShaper at_data;
        if (data.lengths) at_data = [&](const TrainingSetup& t) { return data.at_peak_for(t, fw.id); };
        const Solution s = solve(what, model.arch, setup, *m, fw, &lib, family, at_data);
        const std::optional<DataSummary> peak = fit_data_summary(data, setup, what, s, fw.id);
        json r = {{"machine", m->id}, {"framework", fw.id}, {"precision", to_string(setup.precision)}, {"solve", *what_text}, {"value", s.value}, {"unbounded", s.unbounded},
                  {"verdict", to_string(s.at_value.fit)}, {"needed_bytes", s.at_value.needed_bytes},
                  {"usable_bytes", s.at_value.usable_bytes}};
        if (!s.model_id.empty()) r["model"] = s.model_id;
        if (s.completion_length) r["solved_for"] = "completion_length";
        if (peak) r["data"] = {{"padding", to_string(peak->padding)}, {"peak_batch_tokens", peak->peak.tokens()},
                               {"peak_batch", {{"rows", peak->peak.rows}, {"cols", peak->peak.cols}}}};
        results.push_back(r);
        if (o.has("--json")) continue;
        out << m->name << " [" << fw.id << ", " << to_string(setup.precision) << "]: ";
        if (s.value == 0) {
            out << "nothing fits — even the smallest " << *what_text << " needs "
                << format_bytes(double(s.at_value.needed_bytes), unit) << " of "
                << format_bytes(double(s.at_value.usable_bytes), unit) << "\n";
            continue;
        }
        out << "largest " << (s.completion_length ? "completion length" : *what_text) << " that fits: ";
        if (what == SolveFor::Size)
            out << format_params_short(s.value) << " parameters (largest bundled member: " << s.model_id << ")";
        else
            out << s.value;
        if (s.unbounded) out << " (search ceiling reached)";
        out << " — needs " << format_bytes(double(s.at_value.needed_bytes), unit) << " of "
            << format_bytes(double(s.at_value.usable_bytes), unit) << " (" << to_string(s.at_value.fit) << ")";
        if (peak)
            out << " at the data's peak batch " << peak->peak.rows << " × " << peak->peak.cols << " tokens (padding "
                << to_string(peak->padding) << ")";
        out << "\n";
    }
    if (o.has("--json")) out << json{{"model", model.id}, {"setup", asked.to_json()}, {"results", results}}.dump(2) << "\n";
    return kExitOk;
}

int cmd_table(const ProfileLibrary& lib, const Options& o, std::ostream& out) {
    auto id = o.get("--scenario");
    if (!id) {
        std::string ids;
        for (const auto& [k, v] : lib.scenarios()) ids += (ids.empty() ? "" : ", ") + k;
        throw InputError("table needs --scenario ID (one of: " + ids + ")");
    }
    const Table t = build_table(lib, lib.scenario(*id), parse_unit(o));
    const std::string format = o.get("--format").value_or("markdown");
    if (format == "markdown" || format == "md") out << t.to_markdown();
    else if (format == "csv") out << t.to_csv();
    else throw InputError("--format expects markdown or csv, got '" + format + "'");
    return kExitOk;
}

int cmd_runs(std::ostream& out) {   // a run that cannot be read is listed as unreadable, with the reason
    const RunStore store;
    const auto runs = store.list();
    if (runs.empty()) {
        out << "no runs yet in " << store.root().string() << " (press Train in the window)\n";
        return kExitOk;
    }
    for (const auto& dir : runs) {
        RunRecord r;
        try {
            r = RunStore::load(dir);   // bounded and typed: never blocks, never trusts a field
        } catch (const std::exception& e) {
            out << pad(dir.filename().string(), 44) << "unreadable: " << e.what() << "\n";
            continue;
        }
        const RunSummary s = r.summary();
        out << pad(dir.filename().string(), 44) << " " << pad(r.status_text().substr(0, 40), 42);
        // Each figure names its statistic: the allocator's peak of live tensors where the run had
        // allocator statistics (CUDA, MLX, wingspan-train), else the process's resident-set peak
        // (a CPU PyTorch run), compared with the prediction of the same quantity.
        if (s.measured_peak > 0 || s.measured_rss_peak <= 0)
            out << " allocated peak " << format_bytes(double(s.measured_peak)) << " measured, "
                << format_bytes(double(s.predicted_peak)) << " predicted";
        if (s.measured_rss_peak > 0)
            out << (s.measured_peak > 0 ? ";" : "") << " process peak (resident set) "
                << format_bytes(double(s.measured_rss_peak)) << " measured, " << format_bytes(double(s.predicted_total))
                << " predicted";
        for (const auto& note : r.read_notes()) out << " (partly read: " << note << ")";
        out << "\n";
    }
    return kExitOk;
}

int cmd_calibrate(ProfileLibrary& lib, const Options& o, std::ostream& out, std::ostream& err) {
    if (o.positional.empty()) throw InputError("calibrate needs one or more run folders (see `wingspan runs`)");
    std::vector<RunRecord> runs;
    for (const auto& p : o.positional) {
        try {
            runs.push_back(RunStore::load(p));
            for (const auto& note : runs.back().read_notes()) err << "wingspan: warning: " << p << ": " << note << "\n";
        } catch (const std::exception& e) {
            err << "wingspan: warning: " << e.what() << " (skipped)\n";
        }
    }
    if (runs.empty()) throw InputError("calibrate: none of the run folders could be read");
    const FrameworkProfile& base =
        lib.framework(o.get("--framework").value_or(watched_profile(o.positional.front()).value_or("libtorch-cpu")));
    const Calibration cal = calibrate(base, runs);
    const std::filesystem::path dir = ProfileLibrary::user_dir() / "frameworks";
    std::filesystem::create_directories(dir);
    const std::filesystem::path file = dir / (cal.profile.id + ".json");
    write_file_atomically(file, framework_profile_to_json(cal.profile).dump(2) + "\n");   // IoError on a full disk
    if (o.has("--json")) {
        out << json{{"framework", cal.profile.id}, {"file", file.string()}, {"runs", cal.runs},
                    {"context_bytes", cal.profile.context_bytes}, {"allocator_slack", cal.profile.allocator_slack},
                    {"allocator_slack_of", cal.profile.allocator_slack_of},
                    {"error_before_percent", cal.error_before_percent}, {"error_after_percent", cal.error_after_percent},
                    {"speed_runs", cal.speed_runs}, {"speed_scale", cal.profile.speed_scale},
                    {"speed_error_before_percent", cal.speed_error_before_percent},
                    {"speed_error_after_percent", cal.speed_error_after_percent}}
                   .dump(2)
            << "\n";
        return kExitOk;
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "calibrated %s from %zu runs: context %s, allocator slack %.1f %% of %s\n"
                  "mean error of the predicted total: %.1f %% before, %.1f %% after\n",
                  base.id.c_str(), cal.runs, format_bytes(double(cal.profile.context_bytes)).c_str(),
                  100 * cal.profile.allocator_slack, slack_base_name(cal.profile).c_str(), cal.error_before_percent,
                  cal.error_after_percent);
    out << line;
    if (cal.speed_runs > 0) {
        std::snprintf(line, sizeof line,
                      "speed from %zu runs: measured / predicted tokens/s %.2f; mean error of the predicted tokens/s: "
                      "%.1f %% before, %.1f %% after\n",
                      cal.speed_runs, cal.profile.speed_scale, cal.speed_error_before_percent,
                      cal.speed_error_after_percent);
        out << line;
    } else {
        out << "speed: no run had a predicted and a measured tokens/s (the trainer predicts its speed on the CPU only)\n";
    }
    out << "saved as framework '" << cal.profile.id << "' in " << file.string()
        << " (use it with --framework " << cal.profile.id << ")\n";
    return kExitOk;
}

int cmd_models(const ProfileLibrary& lib, std::ostream& out) {
    out << pad("id", 22) << pad("name", 26) << pad("family", 12) << pad("parameters", 18, true) << "\n";
    for (const auto& m : lib.models())
        out << pad(m.id, 22) << pad(m.name, 26) << pad(m.family, 12) << pad(format_count(m.arch.parameter_count()), 18, true)
            << "\n";
    return kExitOk;
}

int cmd_machines(const ProfileLibrary& lib, std::ostream& out) {
    // Names whole (issue 32, item 9: "CPU-only laptop, 8 GB RAM (4-core" was cut at 33 characters).
    size_t name_width = 4;
    for (const auto& m : lib.machines()) name_width = std::max(name_width, m.name.size());
    out << pad("id", 26) << pad("name", name_width + 1) << pad("memory", 12, true) << pad("usable", 12, true) << "  framework\n";
    for (const auto& m : lib.machines())
        out << pad(m.id, 26) << pad(m.name, name_width + 1) << pad(format_bytes(double(m.memory_bytes)), 12, true)
            << pad(format_bytes(double(usable_bytes(m, lib.framework_for(m)))), 12, true) << "  " << m.default_framework
            << "\n";
    return kExitOk;
}

}  // namespace

bool is_cli_command(const std::string& a) {
    static const std::set<std::string> kCommands = {"plan", "fit", "table", "models", "machines", "frameworks",
                                                    "scenarios", "runs", "calibrate", "download", "recipe", "watch",
                                                    "explain-oom",
                                                    "help", "--help", "-h", "version", "--version"};
    return kCommands.count(a) > 0;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const std::string& executable) {
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
        out << kUsage;
        return kExitOk;
    }
    if (args[0] == "version" || args[0] == "--version") {
        out << "wingspan " << WINGSPAN_CLI_VERSION << "\n";
        return kExitOk;
    }
    if (args[0] == "download") return cmd_download(args, out, err);
    try {
        if (args[0] == "recipe") return run_recipe(args, out, err, executable);
        if (args[0] == "watch") return run_watch(args, out, err, executable);
        const Options o = parse_options(args, 1);
        if (o.has("--help")) {
            out << kUsage;
            return kExitOk;
        }
        if (!o.positional.empty() && args[0] != "calibrate")
            throw InputError("unexpected argument '" + o.positional.front() + "'");
        const auto dir = o.get("--profiles").value_or(ProfileLibrary::default_dir(executable).string());
        ProfileLibrary lib = ProfileLibrary::load(dir);
        lib.add_machine(detect_this_machine());
        for (const auto& w : lib.load_user_profiles(ProfileLibrary::user_dir())) err << "wingspan: warning: " << w << "\n";
        const std::string& cmd = args[0];
        if (o.has("--from") && (cmd == "plan" || cmd == "fit" || cmd == "explain-oom"))
            return run_from_config(lib, args, out, err);
        if ((o.has("--data") || o.has("--padding")) && cmd != "plan" && cmd != "fit" && cmd != "explain-oom")
            throw InputError("--data and --padding are read by `wingspan plan`, `fit` and `explain-oom` (not by " + cmd + ")");
        if (cmd == "plan" && wants_vllm_serve(args)) return run_serve_vllm(lib, dir, args, out);
        if (cmd == "plan" && wants_llama_cpp_serve(args)) return run_serve_gguf(lib, args, out, err);
        if (cmd == "plan") return cmd_plan(lib, o, out, err);
        if (cmd == "fit") return cmd_fit(lib, o, out, err);
        if (cmd == "table") return cmd_table(lib, o, out);
        if (cmd == "models") return cmd_models(lib, out);
        if (cmd == "runs") return cmd_runs(out);
        if (cmd == "calibrate") return cmd_calibrate(lib, o, out, err);
        if (cmd == "machines") return cmd_machines(lib, out);
        if (cmd == "explain-oom") {
            ExplainOomRequest request;
            for (const char* k : {"--model", "--size", "--config", "--hf", "--model-dir"}) request.with_plan |= o.has(k);
            for (size_t i = 1; i < args.size(); ++i)
                if (args[i] != "--json") request.plan_args.push_back(args[i]);
            if (auto ms = o.all("--machine"); !ms.empty()) request.machine = &lib.machine(ms.back());
            request.framework_given = o.has("--framework");
            request.json = o.has("--json");
            return run_explain_oom(lib, request, std::cin, out, err);
        }
        if (cmd == "frameworks") return cmd_frameworks(lib, out);
        if (cmd == "scenarios") {
            for (const auto& [id, s] : lib.scenarios()) out << pad(id, 28) << s.value("title", std::string()) << "\n";
            return kExitOk;
        }
        err << "wingspan: unknown command '" << cmd << "'\n" << kUsage;
        return kExitBadInput;
    } catch (const InputError& e) {
        err << "wingspan: " << e.what() << "\n";
        return kExitBadInput;
    } catch (const json::exception& e) {
        // A value of the wrong type in a file the user gave us.
        err << "wingspan: bad input: " << e.what() << "\n";
        return kExitBadInput;
    } catch (const IoError& e) {
        err << "wingspan: " << e.what() << "\n";
        return kExitFailure;
    } catch (const std::exception& e) {
        err << "wingspan: internal error: " << e.what() << "\n";
        return kExitFailure;
    }
}

}  // namespace wingspan::cli
