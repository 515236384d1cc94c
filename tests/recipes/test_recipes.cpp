// `wingspan recipe` and `wingspan watch` without any framework installed: golden recipes of the
// lessons' plan for each framework, their Python and YAML checked by check_recipe.py (keys and
// values), the reporter against a plain PyTorch loop on the CPU and through each framework's
// hook (hooks_check.py), scripted runs recorded end to end in a temporary run store, and Ctrl-C
// stopping a watched run cleanly.
#include <QtTest>
#include <tuple>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <thread>

#include "../core/cli_result.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/recipe.hpp"
#include "wingspan/recipe_watch.hpp"
#include "wingspan/run_record.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using Result = wingspan::test::CliResult;

Result cli(const std::vector<std::string>& args) { return wingspan::test::run_cli(args); }

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The lessons' plan (Llama 3.1 8B, seq 1024, batch 1, checkpointing on, LoRA r16 alpha 32) with
// gradient accumulation 4, and the method each golden recipe shows.
const std::vector<std::pair<std::string, std::string>> kGoldens = {
    {"hf-transformers", "qlora"}, {"unsloth", "qlora"}, {"torchtune", "lora"},
    {"mlx-lm", "lora"},           {"axolotl", "qlora"}, {"llama-factory", "lora"}};

std::vector<std::string> lesson_args(const std::string& framework, const std::string& method, const fs::path& out) {
    return {"recipe", "--framework", framework, "--out", out.string(), "--model", "llama-3.1-8b", "--method", method,
            "--seq", "1024", "--batch", "1", "--grad-accum", "4", "--rank", "16", "--alpha", "32",
            "--grad-checkpointing", "on", "--profiles", WINGSPAN_TEST_PROFILES_DIR};
}

