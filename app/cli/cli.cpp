#include "cli.hpp"
#include "data_cmd.hpp"
#include "download_cmd.hpp"
#include "explain_oom_cmd.hpp"
#include "from_config_cmd.hpp"
#include "plan_cmd.hpp"
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
#include "wingspan/version.hpp"
#include "wingspan/hub.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/plan_flags.hpp"
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
  --rank R  --alpha A  --targets q,k,v,o,gate,up,down|all[,head]   --train-embeddings
                        (head: LoRA on the LM head, as LitGPT lora_head, PEFT lm_head, torchtune apply_lora_to_output)
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
pre-quantized checkpoints (plan --method serve, with hf-transformers or --framework vllm):
  --quant awq|gptq|gptq-int8|fp8|fp8-channel|fp8-block  [--group-size N|-1 (AWQ/GPTQ, default 128)]
fit: --solve batch|seq|rank|size
table: --scenario ID [--format markdown|csv]
)";

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

// fit --data: the batches the data forms at the solution (its micro batch or cap), for the report.
std::optional<DataSummary> fit_data_summary(const PlanData& data, TrainingSetup at, SolveFor what, const Solution& s,
                                            const std::string& framework_id) {
    if (!data.lengths || !at.trains() || s.value == 0) return std::nullopt;
    if (what == SolveFor::Batch) at.micro_batch = s.value;
    if (what == SolveFor::Seq && !s.completion_length) at.seq_len = s.value;
    return data.summary_for(at, framework_id);
}

int cmd_fit(const ProfileLibrary& lib, const PlanFlags& o, std::ostream& out, std::ostream& err) {
    const ResolvedModel model = model_from_flags(lib, o, err);
    const TrainingSetup asked = setup_from_flags(o, model.arch);
    const ChosenFields chosen = chosen_from_flags(o);
    auto what_text = o.get("--solve");
    if (!what_text) throw InputError("fit needs --solve batch|seq|rank|size");
    const SolveFor what = parse_solve_for(*what_text);
    if (!o.has("--machine")) throw InputError("fit needs --machine ID (see `wingspan machines`)");
    const FrameworkProfile* forced = framework_from_flags(lib, o);
    const ByteUnit unit = o.unit();
    const std::string family = o.get("--family").value_or(model.family);
    const PlanData data = plan_data_from_flags(o, asked, err);
    json results = json::array();
    for (const auto* m : machines_from_flags(lib, o)) {
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

int cmd_table(const ProfileLibrary& lib, const PlanFlags& o, std::ostream& out) {
    auto id = o.get("--scenario");
    if (!id) {
        std::string ids;
        for (const auto& [k, v] : lib.scenarios()) ids += (ids.empty() ? "" : ", ") + k;
        throw InputError("table needs --scenario ID (one of: " + ids + ")");
    }
    const Table t = build_table(lib, lib.scenario(*id), o.unit());
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

int cmd_calibrate(ProfileLibrary& lib, const PlanFlags& o, std::ostream& out, std::ostream& err) {
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
        out << "wingspan " << kVersion << "\n";
        return kExitOk;
    }
    if (args[0] == "download") return cmd_download(args, out, err);
    try {
        if (args[0] == "recipe") return run_recipe(args, out, err, executable);
        if (args[0] == "watch") return run_watch(args, out, err, executable);
        const PlanFlags o = PlanFlags::parse(args, 1);
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
