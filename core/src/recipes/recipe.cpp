#include "wingspan/recipe.hpp"
#include "wingspan/user_dirs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "wingspan/errors.hpp"
#include "wingspan/framework_spec.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/quoting.hpp"
#include "wingspan/safe_file.hpp"
#include "memory/objective_terms.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::recipe {

namespace {

// Recipe data is a file a user may edit (resources/recipes): read as any untrusted JSON.
json read_json(const fs::path& file) { return read_untrusted_json_file(file); }

std::string read_text(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("cannot read recipe template '" + file.string() + "'");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

bool truthy(const std::string& v) { return !v.empty() && v != "false" && v != "False" && v != "0"; }

// The plan's value of each knob a framework's values.json can map, as the lookup key.
std::map<std::string, std::string> knob_keys(const RecipeInput& in) {
    const TrainingSetup& s = in.setup;
    size_t mlp = 0;
    for (LinearRole r : {LinearRole::Gate, LinearRole::Up, LinearRole::Down}) mlp += s.lora_targets.count(r);
    return {{"method", to_string(s.method)},
            {"precision", to_string(s.precision)},
            {"optimizer", to_string(s.optimizer)},
            {"schedule", in.training.schedule},
            {"attention", to_string(s.attention)},
            {"quantization", s.method == Method::Full ? "none" : to_string(s.effective_quantization())},
            {"grad_checkpointing", s.grad_checkpointing ? "true" : "false"},
            {"grad_accum", std::to_string(s.grad_accum)},
            {"devices", std::to_string(s.devices)},
            {"offload", s.offload ? "true" : "false"},
            {"optimizer_in_backward", s.optimizer_in_backward ? "true" : "false"},
            {"activation_offload", s.activation_offload ? "true" : "false"},
            {"compile", s.compile ? "true" : "false"},
            {"train_embeddings", s.train_embeddings ? "true" : "false"},
            {"loss_chunk", s.loss_chunk_tokens > 0 ? "chunked" : "none"},
            {"max_steps", in.training.max_steps > 0 ? "set" : "none"},
            {"lora_layers", s.lora_layers > 0 && s.lora_layers < in.num_layers ? "last" : "all"},
            {"objective", to_string(s.objective.kind)},
            // A preference plan's prompt and completion given apart, or one sequence (GRPO's are its own keys).
            {"lengths", sequence_from_lengths(s) && s.objective.kind != Objective::Grpo ? "split" : "total"},
            {"reference", std::string(to_string(s.objective.kind)) + "/" + to_string(resolved_reference(s))},
            {"mlp_targets", s.method == Method::Full ? "all" : mlp == 0 ? "none" : mlp == 3 ? "all" : "partial"}};
}

// A framework's spelling of one knob value: "<method>:<value>", then "<value>", then "*".
const json* lookup(const json& table, const std::string& method, const std::string& value) {
    for (const std::string& key : {method + ":" + value, value, std::string("*")})
        if (auto it = table.find(key); it != table.end()) return &*it;
    return nullptr;
}

void apply_entry(const std::string& prefix, const json& entry, std::map<std::string, std::string>& vars,
                 std::vector<std::string>& notes) {
    if (entry.is_string()) {
        vars[prefix] = entry.get<std::string>();
        return;
    }
    if (!entry.is_object()) throw InputError("recipe data: '" + prefix + "' must be a string or an object");
    if (entry.contains("value")) vars[prefix] = entry["value"].is_string() ? entry["value"].get<std::string>() : entry["value"].dump();
    if (auto v = entry.find("vars"); v != entry.end())
        for (const auto& [k, x] : v->items()) vars[prefix + "_" + k] = x.is_string() ? x.get<std::string>() : x.dump();
    if (auto n = entry.find("instead"); n != entry.end()) notes.push_back(n->get<std::string>());
}

// ["a", "b"]: a list literal in Python, YAML and JSON alike (their double-quoted escapes agree).
std::string flow_list(const std::vector<std::string>& items) {
    std::string s = "[";
    for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + quoting::yaml_string(items[i]);
    return s + "]";
}

// Values that come from the user, a model or a file name: written into code and configs only
// through a quoting filter ({{py:model}}, ...); render_template refuses them bare there.
const std::set<std::string> kFreeText = {"model", "model_label", "model_type", "data_path", "data_dir",
                                         "data_file", "output_dir", "profile"};

// Whether a framework's values.json has a trainer for the objective: its knobs.objective table
// names it ("dpo", or "<method>:dpo" for one method). A framework without the table writes SFT only.
bool has_objective(const json& values, const std::string& objective) {
    auto knobs = values.find("knobs");
    if (knobs == values.end()) return objective == "sft";
    auto table = knobs->find("objective");
    if (table == knobs->end()) return objective == "sft";
    for (const auto& [key, entry] : table->items()) {
        const size_t colon = key.find(':');
        if ((colon == std::string::npos ? key : key.substr(colon + 1)) == objective) return true;
    }
    return false;
}

// The objective's values the templates use: which trainer, its lengths, the reference, GRPO's knobs.
void add_objective_vars(const TrainingSetup& s, const std::function<std::string(bool)>& flag,
                        std::map<std::string, std::string>& vars) {
    const ObjectiveSetup& o = s.objective;
    const ObjectiveShape sh = objective_shape(s);
    const Reference ref = resolved_reference(s);
    vars["objective"] = to_string(o.kind);
    for (Objective k : {Objective::Sft, Objective::Dpo, Objective::Orpo, Objective::Simpo, Objective::Kto, Objective::Grpo})
        vars[std::string("is_") + to_string(k)] = flag(o.kind == k);
    vars["is_pairs"] = flag(o.kind == Objective::Dpo || o.kind == Objective::Orpo || o.kind == Objective::Simpo);
    vars["is_preference"] = flag(o.kind != Objective::Sft && o.kind != Objective::Grpo);
    vars["has_lengths"] = flag(sequence_from_lengths(s));
    vars["objective_seq"] = std::to_string(sh.seq);   // prompt + completion, or the plan's sequence
    vars["prompt_len"] = std::to_string(sh.prompt);
    vars["completion_len"] = std::to_string(sh.completion);
    vars["generations"] = std::to_string(o.generations);
    // GRPO: TRL's per_device_train_batch_size counts completions (grpo_config.py,
    // generation_batch_size); the plan's micro batch counts prompts, each with G completions.
    vars["completion_rows"] = std::to_string(s.micro_batch * o.generations);
    vars["grpo_beta"] = number(o.beta);
    vars["reference"] = to_string(ref);
    vars["precompute_ref"] = flag(ref == Reference::Precomputed);
    vars["ref_copy_of_adapter"] = flag(ref == Reference::Copy && s.method != Method::Full);
    vars["use_vllm"] = flag(o.vllm_share > 0);
    vars["vllm_share"] = number(o.vllm_share);
}

std::string plan_summary(const RecipeInput& in) {
    const TrainingSetup& s = in.setup;
    std::ostringstream d;
    d << to_string(s.method);
    if (s.method != Method::Full) d << " r" << s.lora_rank << " alpha " << number(s.lora_alpha);
    if (s.method == Method::Qlora) d << " " << to_string(s.effective_quantization());
    d << ", " << to_string(s.precision) << ", " << to_string(s.optimizer) << ", seq " << s.seq_len << " x batch "
      << s.micro_batch << " x accum " << s.grad_accum << ", checkpointing " << (s.grad_checkpointing ? "on" : "off")
      << ", attention " << to_string(s.attention);
    return d.str();
}

}  // namespace

fs::path default_dir(const fs::path& executable) {
    if (const char* env = std::getenv("WINGSPAN_RECIPES"); env && *env) return env;
    std::error_code ec;
    for (const fs::path& candidate : bundled_data_dirs(executable, "recipes", "resources/recipes"))
        if (fs::is_regular_file(candidate / "frameworks.json", ec)) return fs::weakly_canonical(candidate, ec);
    return "resources/recipes";   // the current folder's: a checkout's root
}

std::vector<FrameworkInfo> frameworks(const fs::path& dir) {
    std::vector<FrameworkInfo> out;
    const json list = read_json(dir / "frameworks.json");   // kept alive: the loop walks into it
    for (const auto& f : list.at("frameworks"))
        out.push_back({f.at("id").get<std::string>(), f.at("name").get<std::string>(), f.at("profile").get<std::string>()});
    return out;
}

FrameworkInfo framework(const fs::path& dir, const std::string& id) {
    std::vector<std::string> ids;
    for (const auto& f : frameworks(dir)) {
        if (f.id == id) return f;
        ids.push_back(f.id);
    }
    std::string list;
    for (const auto& i : ids) list += (list.empty() ? "" : ", ") + i;
    throw InputError("no recipe for framework '" + id + "' (did you mean " + closest_names(id, ids, 1).front() +
                     "?); recipes exist for: " + list);
}

std::vector<std::string> frameworks_for_objective(const fs::path& dir, const std::string& objective) {
    std::vector<std::string> out;
    for (const auto& f : frameworks(dir))
        if (has_objective(read_json(dir / f.id / "values.json"), objective)) out.push_back(f.id);
    return out;
}

const FrameworkProfile& profile_for(const ProfileLibrary& lib, const FrameworkInfo& fw) {
    for (const auto& p : lib.frameworks())
        if (p.id == fw.id) return lib.calibrated_or_bundled(fw.id);
    return lib.calibrated_or_bundled(fw.profile);
}

json prediction_json(const std::string& model_id, const std::string& model_name, const std::string& family,
                     const Architecture& arch, const TrainingSetup& setup, const FrameworkProfile& profile) {
    const MemoryEstimate est = estimate_memory(arch, setup, profile);
    json j = est.to_json();
    j["model"] = {{"id", model_id}, {"name", model_name}, {"family", family}, {"config", arch.to_hf_config()}};
    j["setup"] = setup.to_json();
    j["framework"] = framework_spec(profile);
    return j;
}

namespace {

// Sections nest at most this deep (the templates use 2): a hostile template cannot recurse the
// stack away.
constexpr int kMaxSectionDepth = 32;

std::string render_nested(const std::string& text, const std::map<std::string, std::string>& vars,
                          const std::set<std::string>& quoted_only, int depth) {
    if (depth > kMaxSectionDepth)
        throw InputError("recipe template: sections nest deeper than " + std::to_string(kMaxSectionDepth) + " levels");
    auto value_of = [&](const std::string& name) -> const std::string& {
        auto it = vars.find(name);
        if (it == vars.end()) throw InputError("recipe template uses an unknown value {{" + name + "}}");
        return it->second;
    };
    // {{lang:name}}: the value quoted for the language it lands in (quoting.hpp).
    auto substitute = [&](const std::string& tag) -> std::string {
        const size_t colon = tag.find(':');
        if (colon == std::string::npos) {
            if (quoted_only.count(tag))
                throw InputError("recipe template writes {{" + tag + "}} unquoted; free text goes through its language's quoting "
                                 "({{py:" + tag + "}}, {{yaml:" + tag + "}}, {{json:" + tag + "}}, {{sh:" + tag + "}}, {{line:" + tag + "}})");
            return value_of(tag);
        }
        const std::string lang = tag.substr(0, colon);
        const std::string& v = value_of(tag.substr(colon + 1));
        if (lang == "py") return quoting::python_string(v);
        if (lang == "yaml") return quoting::yaml_string(v);
        if (lang == "json") return quoting::json_string(v);
        if (lang == "sh") return quoting::shell_word(v);
        if (lang == "line") return quoting::one_line(v);
        throw InputError("recipe template: unknown quoting '" + lang + "' in {{" + tag + "}} (py, yaml, json, sh or line)");
    };
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t open = text.find("{{", pos);
        if (open == std::string::npos) {
            out.append(text, pos, std::string::npos);
            break;
        }
        out.append(text, pos, open - pos);
        const size_t close = text.find("}}", open);
        if (close == std::string::npos) throw InputError("recipe template: '{{' without '}}'");
        const std::string tag = text.substr(open + 2, close - open - 2);
        pos = close + 2;
        if (tag.empty()) throw InputError("recipe template: empty {{}}");
        if (tag[0] == '#' || tag[0] == '^') {
            const std::string name = tag.substr(1);
            const std::string end = "{{/" + name + "}}";
            // A tag alone on its line takes its line with it (the template stays readable and
            // the output has no blank lines where sections were).
            const bool open_alone = (open == 0 || text[open - 1] == '\n') && pos < text.size() && text[pos] == '\n';
            const size_t body = open_alone ? pos + 1 : pos;
            // Sections of one name do not nest, so the first end tag closes this one.
            const size_t stop = text.find(end, body);
            if (stop == std::string::npos) throw InputError("recipe template: {{" + tag + "}} is never closed");
            const size_t after = stop + end.size();
            const bool close_alone = (stop == 0 || text[stop - 1] == '\n') && after < text.size() && text[after] == '\n';
            if (truthy(value_of(name)) == (tag[0] == '#'))
                out += render_nested(text.substr(body, stop - body), vars, quoted_only, depth + 1);
            pos = after + (close_alone ? 1 : 0);
            continue;
        }
        if (tag[0] == '/') throw InputError("recipe template: {{" + tag + "}} closes nothing");
        out += substitute(tag);
    }
    return out;
}

// Target modules: the framework's names for the plan's roles, in the plan's order, and one flag per role.
// A head tied to the embedding is refused by frameworks whose values.json sets adapts_tied_head false
// (torchtune: its qwen2 and llama3_2 LoRA builders raise on apply_lora_to_output with tied embeddings).
void add_target_vars(const json& values, const std::string& framework_name, const TrainingSetup& s, bool tied_head,
                     const std::function<std::string(bool)>& flag, std::map<std::string, std::string>& vars,
                     std::vector<std::string>& notes) {
    const bool lora = s.method != Method::Full;
    std::vector<std::string> targets;
    std::set<LinearRole> adapted;   // what the recipe really adapts: one flag per role below
    if (lora) {
        const json& names = values.at("targets");
        for (LinearRole role : s.lora_targets) {
            const std::string key = linear_role_name(role);
            const std::string what = role == LinearRole::Head ? "the LM head" : "the '" + key + "' projections";
            auto it = names.find(key);
            if (it == names.end()) {
                notes.push_back(framework_name + " cannot put an adapter on " + what + " by name; " +
                                (role == LinearRole::Head ? "it stays" : "they stay") + " frozen.");
                continue;
            }
            if (role == LinearRole::Head && tied_head && !values.value("adapts_tied_head", true)) {
                notes.push_back(framework_name + " cannot put an adapter on an LM head tied to the embedding; it stays frozen.");
                continue;
            }
            adapted.insert(role);
            if (!it->get<std::string>().empty()) targets.push_back(it->get<std::string>());
        }
    }
    for (LinearRole role : {LinearRole::Q, LinearRole::K, LinearRole::V, LinearRole::O, LinearRole::Gate, LinearRole::Up,
                            LinearRole::Down, LinearRole::Head})
        vars[std::string("target_") + linear_role_name(role)] = flag(adapted.count(role) > 0);
    vars["targets_list"] = flow_list(targets);
    std::string csv;
    for (const auto& t : targets) csv += (csv.empty() ? "" : ",") + t;
    vars["targets_csv"] = csv;
    vars["targets_mlp"] = flag(s.lora_targets.count(LinearRole::Gate) || s.lora_targets.count(LinearRole::Up) ||
                               s.lora_targets.count(LinearRole::Down));

}

// Each knob in the framework's own spelling (fw_<knob>, fw_<knob>_<var>), and what it does instead
// where it has no spelling for the plan's value.
void add_knob_vars(const json& values, const std::string& framework_name, const std::string& framework_id,
                   const RecipeInput& in, std::map<std::string, std::string>& vars, std::vector<std::string>& notes) {
    const TrainingSetup& s = in.setup;
    const std::string method = to_string(s.method);
    for (const auto& [knob, key] : knob_keys(in)) {
        auto table = values.at("knobs").find(knob);
        if (table == values.at("knobs").end()) continue;
        const json* entry = lookup(*table, method, key);
        if (!entry && knob == "objective") {
            std::string methods;   // the "<method>:<objective>" entries: the methods it has a trainer for
            for (const auto& [k, v] : table->items())
                if (k.size() > key.size() && k.compare(k.size() - key.size() - 1, std::string::npos, ":" + key) == 0)
                    methods += (methods.empty() ? "" : ", ") + k.substr(0, k.size() - key.size() - 1);
            throw InputError(framework_name + " has no " + key + " trainer for a " + method + " plan; it trains " + key +
                             " with: " + methods);
        }
        if (!entry)
            throw InputError(framework_name + " has no setting for " + knob + " = " + key +
                             " (resources/recipes/" + framework_id + "/values.json)");
        apply_entry("fw_" + knob, *entry, vars, notes);
    }
}

}  // namespace