int run_python(const std::vector<std::string>& args, std::string* output = nullptr) {
    std::string cmd = std::string(WINGSPAN_TEST_PYTHON);
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string text;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
    const int status = pclose(p);
    if (output) *output = text;
    if (status != 0) qWarning("%s\n%s", cmd.c_str(), text.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

class RecipeTest : public QObject {
    Q_OBJECT
    fs::path tmp_;
    fs::path runs_;

    fs::path write_recipe(const std::string& framework, const std::string& method) {
        const fs::path dir = tmp_ / (framework + "-" + method);
        const Result r = cli(lesson_args(framework, method, dir));
        if (r.code != 0) qWarning("%s", r.err.c_str());
        [&] { QCOMPARE(r.code, 0); }();
        return dir;
    }

private slots:
    void initTestCase() {
        tmp_ = fs::temp_directory_path() / ("wingspan-recipes-" + std::to_string(::getpid()));
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
        runs_ = tmp_ / "data";
        qputenv("XDG_DATA_HOME", QByteArray::fromStdString(runs_.string()));
        QVERIFY2(run_python({"-c", "import yaml, torch"}) == 0,
                 "the recipe tests need python3 with python3-yaml and python3-torch (dev.sh installs them)");
    }
    void cleanupTestCase() { fs::remove_all(tmp_); }

    // Every file of the lessons' recipe matches the committed golden one (predicted.json is
    // checked against core instead, so a recalibrated profile does not break the goldens).
    void goldenRecipes() {
        const fs::path golden_root = fs::path(WINGSPAN_TEST_RECIPE_TESTS_DIR) / "golden";
        const bool update = std::getenv("WINGSPAN_UPDATE_GOLDEN") != nullptr;
        for (const auto& [framework, method] : kGoldens) {
            const fs::path dir = write_recipe(framework, method);
            const fs::path golden = golden_root / framework;
            // Files copied as they are (the reporter, the drivers) are compared with their source.
            const fs::path templates = wingspan::recipe::default_dir() / framework;
            std::set<std::string> raw;
            const json values = json::parse(read(templates / "values.json"));
            for (const auto& f : values["files"])
                if (f.value("raw", false)) {
                    raw.insert(f["path"].get<std::string>());
                    QCOMPARE(read(dir / f["path"].get<std::string>()), read(templates / f["template"].get<std::string>()));
                }
            QVERIFY(raw.count("wingspan_reporter.py"));
            size_t compared = 0;
            for (const auto& e : fs::recursive_directory_iterator(dir)) {
                if (!e.is_regular_file()) continue;
                const fs::path rel = fs::relative(e.path(), dir);
                if (rel == "predicted.json" || *rel.begin() == "data" || raw.count(rel.string())) continue;
                if (update) {
                    fs::create_directories((golden / rel).parent_path());
                    fs::copy_file(e.path(), golden / rel, fs::copy_options::overwrite_existing);
                }
                QVERIFY2(fs::exists(golden / rel), (framework + ": no golden file " + rel.string()).c_str());
                QVERIFY2(read(e.path()) == read(golden / rel), (framework + ": " + rel.string() + " differs from the golden file").c_str());
                ++compared;
            }
            QVERIFY2(compared >= 2, framework.c_str());
            // Nothing golden is missing from the recipe.
            for (const auto& e : fs::recursive_directory_iterator(golden))
                if (e.is_regular_file()) QVERIFY2(fs::exists(dir / fs::relative(e.path(), golden)), e.path().c_str());
            // The bundled sample travels with the recipe so it trains out of the box.
            QCOMPARE(read(dir / "data/train.jsonl"), read(fs::path(WINGSPAN_TEST_RESOURCES_DIR) / "sample-data/chat.jsonl"));
        }
    }

    // predicted.json is core's prediction for the plan with the framework's profile, to the byte.
    void predictionIsCores() {
        const auto lib = wingspan::ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
        const fs::path recipes = wingspan::recipe::default_dir();
        for (const auto& [framework, method] : kGoldens) {
            const fs::path dir = write_recipe(framework, method);
            const json p = json::parse(read(dir / "predicted.json"));
            QCOMPARE(p["setup"]["method"].get<std::string>(), method);
            QCOMPARE(p["setup"]["grad_accum"].get<int>(), 4);
            QCOMPARE(p["recipe"].get<std::string>(), framework);
            const auto& profile = wingspan::recipe::profile_for(lib, wingspan::recipe::framework(recipes, framework));
            QCOMPARE(p["framework"].get<std::string>(), profile.id);
            const auto& m = lib.model("llama-3.1-8b");
            const json expected = wingspan::recipe::prediction_json(m.id, m.name, m.family, m.arch,
                                                                    wingspan::TrainingSetup::from_json(p["setup"]), profile);
            QCOMPARE(p["total_bytes"].get<std::int64_t>(), expected["total_bytes"].get<std::int64_t>());
            QCOMPARE(p["components"], expected["components"]);
            QVERIFY(p["total_bytes"].get<std::int64_t>() > p["peak_allocated_bytes"].get<std::int64_t>());
        }
        // Unsloth and MLX predict with profiles of their own, not with the PyTorch + CUDA reference.
        const std::string reference = json::parse(read(tmp_ / "hf-transformers-qlora/predicted.json"))["framework"];
        QVERIFY(json::parse(read(tmp_ / "unsloth-qlora/predicted.json"))["framework"] != reference);
        QVERIFY(json::parse(read(tmp_ / "mlx-lm-lora/predicted.json"))["framework"] != reference);
    }

    // Python compiles, YAML parses and holds the plan's values under the framework's keys.
    void frameworkKeysHoldThePlan() {
        const std::string checker = std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/check_recipe.py";
        for (const auto& [framework, method] : kGoldens) {
            const fs::path dir = write_recipe(framework, method);
            std::string output;
            QVERIFY2(run_python({checker, framework, dir.string()}, &output) == 0, output.c_str());
            QVERIFY(output.find("all checks passed") != std::string::npos);
        }
        // The other method of each framework too: full fine-tunes and QLoRA/LoRA swapped.
        for (const auto& [framework, method] : kGoldens)
            for (const std::string other : {"full", method == "lora" ? "qlora" : "lora"}) {
                const fs::path dir = write_recipe(framework, other);
                std::string output;
                QVERIFY2(run_python({checker, framework, dir.string()}, &output) == 0, (framework + " " + other + "\n" + output).c_str());
            }
    }

    // Issue 31: preference and RL objectives in each framework's own trainer and keys, with the
    // bundled data in the layout that trainer reads; a framework without the objective refuses it
    // naming those that have it.
    void objectiveRecipes() {
        const std::string checker = std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/check_objective_recipe.py";
        struct Case {
            std::string framework, method;
            std::vector<std::string> extra;
        };
        const std::vector<Case> cases = {
            {"hf-transformers", "lora", {"--objective", "dpo"}},
            {"hf-transformers", "full", {"--objective", "dpo", "--reference", "precomputed"}},
            {"hf-transformers", "qlora", {"--objective", "orpo"}},
            {"hf-transformers", "lora", {"--objective", "simpo", "--prompt-length", "256", "--completion-length", "512"}},
            {"hf-transformers", "lora", {"--objective", "kto"}},
            {"hf-transformers", "qlora", {"--objective", "grpo", "--generations", "8", "--completion-length", "512"}},
            {"hf-transformers", "lora", {"--objective", "grpo", "--beta", "0.04", "--vllm-share", "0.3"}},
            {"llama-factory", "lora", {"--objective", "dpo"}},
            {"llama-factory", "full", {"--objective", "orpo"}},
            {"llama-factory", "lora", {"--objective", "simpo"}},
            {"llama-factory", "lora", {"--objective", "kto"}},
            {"torchtune", "lora", {"--objective", "dpo"}},
            {"torchtune", "qlora", {"--objective", "dpo"}},
        };
        int n = 0;
        for (const auto& c : cases) {
            const fs::path dir = tmp_ / ("objective-" + std::to_string(++n));
            auto args = lesson_args(c.framework, c.method, dir);
            args.insert(args.end(), c.extra.begin(), c.extra.end());
            const Result r = cli(args);
            QVERIFY2(r.code == 0, (c.framework + " " + c.extra[1] + ": " + r.err).c_str());
            std::string output;
            QVERIFY2(run_python({checker, c.framework, dir.string()}, &output) == 0,
                     (c.framework + " " + c.extra[1] + "\n" + output).c_str());
            QVERIFY(output.find("all checks passed") != std::string::npos);
        }
        // Refused, naming the frameworks that have the trainer (or the methods that do).
        const std::vector<std::tuple<std::string, std::string, std::string, std::string>> refused = {
            {"mlx-lm", "lora", "dpo", "dpo recipes exist for: hf-transformers, torchtune, llama-factory"},
            {"unsloth", "qlora", "grpo", "grpo recipes exist for: hf-transformers"},
            {"llama-factory", "lora", "grpo", "grpo recipes exist for: hf-transformers"},
            {"torchtune", "lora", "kto", "kto recipes exist for: hf-transformers, llama-factory"},
            {"torchtune", "full", "dpo", "trains dpo with: lora, qlora"},
        };
        for (const auto& [framework, method, objective, says] : refused) {
            auto args = lesson_args(framework, method, tmp_ / "refused");
            args.insert(args.end(), {"--objective", objective});
            const Result r = cli(args);
            QVERIFY2(r.code != 0, (framework + " wrote a " + objective + " recipe").c_str());
            QVERIFY2(r.err.find(says) != std::string::npos, r.err.c_str());
            QVERIFY(!fs::exists(tmp_ / "refused" / "predicted.json"));
        }
        // The bundled samples are what tests/recipes/make_objective_samples.py makes of chat.jsonl.
        const fs::path samples = wingspan::recipe::default_dir() / ".." / "sample-data";
        const fs::path remade = tmp_ / "remade-samples";
        fs::create_directories(remade);
        fs::copy_file(samples / "chat.jsonl", remade / "chat.jsonl");
        QCOMPARE(run_python({std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/make_objective_samples.py", remade.string()}), 0);
        for (const char* f : {"preference.jsonl", "preference-chat.jsonl", "kto.jsonl", "prompts.jsonl"})
            QVERIFY2(read(remade / f) == read(samples / f), f);
    }

    // Issue 25: each memory technique in the framework's own key, or said in the README where none.
    void techniquesInTheFrameworksOwnKeys() {
        auto recipe = [&](const std::string& framework, std::vector<std::string> techniques) {
            static int written = 0;
            const fs::path dir = tmp_ / ("techniques-" + framework + "-" + std::to_string(++written));
            std::vector<std::string> args = {"recipe", "--framework", framework, "--out", dir.string(), "--model",
                                             "llama-3.1-8b", "--method", "full", "--optimizer", "paged-adamw8bit",
                                             "--grad-checkpointing", "on", "--seq", "2048", "--batch", "2",
                                             "--profiles", WINGSPAN_TEST_PROFILES_DIR};
            args.insert(args.end(), techniques.begin(), techniques.end());
            const Result r = cli(args);
            if (r.code != 0) qWarning("%s", r.err.c_str());
            return dir;
        };
        const std::string tt =
            read(recipe("torchtune", {"--optimizer-in-backward", "--activation-offload", "--compile"}) / "config.yaml");
        for (const char* key : {"optimizer_in_bwd: True\n", "enable_activation_offloading: True\n", "compile: True\n",
                                "_component_: bitsandbytes.optim.PagedAdamW8bit\n"})
            QVERIFY2(tt.find(key) != std::string::npos, key);
        const fs::path hf = recipe("hf-transformers", {"--optimizer-in-backward", "--compile"});
        QVERIFY(read(hf / "config.yaml").find("optim: paged_adamw_8bit\n") != std::string::npos);
        QVERIFY(read(hf / "config.yaml").find("torch_compile: True\n") != std::string::npos);
        QVERIFY(read(hf / "README.md").find("no optimizer step in backward") != std::string::npos);
        const fs::path axolotl = recipe("axolotl", {"--activation-offload"});
        QVERIFY(read(axolotl / "config.yaml").find("activation_offloading: true\n") != std::string::npos);
        // Unsloth offloads through its own checkpointing, which the recipe writes for LoRA and QLoRA.
        const fs::path unsloth = recipe("unsloth", {"--activation-offload", "--method", "qlora"});
        QVERIFY(read(unsloth / "config.yaml").find("  use_gradient_checkpointing: \"unsloth\"\n") != std::string::npos);
        QVERIFY(read(recipe("unsloth", {"--activation-offload"}) / "README.md").find("keeps the checkpointed activations on the GPU") !=
                std::string::npos);
    }

    // LoRA on the LM head (--targets ...,head) in each framework's own key, and said where there is none.
    void headAdapterInTheFrameworksOwnKeys() {
        auto recipe = [&](const std::string& framework, const std::string& model) {
            const fs::path dir = tmp_ / ("head-" + framework + "-" + model);
            const Result r = cli({"recipe", "--framework", framework, "--out", dir.string(), "--model", model, "--method", "lora",
                                  "--targets", "q,v,head", "--seq", "512", "--batch", "1", "--profiles",
                                  WINGSPAN_TEST_PROFILES_DIR});
            if (r.code != 0) qWarning("%s", r.err.c_str());
            return dir;
        };
        QVERIFY(read(recipe("hf-transformers", "llama-3.1-8b") / "config.yaml").find("lm_head") != std::string::npos);
        QVERIFY(read(recipe("torchtune", "llama-3.1-8b") / "config.yaml").find("apply_lora_to_output: True\n") !=
                std::string::npos);
        // torchtune's LoRA builders refuse an adapter on a head tied to the embedding (Llama 3.2 1B).
        const fs::path tied = recipe("torchtune", "llama-3.2-1b");
        QVERIFY(read(tied / "config.yaml").find("apply_lora_to_output: False\n") != std::string::npos);
        QVERIFY(read(tied / "README.md").find("cannot put an adapter on an LM head tied to the embedding") != std::string::npos);
        QVERIFY(read(recipe("mlx-lm", "llama-3.1-8b") / "README.md").find("cannot put an adapter on the LM head") !=
                std::string::npos);
    }

    // What a framework cannot express is said in README.md, with what it does instead.
    void readmeSaysWhatDiffers() {
        const std::string mlx = read(write_recipe("mlx-lm", "qlora") / "README.md");
        QVERIFY(mlx.find("already quantized") != std::string::npos);
        QVERIFY(mlx.find("wingspan watch --plan predicted.json -- python3 wingspan_mlx_lora.py --config lora_config.yaml") !=
                std::string::npos);
        const std::string tt = read(write_recipe("torchtune", "full") / "README.md");
        QVERIFY(read(tmp_ / "torchtune-full" / "config.yaml").find("dtype: bf16\n") != std::string::npos);
        // A model without a Hugging Face id: the placeholder is named in the README too.
        std::ostringstream out, err;
        QCOMPARE(wingspan::cli::run({"recipe", "--framework", "torchtune", "--size", "5b", "--family", "qwen2.5", "--out",
                                     (tmp_ / "interpolated").string(), "--profiles", WINGSPAN_TEST_PROFILES_DIR},
                                    out, err),
                 0);
        const std::string interpolated = read(tmp_ / "interpolated" / "README.md");
        QVERIFY(interpolated.find("replace REPLACE-WITH/your-model") != std::string::npos);
        QVERIFY(interpolated.find("Llama 3.2 1B builder as a placeholder") != std::string::npos);
        QVERIFY(read(tmp_ / "interpolated" / "config.yaml").find("REPLACE-WITH/your-model") != std::string::npos);
        // A machine named with --machine: its verdict printed, its notes in the README.
        const Result t4 = cli({"recipe", "--framework", "hf-transformers", "--model", "llama-3.1-8b", "--method", "qlora",
                               "--machine", "t4", "--out", (tmp_ / "t4").string(), "--profiles", WINGSPAN_TEST_PROFILES_DIR});
        QVERIFY2(t4.code == 0, t4.err.c_str());
        QVERIFY(t4.out.find("the plan on NVIDIA Tesla T4: fits") != std::string::npos);
        QVERIFY(read(tmp_ / "t4" / "README.md").find("NVIDIA Tesla T4 has no bf16") != std::string::npos);
        // ... so the recipe trains in fp16 there, as the planner counted.
        const std::string settings = read(tmp_ / "t4" / "config.yaml");
        QVERIFY(settings.find("fp16: True\n") != std::string::npos && settings.find("bf16: False\n") != std::string::npos);
        QCOMPARE(json::parse(read(tmp_ / "t4" / "predicted.json"))["setup"]["precision"].get<std::string>(),
                 std::string("fp16-mixed"));
        const std::string hf = read(write_recipe("hf-transformers", "lora") / "README.md");
        QVERIFY(hf.find("Every knob of the plan is set") != std::string::npos);
    }

    void badInput() {
        Result r = cli({"recipe", "--framework", "deepspeed", "--out", (tmp_ / "x").string()});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.find("hf-transformers") != std::string::npos);
        r = cli({"recipe", "--framework", "axolotl"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.find("--out") != std::string::npos);
        r = cli({"recipe", "--framework", "axolotl", "--out", (tmp_ / "x").string(), "--data", "/nonexistent.jsonl",
                 "--profiles", WINGSPAN_TEST_PROFILES_DIR});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.find("/nonexistent.jsonl") != std::string::npos);
        r = cli({"recipe", "--framework", "axolotl", "--out", (tmp_ / "x").string(), "--method", "serve", "--profiles",
                 WINGSPAN_TEST_PROFILES_DIR});
        QCOMPARE(r.code, 2);
        r = cli({"recipe", "--framework", "axolotl", "--out", (tmp_ / "x").string(), "--batch", "zero", "--profiles",
                 WINGSPAN_TEST_PROFILES_DIR});
        QCOMPARE(r.code, 2);
        QVERIFY(!fs::exists(tmp_ / "x"));
        QCOMPARE(cli({"watch", "--plan", "p.json"}).code, 2);
    }

    // A recipe's predicted.json is a plan too: the same recipe comes back from it.
    void planFileRoundTrip() {
        const fs::path first = write_recipe("hf-transformers", "qlora");
        const fs::path again = tmp_ / "again";
        const Result r = cli({"recipe", "--framework", "hf-transformers", "--plan", (first / "predicted.json").string(),
                              "--out", again.string(), "--profiles", WINGSPAN_TEST_PROFILES_DIR});
        QVERIFY2(r.code == 0, r.err.c_str());
        QCOMPARE(read(again / "train.py"), read(first / "train.py"));
        QCOMPARE(json::parse(read(again / "predicted.json"))["total_bytes"],
                 json::parse(read(first / "predicted.json"))["total_bytes"]);
    }

    // A plan saved by the window (.wingspan.json): its model, setup and data set's epochs.
    void windowPlanFile() {
        const fs::path plan = tmp_ / "lesson.wingspan.json";
        std::ofstream(plan) << R"({"format": "wingspan-plan", "version": 1, "model": {"id": "qwen2.5-7b"},
            "setup": {"method": "qlora", "seq_len": 2048, "micro_batch": 2, "grad_accum": 8, "lora_rank": 32,
                      "lora_alpha": 64, "lora_targets": "q,v", "grad_checkpointing": false},
            "machines": ["t4"], "dataset": {"examples": 200, "tokens_per_example": 512, "epochs": 3}})";
        const fs::path out = tmp_ / "from-plan-file";
        const Result r = cli({"recipe", "--framework", "mlx-lm", "--plan", plan.string(), "--out", out.string(),
                              "--profiles", WINGSPAN_TEST_PROFILES_DIR});
        QVERIFY2(r.code == 0, r.err.c_str());
        const std::string cfg = read(out / "lora_config.yaml");
        QVERIFY(cfg.find("model: \"Qwen/Qwen2.5-7B\"") != std::string::npos);
        QVERIFY(cfg.find("batch_size: 2\n") != std::string::npos);
        QVERIFY(cfg.find("grad_accumulation_steps: 8\n") != std::string::npos);
        QVERIFY(cfg.find("max_seq_length: 2048\n") != std::string::npos);
        QVERIFY(cfg.find("grad_checkpoint: false\n") != std::string::npos);
        QVERIFY(cfg.find("keys: [\"self_attn.q_proj\", \"self_attn.v_proj\"]") != std::string::npos);
        QVERIFY(cfg.find("rank: 32\n") != std::string::npos);
        QVERIFY(cfg.find("scale: 2\n") != std::string::npos);
        // 480 sample conversations × 3 epochs at 2 × 8 per step = 90 optimizer steps = 720 batches;
        // mlx-lm's iters counts batches, its schedule optimizer steps.
        QVERIFY(cfg.find("iters: 720\n") != std::string::npos);
        QVERIFY(cfg.find("arguments: [0.0002, 90, 0.0]") != std::string::npos);
        const json p = json::parse(read(out / "predicted.json"));
        QCOMPARE(p["setup"]["lora_rank"].get<int>(), 32);
        QCOMPARE(p["model"]["id"].get<std::string>(), std::string("qwen2.5-7b"));
    }

    // A script printing protocol lines among its own output, recorded end to end.
    void watchRecordsAScriptedRun() {
        const fs::path recipe = write_recipe("hf-transformers", "qlora");
        const Result r = cli({"watch", "--plan", (recipe / "predicted.json").string(), "--", "sh",
                              std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/scripted_run.sh"});
        QVERIFY2(r.code == 0, r.err.c_str());
        QVERIFY(r.out.find("loading model") != std::string::npos);    // the command's output is echoed
        QVERIFY(r.out.find("\"event\"") == std::string::npos);         // protocol lines are not
        const wingspan::RunStore store(runs_ / "wingspan" / "runs");
        const auto runs = store.list();
        QVERIFY(!runs.empty());
        const fs::path run = runs.front();
        const wingspan::RunRecord rec = wingspan::RunStore::load(run);
        QCOMPARE(rec.status(), wingspan::RunStatus::Completed);
        QCOMPARE(rec.step_events(), std::int64_t(2));
        QCOMPARE(rec.memory_events(), std::int64_t(2));
        QCOMPARE(rec.steps().back().loss, 2.0);
        QCOMPARE(rec.measured_peak(), std::int64_t(1'600'000));
        QCOMPARE(rec.measured_rss_peak(), std::int64_t(2'100'000));
        QCOMPARE(rec.predicted_total(), std::int64_t(2'000'000));   // the command's own prediction wins
        QCOMPARE(rec.malformed_lines(), std::int64_t(0));
        // No components measured: compared on totals, not as components measured at zero.
        QVERIFY(!rec.predicted().empty());
        QVERIFY(rec.summary().components.empty());
        QCOMPARE(rec.summary().measured_rss_peak, std::int64_t(2'100'000));
        bool stdout_logged = false, stderr_logged = false;
        for (const auto& l : rec.logs()) {
            stdout_logged = stdout_logged || l.find("saving adapters") != std::string::npos;
            stderr_logged = stderr_logged || l.find("warming up") != std::string::npos;
        }
        QVERIFY(stdout_logged && stderr_logged);
        const json plan = json::parse(read(run / "plan.json"));
        QCOMPARE(plan["framework"].get<std::string>(), std::string("hf-transformers"));
        QCOMPARE(plan["external"]["command"][0].get<std::string>(), std::string("sh"));
        QCOMPARE(wingspan::watched_profile(run).value_or(""), std::string("hf-transformers"));
        QCOMPARE(json::parse(read(run / "result.json"))["status"].get<std::string>(), std::string("completed"));
        // An external run feeds calibration of its framework's profile.
        const Result cal = cli({"calibrate", run.string(), "--json", "--profiles", WINGSPAN_TEST_PROFILES_DIR});
        QVERIFY2(cal.code == 0, cal.err.c_str());
        QCOMPARE(json::parse(cal.out)["framework"].get<std::string>(), std::string("hf-transformers-calibrated"));
        fs::remove_all(fs::path(qgetenv("XDG_CONFIG_HOME").toStdString()) / "wingspan/frameworks/hf-transformers-calibrated.json");
    }

    // The reporter against a plain PyTorch loop on the CPU, through `wingspan watch`.
    void reporterOnACpuLoop() {
        const fs::path recipe = write_recipe("torchtune", "lora");
        const json predicted = json::parse(read(recipe / "predicted.json"));
        const Result r = cli({"watch", "--plan", (recipe / "predicted.json").string(), "--label", "cpu-loop", "--",
                              WINGSPAN_TEST_PYTHON, std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/cpu_loop.py",
                              recipe.string(), "6"});
        QVERIFY2(r.code == 0, r.err.c_str());
        fs::path run;
        for (const auto& p : wingspan::RunStore(runs_ / "wingspan" / "runs").list())
            if (wingspan::RunStore::label_of(p) == "cpu-loop") run = p;
        QVERIFY(!run.empty());
        const wingspan::RunRecord rec = wingspan::RunStore::load(run);
        QCOMPARE(rec.status(), wingspan::RunStatus::Completed);
        QCOMPARE(rec.hello()["trainer"].get<std::string>(), std::string("cpu-loop"));
        QCOMPARE(rec.step_events(), std::int64_t(6));
        QCOMPARE(rec.steps().back().step, std::int64_t(6));
        QCOMPARE(rec.steps().back().total_steps, std::int64_t(6));
        QVERIFY(rec.steps().back().loss > 0 && rec.steps().back().loss < 10);
        QVERIFY(rec.steps().back().tokens_per_s > 0);
        QVERIFY(rec.memory_events() >= 1);
        QVERIFY(rec.measured_rss_peak() > 10'000'000);     // a Python process with torch holds tens of MB
        QCOMPARE(rec.predicted_total(), predicted["total_bytes"].get<std::int64_t>());
        QCOMPARE(rec.predicted_peak(), predicted["peak_allocated_bytes"].get<std::int64_t>());
        QCOMPARE(rec.done()->string_field("reason"), std::string("completed"));
        QCOMPARE(rec.malformed_lines(), std::int64_t(0));
        // On the CPU the process total is the resident set, and the memory lines say so.
        std::istringstream events(read(run / "events.jsonl"));
        int memory_lines = 0;
        for (std::string line; std::getline(events, line);) {
            const json e = json::parse(line);
            if (e["event"] != "memory" || e.value("held_source", "") == "") continue;
            ++memory_lines;
            QCOMPARE(e["held_source"].get<std::string>(), std::string("process_rss"));
            QVERIFY(e["host_rss_bytes"].get<std::int64_t>() > 10'000'000);
            QVERIFY(e["rss_peak_bytes"].get<std::int64_t>() >= e["rss_bytes"].get<std::int64_t>());
            QVERIFY(!e.contains("allocated_bytes"));   // CPU PyTorch keeps no allocator statistics
        }
        QCOMPARE(std::int64_t(memory_lines), rec.memory_events());
    }

    // Each framework hook (TrainerCallback, torchtune's metric logger, mlx-lm's callback, the
    // Axolotl plugin) called the way its framework calls it, with stand-in base classes.
    void hooksSpeakTheProtocol() {
        const fs::path recipe = write_recipe("hf-transformers", "lora");
        std::string output;
        QVERIFY2(run_python({std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/hooks_check.py", recipe.string()}, &output) == 0,
                 output.c_str());
        QVERIFY(output.find("all hooks speak the protocol") != std::string::npos);
    }

    // Ctrl-C: the command is stopped cleanly, says `done` interrupted, and the run says so.
    void ctrlCStopsCleanly() {
        const fs::path recipe = write_recipe("torchtune", "lora");
        // Ctrl-C once the loop has reported a step (importing torch takes a while on a busy machine).
        const fs::path store = runs_ / "wingspan" / "runs";
        std::thread ctrl_c([store] {
            for (int i = 0; i < 1200; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                for (const auto& p : wingspan::RunStore(store).list())
                    if (wingspan::RunStore::label_of(p) == "stopped" &&
                        read(p / "events.jsonl").find("\"event\":\"step\"") != std::string::npos) {
                        ::kill(::getpid(), SIGINT);
                        return;
                    }
            }
        });
        const Result r = cli({"watch", "--plan", (recipe / "predicted.json").string(), "--label", "stopped", "--",
                              WINGSPAN_TEST_PYTHON, std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/cpu_loop.py",
                              recipe.string(), "0", "--forever"});
        ctrl_c.join();
        QVERIFY2(r.code == 0, r.err.c_str());
        QVERIFY(r.err.find("SIGINT") != std::string::npos);
        fs::path run;
        for (const auto& p : wingspan::RunStore(runs_ / "wingspan" / "runs").list())
            if (wingspan::RunStore::label_of(p) == "stopped") run = p;
        const wingspan::RunRecord rec = wingspan::RunStore::load(run);
        QCOMPARE(rec.status(), wingspan::RunStatus::Interrupted);
        QVERIFY(rec.step_events() >= 1);
        QCOMPARE(rec.done()->string_field("reason"), std::string("interrupted"));
    }
};

QTEST_GUILESS_MAIN(RecipeTest)
#include "test_recipes.moc"
