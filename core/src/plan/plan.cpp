#include "wingspan/plan.hpp"
#include "wingspan/speed_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"

namespace wingspan {

using nlohmann::json;

// ---------------------------------------------------------------- plan and its file ----

Plan Plan::lesson_default() {
    Plan p;
    p.model.model_id = "llama-3.1-8b";
    p.setup.method = Method::Lora;
    p.setup.seq_len = 1024;
    p.setup.micro_batch = 1;
    p.setup.serve_batch = 1;
    p.setup.grad_checkpointing = true;
    p.setup.lora_rank = 16;
    p.setup.lora_alpha = 32;
    p.setup.precision_auto = true;   // each machine's fastest exact precision (issue 35)
    p.machines = {"rtx-4090", "mac-studio-m3-ultra-96gb", "t4", "a100-80gb", "cpu-laptop-8gb", "this-machine"};
    return p;
}

json Plan::to_json() const {
    json m = json::object();
    if (!model.config.is_null()) {
        m["config"] = model.config;
        m["name"] = model.config_name;
    } else {
        if (!model.model_id.empty()) m["id"] = model.model_id;
        if (model.target_params > 0) {
            m["family"] = model.family;
            m["params"] = model.target_params;
        }
    }
    json j = {{"format", kPlanFormat},
              {"version", 1},
              {"model", m},
              {"setup", setup.to_json()},
              {"machines", machines},
              {"dataset",
               {{"examples", dataset.examples},
                {"tokens_per_example", dataset.tokens_per_example},
                {"epochs", dataset.epochs}}}};
    if (!framework.empty()) j["framework"] = framework;
    if (!machine_frameworks.empty()) j["machine_frameworks"] = machine_frameworks;
    json c = json::array();
    if (chosen.quantization) c.push_back("quantization");
    if (chosen.grad_checkpointing) c.push_back("grad_checkpointing");
    if (chosen.lora_layers) c.push_back("lora_layers");
    j["chosen"] = c;
    if (!(llama_cpp == LlamaCppChoice{})) j["llama_cpp"] = llama_cpp.to_json();
    return j;
}

json LlamaCppChoice::to_json() const {
    json j = {{"quant", quant},           {"kv_type", kv_type},       {"n_gpu_layers", n_gpu_layers},
              {"flash_attn", flash_attn}, {"n_parallel", n_parallel}, {"n_ubatch", n_ubatch}};
    if (!gguf_file.empty()) j["gguf_file"] = gguf_file;
    return j;
}

LlamaCppChoice LlamaCppChoice::from_json(const json& j) {
    if (!j.is_object()) throw InputError("plan: 'llama_cpp' must be an object");
    LlamaCppChoice c;
    auto text = [&](const char* k, std::string& out, const std::vector<std::string>& allowed) {
        if (!j.contains(k)) return;
        const bool known = j[k].is_string() && (allowed.empty() || std::find(allowed.begin(), allowed.end(), j[k].get<std::string>()) != allowed.end());
        if (!known || j[k].get_ref<const std::string&>().size() > 4096) {
            std::string list;
            for (const auto& a : allowed) list += (list.empty() ? "" : "|") + a;
            throw InputError(std::string("plan llama_cpp: '") + k + "' must be " + (allowed.empty() ? "a path" : list));
        }
        out = j[k].get<std::string>();
    };
    auto integer = [&](const char* k, std::int64_t& out, std::int64_t lo, std::int64_t hi) {
        if (!j.contains(k)) return;
        if (!j[k].is_number_integer() || j[k].get<std::int64_t>() < lo || j[k].get<std::int64_t>() > hi)
            throw InputError(std::string("plan llama_cpp: '") + k + "' must be an integer from " + std::to_string(lo) + " to " +
                             std::to_string(hi));
        out = j[k].get<std::int64_t>();
    };
    text("quant", c.quant, {"q4_k_m", "q5_k_m", "q6_k", "q8_0", "q4_0", "f16", "bf16", "f32"});
    text("gguf_file", c.gguf_file, {});
    text("kv_type", c.kv_type, {"f16", "q8_0", "q4_0"});
    integer("n_gpu_layers", c.n_gpu_layers, -1, 4096);
    integer("n_parallel", c.n_parallel, 1, 256);
    integer("n_ubatch", c.n_ubatch, 1, 65536);
    if (j.contains("flash_attn")) {
        if (!j["flash_attn"].is_boolean()) throw InputError("plan llama_cpp: 'flash_attn' must be true or false");
        c.flash_attn = j["flash_attn"].get<bool>();
    }
    return c;
}

Plan Plan::from_json(const json& j) {
    if (!j.is_object()) throw InputError("plan: expected a JSON object");
    if (j.contains("format") && j["format"] != kPlanFormat)
        throw InputError("plan: 'format' is " + j["format"].dump() + ", expected \"" + kPlanFormat + "\"");
    if (j.contains("version") && (!j["version"].is_number_integer() || j["version"].get<int>() > 1))
        throw InputError("plan: 'version' " + j["version"].dump() + " is newer than this Wingspan understands (1)");
    Plan p;
    p.machines.clear();
    if (!j.contains("model") || !j["model"].is_object())
        throw InputError("plan: 'model' is required: {\"id\": \"llama-3.1-8b\"}, {\"family\": ..., \"params\": ...} "
                         "or {\"config\": {config.json}}");
    const json& m = j["model"];
    auto string_field = [](const json& o, const char* k, const std::string& where) -> std::string {
        if (!o.contains(k)) return {};
        if (!o[k].is_string()) throw InputError(where + ": '" + k + "' must be a string");
        return o[k].get<std::string>();
    };
    if (m.contains("config")) {
        if (!m["config"].is_object()) throw InputError("plan model: 'config' must be a config.json object");
        p.model.config = m["config"];
        p.model.config_name = string_field(m, "name", "plan model");
        if (p.model.config_name.empty()) p.model.config_name = "imported config";
    } else {
        p.model.model_id = string_field(m, "id", "plan model");
        if (m.contains("params")) {
            if (!m["params"].is_number_integer() || m["params"].get<std::int64_t>() <= 0)
                throw InputError("plan model: 'params' must be a positive integer");
            p.model.target_params = m["params"].get<std::int64_t>();
            p.model.family = string_field(m, "family", "plan model");
            if (p.model.family.empty()) throw InputError("plan model: 'params' needs a 'family'");
        }
        if (p.model.model_id.empty() && p.model.target_params == 0)
            throw InputError("plan model: give 'id', or 'family' and 'params', or 'config'");
    }
    if (j.contains("setup")) p.setup = TrainingSetup::from_json(j["setup"]);
    auto id_text = [](const json& v, const std::string& what) {
        if (!v.is_string()) throw InputError("plan: " + what + " must be a machine or framework id (a string)");
        if (v.get_ref<const std::string&>().size() > kMaxPlanIdLength)
            throw InputError("plan: " + what + " is longer than " + std::to_string(kMaxPlanIdLength) + " characters");
        return v.get<std::string>();
    };
    if (j.contains("machines")) {
        if (!j["machines"].is_array()) throw InputError("plan: 'machines' must be a list of machine ids");
        if (j["machines"].size() > kMaxPlanMachines)
            throw InputError("plan: 'machines' lists " + std::to_string(j["machines"].size()) + " machines; a plan holds at most " +
                             std::to_string(kMaxPlanMachines));
        for (const auto& id : j["machines"]) p.machines.push_back(id_text(id, "each of 'machines'"));
    }
    if (j.contains("dataset")) {
        const json& d = j["dataset"];
        if (!d.is_object()) throw InputError("plan: 'dataset' must be an object");
        auto positive = [&](const char* k, std::int64_t& out) {
            if (!d.contains(k)) return;
            if (!d[k].is_number_integer() || d[k].get<std::int64_t>() < 1)
                throw InputError(std::string("plan dataset: '") + k + "' must be a positive integer");
            out = d[k].get<std::int64_t>();
        };
        positive("examples", p.dataset.examples);
        positive("tokens_per_example", p.dataset.tokens_per_example);
        positive("epochs", p.dataset.epochs);
        checked_dataset_tokens(p.dataset.examples, p.dataset.tokens_per_example, p.dataset.epochs, "plan dataset");
    }
    p.framework = string_field(j, "framework", "plan");
    if (j.contains("llama_cpp")) p.llama_cpp = LlamaCppChoice::from_json(j["llama_cpp"]);
    // "chosen": the fields the user set. A plan written before it existed chose all it says.
    p.chosen = ChosenFields{false, true, true, true};
    if (j.contains("chosen")) {
        if (!j["chosen"].is_array()) throw InputError("plan: 'chosen' must be a list of field names");
        p.chosen = ChosenFields{};
        for (const auto& f : j["chosen"]) {
            const std::string name = f.is_string() ? f.get<std::string>() : std::string();
            if (name == "quantization") p.chosen.quantization = true;
            else if (name == "grad_checkpointing") p.chosen.grad_checkpointing = true;
            else if (name == "lora_layers") p.chosen.lora_layers = true;
            else throw InputError("plan: 'chosen' holds " + f.dump() + "; known: quantization, grad_checkpointing, lora_layers");
        }
    }
    if (j.contains("machine_frameworks")) {
        const json& mf = j["machine_frameworks"];
        if (!mf.is_object()) throw InputError("plan: 'machine_frameworks' must be an object of machine id → framework id");
        if (mf.size() > kMaxPlanMachineFrameworks)
            throw InputError("plan: 'machine_frameworks' lists " + std::to_string(mf.size()) + " machines; a plan holds at most " +
                             std::to_string(kMaxPlanMachineFrameworks));
        for (const auto& [machine, fw] : mf.items()) {
            if (machine.size() > kMaxPlanIdLength) throw InputError("plan: a machine id in 'machine_frameworks' is too long");
            const std::string id = id_text(fw, "machine_frameworks['" + machine + "']");
            if (!id.empty()) p.machine_frameworks[machine] = id;
        }
    }
    return p;
}

Plan read_plan_file(const std::string& path) {
    const json j = read_untrusted_json_file(path, kMaxPlanFileBytes);   // a plan is a few KB; the cap says so clearly
    try {
        return Plan::from_json(j);
    } catch (const InputError& e) {
        throw InputError(path + ": " + e.what());
    }
}

void write_plan_file(const Plan& plan, const std::string& path) {
    try {
        write_file_atomically(path, plan.to_json().dump(2) + "\n");
    } catch (const IoError& e) {
        throw InputError(e.what());   // callers show InputError's message
    }
}

// ------------------------------------------------------------------------- models ----

std::int64_t FamilyRange::min_params() const {
    return members.empty() ? 0 : members.front()->arch.parameter_count();
}
std::int64_t FamilyRange::max_params() const {
    return members.empty() ? 0 : members.back()->arch.parameter_count();
}

FamilyRange family_range(const ProfileLibrary& lib, const std::string& family) {
    FamilyRange r;
    r.family = family;
    for (const auto* m : lib.family(family))
        if (!m->arch.is_moe()) r.members.push_back(m);
    return r;
}

ResolvedModel resolve_model(const ProfileLibrary& lib, const ModelChoice& c) {
    ResolvedModel r;
    if (!c.config.is_null()) {
        r.id = "imported";
        r.name = c.config_name.empty() ? "Imported config" : c.config_name;
        r.family = "imported";
        r.arch = Architecture::from_hf_config(c.config);
        return r;
    }
    if (c.target_params > 0) {
        const FamilyRange range = family_range(lib, c.family);
        if (range.members.empty()) throw InputError("no bundled models in family '" + c.family + "'");
        std::vector<Architecture> archs;
        for (const auto* m : range.members) archs.push_back(m->arch);
        r.arch = interpolate_family(archs, c.target_params);
        r.family = c.family;
        const std::int64_t n = r.arch.parameter_count();
        for (const auto* m : range.members)
            if (m->arch.parameter_count() == n) {
                r.id = m->id;
                r.name = m->name;
                return r;
            }
        r.interpolated = true;
        r.id = c.family + "-" + format_params_short(n);
        r.name = c.family + " family at " + format_params_short(n);
        return r;
    }
    const ModelProfile& m = lib.model(c.model_id);
    r.id = m.id;
    r.name = m.name;
    r.family = m.family;
    r.arch = m.arch;
    return r;
}

// --------------------------------------------------------------------- evaluation ----

const FrameworkProfile& reference_framework(const ProfileLibrary& lib, const Plan& plan) {
    return lib.framework(plan.framework.empty() ? std::string("pytorch-cuda") : plan.framework);
}

const FrameworkProfile& framework_for(const ProfileLibrary& lib, const Plan& plan, const MachineProfile& m) {
    if (!plan.framework.empty()) return lib.framework(plan.framework);
    if (auto it = plan.machine_frameworks.find(m.id); it != plan.machine_frameworks.end()) return lib.framework(it->second);
    return lib.framework_for(m);
}

ChosenFields chosen_fields(const Plan& plan) {
    ChosenFields c = plan.chosen;
    c.precision = !plan.setup.precision_auto;   // auto leaves it to the framework, then the machine
    return c;
}

TrainingSetup setup_on(const TrainingSetup& setup, const FrameworkProfile& framework, const Plan& plan) {
    return apply_framework_defaults(setup, framework, chosen_fields(plan));
}

Evaluation evaluate_plan(const ProfileLibrary& lib, const Plan& plan) {
    Evaluation e;
    try {
        e.model = resolve_model(lib, plan.model);
        e.setup = plan.setup;
        e.setup.validate(e.model.arch);
        e.reference_framework = &reference_framework(lib, plan);
        e.reference = estimate_memory(e.model.arch, e.setup, *e.reference_framework);
        e.verdicts.reserve(plan.machines.size());
        for (const auto& id : plan.machines) {
            const MachineProfile* m = nullptr;
            for (const auto& candidate : lib.machines())
                if (candidate.id == id) m = &candidate;
            if (!m) {
                e.missing_machines.push_back(id);
                continue;
            }
            const FrameworkProfile& fw = framework_for(lib, plan, *m);
            e.verdicts.push_back(evaluate(e.model.arch, setup_on(e.setup, fw, plan), *m, fw));
        }
    } catch (const std::exception& ex) {
        e.verdicts.clear();
        e.error = ex.what();
    }
    return e;
}

// ------------------------------------------------------------------------- tables ----

namespace {

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

TableCell bytes_cell(double bytes, ByteUnit unit) { return {format_bytes(bytes, unit), bytes, {}}; }
TableCell text_cell(std::string s) { return {std::move(s), {}, {}}; }

}  // namespace

std::string unit_name(ByteUnit u) { return u == ByteUnit::GiB ? "GiB" : "GB"; }
double unit_bytes(ByteUnit u) { return u == ByteUnit::GiB ? kGiB : kGB; }

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "—";
    if (seconds < 120) return fixed(seconds, 0) + " s";
    if (seconds < 7200) return fixed(seconds / 60, 0) + " min";
    if (seconds < 3 * 86400) return fixed(seconds / 3600, 1) + " h";
    return fixed(seconds / 86400, 1) + " days";
}