std::string render_template(const std::string& text, const std::map<std::string, std::string>& vars,
                            const std::set<std::string>& quoted_only) {
    return render_nested(text, vars, quoted_only, 0);
}

Recipe render(const fs::path& dir, const std::string& framework_id, const RecipeInput& in) {
    Recipe r;
    r.framework = framework(dir, framework_id);
    r.notes = in.notes;
    const fs::path fw_dir = dir / framework_id;
    const json values = read_json(fw_dir / "values.json");
    const TrainingSetup& s = in.setup;
    if (s.method == Method::Serve) throw InputError("a recipe trains; the plan's method is serve (choose full, lora or qlora)");
    const std::string objective = to_string(s.objective.kind);
    if (!has_objective(values, objective)) {
        std::string which;
        for (const auto& id : frameworks_for_objective(dir, objective)) which += (which.empty() ? "" : ", ") + id;
        throw InputError(r.framework.name + " has no " + objective + " trainer Wingspan can write a recipe for; " + objective +
                         " recipes exist for: " + (which.empty() ? std::string("none") : which));
    }

    const auto bools = values.value("bool", std::vector<std::string>{"true", "false"});
    auto flag = [&](bool b) { return b ? bools.at(0) : bools.at(1); };
    const bool lora = s.method != Method::Full;
    const Quantization q = lora ? s.effective_quantization() : Quantization::None;
    const double lr = in.training.learning_rate > 0 ? in.training.learning_rate : (lora ? 2e-4 : 2e-5);
    const std::int64_t per_step = s.micro_batch * s.grad_accum * std::max<std::int64_t>(1, s.devices);
    const std::int64_t examples = std::max<std::int64_t>(1, in.examples);
    const std::int64_t steps =
        in.training.max_steps > 0 ? in.training.max_steps : std::max<std::int64_t>(1, (examples * in.training.epochs + per_step - 1) / per_step);
    const fs::path data(in.data_path);

    std::map<std::string, std::string> vars = {
        {"framework", r.framework.id},
        {"framework_name", r.framework.name},
        {"profile", in.predicted.value("framework", r.framework.profile)},
        {"summary", plan_summary(in)},
        {"schedule", in.training.schedule},
        {"model", in.model_repo},
        {"model_label", in.model_label},
        {"model_type", in.model_type},
        {"num_layers", std::to_string(in.num_layers)},
        // Adapters on the last N layers (mlx-lm's default 16), or -1: all of them.
        {"adapted_layers", std::to_string(s.lora_layers > 0 && s.lora_layers < in.num_layers ? s.lora_layers : -1)},
        {"method", to_string(s.method)},
        {"precision", to_string(s.precision)},
        {"rank", std::to_string(s.lora_rank)},
        {"alpha", number(s.lora_alpha)},
        {"dropout", number(s.lora_dropout)},
        {"scale", number(s.lora_alpha / double(std::max<std::int64_t>(1, s.lora_rank)))},
        {"seq_len", std::to_string(s.seq_len)},
        {"micro_batch", std::to_string(s.micro_batch)},
        {"grad_accum", std::to_string(s.grad_accum)},
        {"lr", number(lr)},
        {"warmup_ratio", number(in.training.warmup_ratio)},
        {"warmup_steps", std::to_string(std::llround(in.training.warmup_ratio * double(steps)))},
        {"epochs", std::to_string(in.training.epochs)},
        {"max_steps", std::to_string(in.training.max_steps > 0 ? in.training.max_steps : -1)},
        {"steps", std::to_string(steps)},
        {"micro_steps", std::to_string(steps * s.grad_accum)},   // batches, for frameworks that count those
        {"data_path", in.data_path},
        {"data_dir", data.parent_path().empty() ? "." : data.parent_path().string()},
        {"data_file", data.filename().string()},
        {"output_dir", in.training.output_dir},
        {"seed", std::to_string(in.training.seed)},
        {"tokens_per_step", std::to_string(s.seq_len * per_step)},
        {"is_full", flag(!lora)},
        {"is_lora", flag(lora)},
        {"is_qlora", flag(s.method == Method::Qlora)},
        {"is_quantized", flag(q != Quantization::None)},
        {"is_4bit", flag(q == Quantization::Nf4 || q == Quantization::Nf4DoubleQuant)},
        {"is_8bit", flag(q == Quantization::Int8)},
        {"double_quant", flag(q == Quantization::Nf4DoubleQuant)},
        {"grad_ckpt", flag(s.grad_checkpointing)},
        {"has_max_steps", flag(in.training.max_steps > 0)},
        {"train_embeddings", flag(s.train_embeddings)},
        {"dora", flag(lora && s.dora)},   // ModelConfig use_dora, axolotl peft_use_dora, LLaMA-Factory use_dora
    };

    add_objective_vars(s, flag, vars);

    add_target_vars(values, r.framework.name, s, in.tied_embeddings, flag, vars, r.notes);
    add_knob_vars(values, r.framework.name, framework_id, in, vars, r.notes);
    // Per-model names (torchtune's builders, LLaMA-Factory's chat templates).
    if (auto models = values.find("models"); models != values.end()) {
        const std::string id = in.predicted.contains("model") ? in.predicted["model"].value("id", "") : "";
        const json* entry = models->contains(id) ? &(*models)[id] : models->contains("*") ? &(*models)["*"] : nullptr;
        if (!entry) throw InputError(r.framework.name + " recipe has no entry for model '" + id + "'");
        apply_entry("fw_model", *entry, vars, r.notes);
    }
    // Framework values may name plan values ("[{{lr}}, {{steps}}, 0.0]"): fill them once.
    for (auto& [name, value] : vars)
        if (name.rfind("fw_", 0) == 0 && value.find("{{") != std::string::npos) value = render_template(value, vars, kFreeText);
    for (auto& note : r.notes) note = render_template(note, vars);

    r.command = render_template(values.at("command").get<std::string>(), vars, kFreeText);
    vars["command"] = r.command;
    std::string notes_md;
    for (const auto& n : r.notes) notes_md += "- " + n + "\n";
    vars["notes"] = notes_md.empty() ? "Every knob of the plan is set in " + r.framework.name + "'s own keys.\n" : notes_md;

    for (const auto& f : values.at("files")) {
        // A file for some objectives only ("objectives": ["dpo", ...]; absent: every objective).
        if (auto only = f.find("objectives"); only != f.end() &&
            std::find(only->begin(), only->end(), json(objective)) == only->end())
            continue;
        const fs::path tpl = fw_dir / f.at("template").get<std::string>();
        const bool raw = f.value("raw", false);   // copied as is (the reporter: Python braces)
        r.files.push_back({f.at("path").get<std::string>(),
                           raw ? read_text(tpl) : render_template(read_text(tpl), vars, kFreeText),
                           f.value("executable", false)});
    }
    // The README is prose: free text stands as it is there.
    r.files.push_back({"README.md", render_template(read_text(dir / "common" / "README.md.in"), vars), false});
    // A model name that is not UTF-8 is written with U+FFFD (JSON holds only UTF-8).
    r.files.push_back({"predicted.json", in.predicted.dump(2, ' ', false, json::error_handler_t::replace) + "\n", false});
    // What "Run a recipe…" runs: the command as arguments (the templates' commands never quote).
    json argv = json::array();
    std::istringstream words(r.command);
    for (std::string w; words >> w;) argv.push_back(w);
    r.files.push_back({kRecipeFile, json{{"framework", r.framework.id}, {"command", argv}}.dump(2) + "\n", false});
    return r;
}

