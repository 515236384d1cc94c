// Issue 26: `wingspan recipe` -> `wingspan plan --from` gives back the plan it was written from, for
// every framework, method and objective Wingspan writes and the settings that change a plan. A
// setting the framework's config has no key for comes back at the plan's default, and both the
// recipe's notes and the import's defaults say "not expressible in <framework>" (checked word for
// word): the round trip never loses a setting silently.
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_result.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using Flags = std::vector<std::string>;

// One plan written as a recipe and read back.
struct Row {
    std::string framework;
    Flags plan;
    // Setup fields that come back otherwise ("objective.reference" -> "auto"); the rest come back as written.
    std::map<std::string, json> back = {};
    // {key, note}: what the import must list with its defaults, word for word.
    std::vector<std::pair<std::string, std::string>> reported = {};
    std::string recipe_note = {};   // what the recipe's notes must say (a part of one)
    bool same_bytes = true;         // the plan read back holds the same bytes
};

wingspan::test::CliResult run_wingspan(Flags args) {
    args.insert(args.end(), {"--profiles", WINGSPAN_TEST_PROFILES_DIR});
    return wingspan::test::run_cli(args);
}

Flags operator+(Flags a, const Flags& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::string joined(const Flags& f) {
    std::string s;
    for (const auto& x : f) s += (s.empty() ? "" : " ") + x;
    return s;
}

// The setup's fields by name, the objective's as "objective.<field>".
std::map<std::string, json> fields(const json& setup) {
    std::map<std::string, json> out;
    for (const auto& [k, v] : setup.items()) {
        if (k != "objective") out[k] = v;
        else
            for (const auto& [ok, ov] : v.items()) out["objective." + ok] = ov;
    }
    return out;
}

const Flags kLora = {"--model", "llama-3.2-1b", "--method", "lora", "--rank", "32", "--alpha", "64", "--seq", "2048",
                     "--batch", "2", "--grad-accum", "4", "--targets", "q,k,v,o"};
const Flags kQlora = {"--model", "llama-3.2-1b", "--method", "qlora", "--seq", "4096", "--batch", "1", "--grad-checkpointing", "on"};
const Flags kFull = {"--model", "llama-3.2-1b", "--method", "full", "--optimizer", "adamw8bit", "--grad-checkpointing", "off",
                     "--batch", "3"};
const Flags kMlx = {"--model", "llama-3.2-1b", "--method", "lora", "--lora-layers", "8", "--rank", "4", "--targets", "q,v",
                    "--batch", "2", "--seq", "1024"};

// The import's reports, word for word (core/src/import/config_import_objectives.cpp).
std::pair<std::string, std::string> split_report(const std::string& framework, const std::string& key) {
    return {key, "not expressible in " + framework + ": --prompt-length and --completion-length (" + key +
                     " caps prompt + completion together): the plan's sequence is their sum"};
}
const std::pair<std::string, std::string> kTrlAdapterReference = {
    "(reference)",
    "not expressible in TRL 1.16: --reference copy or none (a copy beside a PEFT policy is the trainer's ref_model "
    "argument, no config key; DPOTrainer and KTOTrainer always score a reference, dpo_trainer.py line 908): the plan "
    "takes TRL 1.16's own (--reference auto)"};
const std::pair<std::string, std::string> kTrlFullReference = {
    "(reference)",
    "not expressible in TRL 1.16: --reference none (DPOTrainer and KTOTrainer always score a reference, dpo_trainer.py "
    "line 908): the plan takes TRL 1.16's own (--reference auto)"};
const std::pair<std::string, std::string> kTrlGrpoReference = {
    "(reference)",
    "not expressible in TRL 1.16: --reference copy (GRPOConfig has no key for it: GRPOTrainer disables a PEFT policy's "
    "adapter, else loads a copy, grpo_trainer.py line 984): the plan takes TRL 1.16's own (--reference auto)"};
const std::pair<std::string, std::string> kTrlGrpoPrompt = {
    "max_prompt_length",
    "not expressible in TRL 1.16: --prompt-length (GRPOConfig has no max_prompt_length: prompts are not cut, "
    "grpo_config.py): the plan assumes 512 tokens; give --prompt-length"};
const std::pair<std::string, std::string> kLlamaFactoryReference = {
    "(reference)",
    "not expressible in LLaMA-Factory: --reference precomputed or none (its DPO and KTO trainers set "
    "precompute_ref_log_probs = False and always score a reference, train/dpo/trainer.py line 70): the plan takes "
    "LLaMA-Factory's own (--reference auto)"};
const std::pair<std::string, std::string> kTorchtuneReference = {
    "(reference)",
    "not expressible in torchtune: --reference copy, precomputed or none (recipes/lora_dpo_single_device.py scores the "
    "reference every step with the adapters disabled): the plan takes torchtune's own (--reference auto)"};

const std::map<std::string, std::string> kConfigKey = {{"hf-transformers", "max_length"}, {"llama-factory", "cutoff_len"},
                                                       {"torchtune", "tokenizer.max_seq_len"}};
const std::map<std::string, std::string> kFrameworkName = {
    {"hf-transformers", "TRL 1.16"}, {"llama-factory", "LLaMA-Factory"}, {"torchtune", "torchtune"}};

// SFT: every framework and method, and the settings each maps to a key of its own.
std::vector<Row> sft_rows() {
    std::vector<Row> rows;
    for (const char* fw : {"axolotl", "llama-factory", "torchtune", "hf-transformers", "unsloth"})
        for (const Flags* base : {&kLora, &kQlora, &kFull}) rows.push_back({fw, *base});
    rows.push_back({"mlx-lm", kMlx});
    rows.push_back({"mlx-lm", {"--model", "llama-3.2-1b", "--method", "full", "--batch", "2"}});
    rows.push_back({"hf-transformers", {"--model", "llama-3.2-1b", "--method", "lora", "--precision", "bf16"}});
    rows.push_back({"hf-transformers", {"--model", "llama-3.2-1b", "--method", "full", "--precision", "fp16-mixed"}});
    rows.push_back({"unsloth", {"--model", "llama-3.2-1b", "--method", "qlora", "--quant", "int8"}});
    rows.push_back({"unsloth", {"--model", "llama-3.2-1b", "--method", "lora", "--grad-checkpointing", "off",
                                "--precision", "fp16-mixed"}});
    return rows;
}

// The memory techniques (issue 25) and DoRA, each in the frameworks whose config has a key for it
// (the others' recipes say what they run instead, and read back as that).
std::vector<Row> technique_rows() {
    std::vector<Row> rows;
    for (const char* fw : {"hf-transformers", "axolotl", "llama-factory", "torchtune"}) {
        rows.push_back({fw, kLora + Flags{"--compile"}});
        rows.push_back({fw, kFull + Flags{"--optimizer", "paged-adamw"}});
    }
    for (const char* fw : {"hf-transformers", "axolotl", "llama-factory"}) {
        rows.push_back({fw, kLora + Flags{"--dora"}});
        rows.push_back({fw, kQlora + Flags{"--dora"}});
    }
    for (const char* fw : {"axolotl", "llama-factory", "torchtune"}) rows.push_back({fw, kQlora + Flags{"--activation-offload"}});
    rows.push_back({"torchtune", kFull + Flags{"--optimizer-in-backward"}});
    rows.push_back({"torchtune", kFull + Flags{"--optimizer-in-backward", "--compile", "--optimizer", "paged-adamw8bit"}});
    return rows;
}

// DPO, ORPO, SimPO and KTO: each method, the prompt/completion split, and each reference.
std::vector<Row> preference_rows() {
    std::vector<Row> rows;
    const Flags split = {"--prompt-length", "128", "--completion-length", "384"};
    const std::map<std::string, json> split_back = {{"seq_len", 512}, {"objective.prompt_len", 0}, {"objective.completion_len", 0}};
    for (const std::string fw : {"hf-transformers", "llama-factory"})
        for (const std::string objective : {"dpo", "orpo", "simpo", "kto"}) {
            const Flags o = {"--objective", objective};
            for (const Flags* base : {&kLora, &kQlora, &kFull}) rows.push_back({fw, *base + o});
            rows.push_back({fw, kLora + o + split, split_back, {split_report(kFrameworkName.at(fw), kConfigKey.at(fw))},
                            "Not expressible in " + kFrameworkName.at(fw) + ": --prompt-length and --completion-length"});
        }
    rows.push_back({"torchtune", kLora + Flags{"--objective", "dpo"}});
    rows.push_back({"torchtune", kQlora + Flags{"--objective", "dpo"}});
    rows.push_back({"torchtune", kLora + Flags{"--objective", "dpo"} + split, split_back,
                    {split_report("torchtune", "tokenizer.max_seq_len")},
                    "Not expressible in torchtune: --prompt-length and --completion-length"});
    const json auto_ref = "auto";
    for (const std::string objective : {"dpo", "kto"}) {
        const Flags o = {"--objective", objective};
        auto ref = [&](const Flags& base, const char* r) { return base + o + Flags{"--reference", r}; };
        // TRL: precomputed is a key; a full plan's copy is TRL's own; a LoRA policy's copy and no reference are not expressible.
        rows.push_back({"hf-transformers", ref(kLora, "precomputed")});
        rows.push_back({"hf-transformers", ref(kFull, "precomputed")});
        rows.push_back({"hf-transformers", ref(kFull, "copy"), {{"objective.reference", auto_ref}}});
        rows.push_back({"hf-transformers", ref(kLora, "adapter-off"), {{"objective.reference", auto_ref}}});
        rows.push_back({"hf-transformers", ref(kLora, "copy"), {{"objective.reference", auto_ref}}, {kTrlAdapterReference},
                        "Not expressible in TRL 1.16's config: a reference copy beside a LoRA policy", false});
        rows.push_back({"hf-transformers", ref(kQlora, "copy"), {{"objective.reference", auto_ref}}, {kTrlAdapterReference},
                        "Not expressible in TRL 1.16's config: a reference copy beside a LoRA policy", false});
        rows.push_back({"hf-transformers", ref(kLora, "none"), {{"objective.reference", auto_ref}}, {kTrlAdapterReference},
                        "Not expressible in TRL 1.16: --reference none", false});
        rows.push_back({"hf-transformers", ref(kFull, "none"), {{"objective.reference", auto_ref}}, {kTrlFullReference},
                        "Not expressible in TRL 1.16: --reference none", false});
        // LLaMA-Factory: ref_model is a copy; it cannot precompute, nor train without a reference.
        rows.push_back({"llama-factory", ref(kLora, "copy")});
        rows.push_back({"llama-factory", ref(kFull, "copy"), {{"objective.reference", auto_ref}}});
        rows.push_back({"llama-factory", ref(kLora, "adapter-off"), {{"objective.reference", auto_ref}}});
        for (const Flags* base : {&kLora, &kFull}) {
            rows.push_back({"llama-factory", ref(*base, "precomputed"), {{"objective.reference", auto_ref}}, {kLlamaFactoryReference},
                            "Not expressible in LLaMA-Factory: --reference precomputed", false});
            rows.push_back({"llama-factory", ref(*base, "none"), {{"objective.reference", auto_ref}}, {kLlamaFactoryReference},
                            "Not expressible in LLaMA-Factory: --reference none", false});
        }
    }
    // torchtune's lora_dpo_single_device: the adapters disabled, nothing else.
    const Flags dpo = kLora + Flags{"--objective", "dpo", "--reference"};
    rows.push_back({"torchtune", dpo + Flags{"adapter-off"}, {{"objective.reference", auto_ref}}});
    for (const char* r : {"copy", "precomputed", "none"})
        rows.push_back({"torchtune", dpo + Flags{r}, {{"objective.reference", auto_ref}}, {kTorchtuneReference},
                        std::string("Not expressible in torchtune: --reference ") + r, false});
    return rows;
}

// GRPO (TRL): generations, completion length, beta, the colocated vLLM share, the batch in
// completions; the prompt length and a LoRA policy's reference copy are not expressible.
std::vector<Row> grpo_rows() {
    std::vector<Row> rows;
    const Flags grpo = {"--objective", "grpo", "--completion-length", "96"};
    const Flags g = grpo + Flags{"--generations", "4"};
    for (const Flags* base : {&kLora, &kQlora, &kFull}) rows.push_back({"hf-transformers", *base + g});
    rows.push_back({"hf-transformers", kLora + g + Flags{"--beta", "0.04"}});
    rows.push_back({"hf-transformers", kFull + g + Flags{"--beta", "0.04"}});
    rows.push_back({"hf-transformers", kLora + g + Flags{"--vllm-share", "0.3"}});
    rows.push_back({"hf-transformers", kFull + grpo + Flags{"--generations", "2"}});   // 3 prompts: 6 completions
    rows.push_back({"hf-transformers", kFull + g + Flags{"--beta", "0.04", "--reference", "copy"}, {{"objective.reference", "auto"}}});
    rows.push_back({"hf-transformers", kLora + g + Flags{"--beta", "0.04", "--reference", "copy"}, {{"objective.reference", "auto"}},
                    {kTrlGrpoReference}, "Not expressible in TRL 1.16: GRPOTrainer scores the reference", false});
    rows.push_back({"hf-transformers", kLora + g + Flags{"--prompt-length", "128"}, {{"objective.prompt_len", 0}}, {kTrlGrpoPrompt},
                    "Not expressible in TRL 1.16: --prompt-length", false});
    return rows;
}

// Writes the row's recipe, reads it back; "" when it round-trips as the row says, else what did not.
std::string check(const Row& row) {
    const std::string what = row.framework + " " + joined(row.plan);
    const fs::path dir = fs::temp_directory_path() / ("wingspan-roundtrip-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const auto written = run_wingspan(Flags{"recipe", "--framework", row.framework, "--out", dir.string()} + row.plan);
    if (written.code != 0) return what + ": recipe failed: " + written.err;
    std::ifstream in(dir / "predicted.json");
    const json predicted = json::parse(in);
    const fs::path file = dir / (row.framework == "mlx-lm" ? "lora_config.yaml" : "config.yaml");
    const auto read = run_wingspan({"plan", "--from", file.string(), "--json"});
    fs::remove_all(dir);
    if (read.code != 0) return what + ": plan --from failed: " + read.err;
    const json back = json::parse(read.out);
    if (back["framework"] != predicted["framework"]) return what + ": framework came back " + back["framework"].dump();
    if (back["model"]["id"] != predicted["model"]["id"]) return what + ": model came back " + back["model"]["id"].dump();
    const auto wrote = fields(predicted["setup"]), got = fields(back["setup"]);
    for (const auto& [k, v] : wrote) {
        const bool grpo_seq = k == "seq_len" && wrote.at("objective.kind") == "grpo" && !row.back.count(k);   // GRPOConfig has no max_length
        const json want = row.back.count(k) ? row.back.at(k) : v;
        if (!grpo_seq && (!got.count(k) || got.at(k) != want))
            return what + ": setup field " + k + " was written " + v.dump() + ", expected back " + want.dump() + ", came back " +
                   (got.count(k) ? got.at(k).dump() : "nothing");
    }
    if (row.same_bytes && back["total_bytes"] != predicted["total_bytes"])
        return what + ": total_bytes " + predicted["total_bytes"].dump() + " came back " + back["total_bytes"].dump();
    for (const auto& [key, note] : row.reported) {
        const json entry = {{"key", key}, {"note", note}};
        const json& defaults = back["import"]["defaults"];
        if (std::find(defaults.begin(), defaults.end(), entry) == defaults.end())
            return what + ": the import does not report " + entry.dump() + "; its defaults: " + defaults.dump();
    }
    if (!row.recipe_note.empty() && written.out.find(row.recipe_note) == std::string::npos)
        return what + ": the recipe's notes do not say \"" + row.recipe_note + "\": " + written.out;
    return {};
}

}  // namespace

class ConfigImportRoundTripTest : public QObject {
    Q_OBJECT
private slots:
    void everyFrameworkObjectiveAndSetting() {
        std::vector<Row> rows = sft_rows();
        for (auto more : {technique_rows(), preference_rows(), grpo_rows()}) rows.insert(rows.end(), more.begin(), more.end());
        QCOMPARE(rows.size(), std::size_t(119));   // 21 SFT, 19 techniques, 69 preference, 10 GRPO: a lost row shows
        std::string failed;   // every row that did not come back, not only the first
        for (const Row& row : rows)
            if (const std::string f = check(row); !f.empty()) failed += "\n" + f;
        QVERIFY2(failed.empty(), failed.c_str());
    }

    // An SFT plan loses nothing: neither the recipe nor the import reports anything not expressible.
    void sftReportsNothingLost() {
        const fs::path dir = fs::temp_directory_path() / ("wingspan-roundtrip-sft-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        const auto written = run_wingspan({"recipe", "--framework", "hf-transformers", "--out", dir.string(), "--model",
                                           "llama-3.2-1b", "--method", "lora"});
        QVERIFY2(written.code == 0, written.err.c_str());
        QVERIFY2(written.out.find("Not expressible") == std::string::npos, written.out.c_str());
        const auto back = run_wingspan({"plan", "--from", (dir / "config.yaml").string(), "--json"});
        fs::remove_all(dir);
        QVERIFY2(back.code == 0, back.err.c_str());
        QVERIFY2(back.out.find("not expressible") == std::string::npos, back.out.c_str());
    }

    // GRPO at TRL's defaults: the file spells out max_completion_length 512, which the plan left at 0
    // (the framework's default); every byte is the same.
    void grpoAtTrlDefaults() {
        const fs::path dir = fs::temp_directory_path() / ("wingspan-roundtrip-grpo-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        const auto written = run_wingspan({"recipe", "--framework", "hf-transformers", "--out", dir.string(), "--model",
                                           "llama-3.2-1b", "--method", "lora", "--objective", "grpo"});
        QVERIFY2(written.code == 0, written.err.c_str());
        std::ifstream in(dir / "predicted.json");
        const json predicted = json::parse(in);
        const auto read = run_wingspan({"plan", "--from", (dir / "config.yaml").string(), "--json"});
        fs::remove_all(dir);
        QVERIFY2(read.code == 0, read.err.c_str());
        const json back = json::parse(read.out);
        QCOMPARE(back["setup"]["objective"]["completion_len"].get<int>(), 512);
        QCOMPARE(back["total_bytes"], predicted["total_bytes"]);
    }
};

QTEST_GUILESS_MAIN(ConfigImportRoundTripTest)
#include "test_config_import_roundtrip.moc"