std::string method_label(Method m) {
    switch (m) {
        case Method::Full: return "Full fine-tune";
        case Method::Lora: return "LoRA";
        case Method::Qlora: return "QLoRA";
        case Method::Serve: return "Serve";
    }
    return "?";
}

std::string short_machine_name(const MachineProfile& m) {
    std::string n = m.name;
    for (const char* prefix : {"NVIDIA GeForce ", "NVIDIA Tesla ", "NVIDIA ", "Apple "})
        if (n.rfind(prefix, 0) == 0) {
            n = n.substr(std::string(prefix).size());
            break;
        }
    // "Mac Studio M3 Ultra (80-core GPU, 96 GB)" -> "Mac Studio M3 Ultra 96 GB": the memory
    // names which configuration it is (the same chip ships with 96 and 256 GB); the rest goes.
    // "This machine (2 cores, 23.4 GiB RAM)" -> "This machine".
    if (auto paren = n.find(" ("); paren != std::string::npos) {
        std::string inside = n.substr(paren + 2);
        if (auto close = inside.rfind(')'); close != std::string::npos) inside.resize(close);
        const auto comma = inside.rfind(", ");
        const std::string last = comma == std::string::npos ? inside : inside.substr(comma + 2);
        const bool memory = last.size() > 3 && last.compare(last.size() - 3, 3, " GB") == 0 &&
                            std::all_of(last.begin(), last.end() - 3, [](char c) { return c >= '0' && c <= '9'; });
        n = n.substr(0, paren) + (memory ? " " + last : "");
    }
    for (const char* suffix : {"-SXM4-80GB", "-SXM4-40GB"})
        if (auto pos = n.find(suffix); pos != std::string::npos)
            n = n.substr(0, pos) + " " + std::string(suffix).substr(6);
    if (auto pos = n.find(" 80GB HBM3"); pos != std::string::npos) n = n.substr(0, pos);
    if (auto pos = n.find("-PCIE-16GB"); pos != std::string::npos) n = n.substr(0, pos);
    if (auto comma = n.find(", "); comma != std::string::npos) n = n.substr(0, comma);
    return n;
}