fs::path sample_data_file(const fs::path& dir) { return sample_data_file(dir, "", Objective::Sft); }

fs::path sample_data_file(const fs::path& dir, const std::string& framework_id, Objective objective) {
    const std::string key = to_string(objective);
    std::string name = objective == Objective::Sft ? "chat.jsonl"
                       : objective == Objective::Kto ? "kto.jsonl"
                       : objective == Objective::Grpo ? "prompts.jsonl"
                                                      : "preference.jsonl";
    std::error_code ec;
    if (!framework_id.empty() && fs::is_regular_file(dir / framework_id / "values.json", ec)) {
        const json values = read_json(dir / framework_id / "values.json");
        if (auto own = values.find("sample_data"); own != values.end() && own->contains(key))
            name = (*own)[key].get<std::string>();
    }
    const fs::path file = fs::weakly_canonical(dir / ".." / "sample-data" / name, ec);
    return fs::is_regular_file(file, ec) ? file : fs::path();
}

std::int64_t add_sample_data(Recipe& recipe, const fs::path& sample) {
    std::ifstream in(sample);
    if (!in) throw InputError("cannot read the bundled sample data '" + sample.string() + "'");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(line);
    std::string train, valid;
    for (const auto& l : lines) train += l + "\n";
    // mlx-lm refuses to train without a validation file; the last twentieth stands in for one.
    for (size_t i = lines.size() - std::min(lines.size(), std::max<size_t>(1, lines.size() / 20)); i < lines.size(); ++i)
        valid += lines[i] + "\n";
    recipe.files.push_back({"data/train.jsonl", train, false});
    recipe.files.push_back({"data/valid.jsonl", valid, false});
    return std::int64_t(lines.size());
}

void write(const Recipe& recipe, const fs::path& out) {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw InputError("cannot create the recipe folder '" + out.string() + "': " + ec.message());
    for (const auto& f : recipe.files) {
        const fs::path target = out / f.path;
        fs::create_directories(target.parent_path(), ec);
        write_file_atomically(target, f.text);   // exclusive, no-follow temporary; fsync; rename
        if (f.executable)
            fs::permissions(target, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                            fs::perm_options::add, ec);
    }
}

}  // namespace wingspan::recipe