std::string describe_setup(const TrainingSetup& s) {
    std::ostringstream d;
    d << method_label(s.method);
    if (s.method == Method::Lora || s.method == Method::Qlora) d << " r" << s.lora_rank;
    if (s.effective_quantization() != Quantization::None) d << " (" << to_string(s.effective_quantization()) << ")";
    d << " · " << (s.precision_auto ? "auto precision" : to_string(s.precision));
    if (s.trains()) d << " · " << to_string(s.optimizer);
    d << " · seq " << format_count(s.seq_len) << " × batch " << (s.trains() ? s.micro_batch : s.serve_batch);
    if (s.trains() && s.grad_accum > 1) d << " × accum " << s.grad_accum;
    if (s.trains()) d << " · checkpointing " << (s.grad_checkpointing ? "on" : "off");
    d << " · " << to_string(s.attention);
    if (s.devices > 1) d << " · " << s.devices << " devices " << to_string(s.sharding);
    if (s.offload) d << " · offload";
    return d.str();
}

std::string describe_setup_detailed(const TrainingSetup& s, const FrameworkProfile& fw) {
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

std::string verdict_text(const MachineVerdict& v, ByteUnit unit) {
    const double margin = double(v.margin_bytes);
    if (v.fit == Fit::No) {
        if (margin >= 0) return "does not fit (host RAM)";
        return "does not fit · short " + format_bytes(-margin, unit);
    }
    return std::string(v.fit == Fit::Tight ? "tight" : "fits") + " · " + format_bytes(margin, unit) + " free";
}

std::string verdict_mark_text(const MachineVerdict& v, ByteUnit unit) {
    const double margin = double(v.margin_bytes);
    switch (v.fit) {
        case Fit::Fits: return "✓ " + format_bytes(margin, unit) + " free";
        case Fit::Tight: return "! tight, " + format_bytes(margin, unit) + " free";
        case Fit::No: break;
    }
    return margin < 0 ? "✗ short " + format_bytes(-margin, unit) : "✗ host RAM";
}

std::vector<std::pair<std::string, TrainingSetup>> method_variants(const TrainingSetup& base) {
    std::vector<std::pair<std::string, TrainingSetup>> out;
    TrainingSetup full = base, lora = base, qlora = base;
    full.method = Method::Full;
    full.quantization = Quantization::None;
    lora.method = Method::Lora;
    lora.quantization = Quantization::None;
    qlora.method = Method::Qlora;
    if (base.method != Method::Qlora) qlora.quantization = Quantization::None;   // NF4 + double quant
    out.emplace_back("Full fine-tune", full);
    out.emplace_back("LoRA (16-bit base)", lora);
    out.emplace_back("QLoRA (4-bit base)", qlora);
    return out;
}

Table machine_table(const ProfileLibrary& lib, const Plan& plan, const Evaluation& eval, ByteUnit unit) {
    Table t;
    t.id = "which-machine";
    t.title = "Which machine trains what: " + eval.model.name;
    t.headers = {"Machine", "Framework", "Needs", "Usable", "Verdict", "Margin", "Max batch",
                 "Max sequence", "Tokens/s", "Time", "Cost"};
    const double tokens = plan.dataset.tokens();
    t.caption = describe_setup(eval.setup) + ". Time and cost for " + format_count(std::int64_t(tokens)) +
                " tokens (" + format_count(plan.dataset.examples) + " examples × " +
                format_count(plan.dataset.tokens_per_example) + " tokens × " + std::to_string(plan.dataset.epochs) +
                " epochs). " + unit_name(unit) + (unit == ByteUnit::GiB ? " = 2^30 bytes." : " = 10^9 bytes.");
    if (!eval.ok()) return t;
    for (const auto& v : eval.verdicts) {
        const FrameworkProfile& fw = *v.framework;
        std::vector<TableCell> row;
        row.push_back(text_cell(short_machine_name(*v.machine)));
        row.push_back(text_cell(fw.name.substr(0, fw.name.find(" ("))));
        row.push_back(bytes_cell(double(v.needed_bytes), unit));
        row.push_back(bytes_cell(double(v.usable_bytes), unit));
        row.push_back({v.fit == Fit::No ? "does not fit" : to_string(v.fit), double(v.margin_bytes), v.fit});
        row.push_back(bytes_cell(double(v.margin_bytes), unit));
        for (SolveFor what : {SolveFor::Batch, SolveFor::Seq}) {
            const Solution s = solve(what, eval.model.arch, setup_on(eval.setup, fw, plan), *v.machine, fw, &lib, eval.model.family);
            std::string text = s.value == 0 ? "none fits" : format_count(s.value);
            if (s.unbounded) text = "≥ " + text;
            row.push_back({text, double(s.value), {}});
        }
        row.push_back({fixed(v.speed.tokens_per_s, v.speed.tokens_per_s < 10 ? 1 : 0), v.speed.tokens_per_s, {}});
        const RunCost cost = estimate_run(v.speed, *v.machine, tokens);
        // Every time and cost with its likely range (bench_throughput's held-back spread, speed_model.hpp).
        row.push_back({likely_range(cost.seconds), std::isfinite(cost.seconds) ? std::optional<double>(cost.seconds)
                                                                               : std::nullopt, {}});
        if (cost.dollars) {
            const int digits = *cost.dollars < 10 ? 2 : 0;
            row.push_back({"$" + fixed(*cost.dollars, digits) + ", likely $" + fixed(*cost.dollars * kTimeLow, digits) + "–" +
                               fixed(*cost.dollars * kTimeHigh, digits),
                           *cost.dollars, {}});
        }
        else row.push_back(text_cell("—"));
        t.rows.push_back(std::move(row));
    }
    return t;
}

Table method_table(const ProfileLibrary& lib, const Plan& plan, const Evaluation& eval, ByteUnit unit) {
    Table t;
    t.id = "methods";
    t.title = "Full vs LoRA vs QLoRA: " + eval.model.name;
    if (!eval.ok()) return t;
    const FrameworkProfile& ref = *eval.reference_framework;
    struct Row {
        std::string label;
        TrainingSetup setup;
        MemoryEstimate est;
    };
    std::vector<Row> rows;
    for (auto& [label, setup] : method_variants(eval.setup)) {
        Row r{label, setup, {}};
        try {
            setup.validate(eval.model.arch);
            r.est = estimate_memory(eval.model.arch, setup, ref);
        } catch (const std::exception&) {
            continue;
        }
        rows.push_back(std::move(r));
    }
    std::vector<Component> shown;
    for (Component c : kAllComponents)
        for (const auto& r : rows) {
            auto it = r.est.components.find(c);
            if (it != r.est.components.end() && it->second > 0) {
                shown.push_back(c);
                break;
            }
        }
    t.headers = {"Method", "Trainable parameters"};
    for (Component c : shown) t.headers.emplace_back(component_label(c));
    t.headers.push_back("Total");
    for (const auto& v : eval.verdicts) t.headers.push_back(short_machine_name(*v.machine));
    for (const auto& r : rows) {
        std::vector<TableCell> row{text_cell(r.label),
                                   {format_count(r.est.params.trainable), double(r.est.params.trainable), {}}};
        for (Component c : shown) {
            auto it = r.est.components.find(c);
            const double b = it == r.est.components.end() ? 0.0 : double(it->second);
            row.push_back(b > 0 ? bytes_cell(b, unit) : TableCell{"—", 0.0, {}});
        }
        row.push_back(bytes_cell(double(r.est.total_bytes), unit));
        for (const auto& v : eval.verdicts) {
            const FrameworkProfile& fw = framework_for(lib, plan, *v.machine);
            const MachineVerdict mv = evaluate(eval.model.arch, setup_on(r.setup, fw, plan), *v.machine, fw);
            row.push_back({verdict_mark_text(mv, unit), double(mv.margin_bytes), mv.fit});
        }
        t.rows.push_back(std::move(row));
    }
    t.caption = describe_setup(eval.setup) + "; components at each method's peak phase with " + ref.name +
                "; verdicts use each machine's own framework.";
    return t;
}

json size_scenario(const ProfileLibrary& lib, const Plan& plan) {
    json s;
    if (lib.scenarios().count("lesson-sizes") && lib.scenario("lesson-sizes").value("kind", "") == "size_table") {
        s = lib.scenario("lesson-sizes");
    } else {
        s = {{"id", "sizes"}, {"kind", "size_table"}, {"row_header", "Model size"}};
        json rows = json::array();
        for (const char* size : {"1B", "4B", "8B", "14B", "32B", "70B"}) {
            const ModelProfile& m = lib.nearest_model(parse_param_count(size));
            rows.push_back({{"label", size}, {"model", m.id}});
        }
        s["rows"] = rows;
        s["columns"] = json::array({{{"label", "Full fine-tune"}, {"setup", {{"method", "full"}}}},
                                    {{"label", "LoRA (16-bit)"}, {"setup", {{"method", "lora"}}}},
                                    {{"label", "QLoRA (4-bit)"}, {"setup", {{"method", "qlora"}}}}});
    }
    // This plan's settings become the defaults; each column still picks its method.
    json defaults = s.value("defaults", json::object());
    json mine = plan.setup.to_json();
    mine.erase("method");
    mine.erase("quantization");
    for (auto& [k, v] : mine.items()) defaults[k] = v;
    s["defaults"] = defaults;
    if (!plan.framework.empty()) s["framework"] = plan.framework;
    s["title"] = "Memory by model size and method (this plan's settings)";
    TrainingSetup shown = plan.setup;
    s["caption"] = "Each cell is what the device holds at the peak with " +
                   (s.contains("framework") ? lib.framework(s["framework"].get<std::string>()).name
                                            : lib.framework("pytorch-cuda").name) +
                   ": seq " + format_count(shown.seq_len) + " × batch " + std::to_string(shown.micro_batch) +
                   ", checkpointing " + (shown.grad_checkpointing ? "on" : "off") + ", " +
                   to_string(shown.optimizer) + ", LoRA r" + std::to_string(shown.lora_rank) + ".";
    return s;
}

Table size_table(const ProfileLibrary& lib, const Plan& plan, ByteUnit unit) {
    return build_table(lib, size_scenario(lib, plan), unit);
}

}  // namespace wingspan
