// `wingspan plan --from CONFIG`: real configs of axolotl, LLaMA-Factory, torchtune, TRL/HF, PEFT
// and mlx-lm (tests/fixtures/configs/SOURCES.md) read into the plan their keys mean (the round trip
// from Wingspan's own recipes: test_config_import_roundtrip.cpp).
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_result.hpp"
#include "test_support.hpp"
#include "wingspan/config_import.hpp"
#include "wingspan/errors.hpp"

using nlohmann::json;
using namespace wingspan;
namespace fs = std::filesystem;

namespace {

fs::path fixture(const std::string& name) { return fs::path(WINGSPAN_TEST_FIXTURES_DIR) / "configs" / name; }

std::map<std::string, std::string> flags_of(const ConfigImport& im) {
    std::map<std::string, std::string> m;
    for (const auto& [f, v] : im.flags) m[f] = v;
    return m;
}

ConfigImport import_fixture(const std::string& name) {
    return import_config(read_config_file(fixture(name)), std::nullopt, &test::library());
}

test::CliResult run_wingspan(std::vector<std::string> args) {
    args.insert(args.end(), {"--profiles", WINGSPAN_TEST_PROFILES_DIR});
    return test::run_cli(args);
}

json plan_json(std::vector<std::string> args) {
    args.insert(args.begin(), "plan");
    args.push_back("--json");
    const auto r = run_wingspan(args);
    if (r.code != 0) throw std::runtime_error("plan failed: " + r.err);
    return json::parse(r.out);
}

bool has_note(const std::vector<ConfigNote>& notes, const std::string& key) {
    return std::any_of(notes.begin(), notes.end(), [&](const ConfigNote& n) { return n.key.find(key) != std::string::npos; });
}

}  // namespace

class ConfigImportTest : public QObject {
    Q_OBJECT
private slots:
    void axolotlExamples() {
        auto im = import_fixture("axolotl/lora-1b.yml");
        QCOMPARE(im.format, ConfigFormat::Axolotl);
        auto f = flags_of(im);
        QCOMPARE(f["--model"], std::string("llama-3.2-1b"));   // NousResearch/Llama-3.2-1B -> bundled
        QCOMPARE(f["--method"], std::string("lora"));
        QCOMPARE(f["--rank"], std::string("16"));
        QCOMPARE(f["--alpha"], std::string("32"));
        QCOMPARE(f["--targets"], std::string("q,k,v,o,gate,up,down"));
        QCOMPARE(f["--seq"], std::string("2048"));
        QCOMPARE(f["--batch"], std::string("2"));
        QCOMPARE(f["--grad-accum"], std::string("2"));
        QCOMPARE(f["--optimizer"], std::string("adamw8bit"));   // adamw_8bit
        QCOMPARE(f["--precision"], std::string("bf16-mixed"));  // bf16: auto
        QCOMPARE(f["--attention"], std::string("flash"));
        QVERIFY(has_note(im.ignored, "learning_rate"));
        QVERIFY(has_note(im.read, "sample_packing"));

        f = flags_of(import_fixture("axolotl/qlora-1b.yml"));
        QCOMPARE(f["--method"], std::string("qlora"));
        QCOMPARE(f["--quant"], std::string("nf4"));
        QCOMPARE(f["--rank"], std::string("32"));
        QCOMPARE(f["--grad-accum"], std::string("4"));

        f = flags_of(import_fixture("axolotl/fft-8b.yaml"));
        QCOMPARE(f["--model"], std::string("llama-3.1-8b"));   // NousResearch/Meta-Llama-3.1-8B
        QCOMPARE(f["--method"], std::string("full"));
        QCOMPARE(f["--seq"], std::string("8192"));
        QCOMPARE(f["--optimizer"], std::string("paged-adamw8bit"));

        im = import_fixture("axolotl/instruct-lora-8b.yml");   // load_in_8bit + lora_target_linear
        f = flags_of(im);
        QCOMPARE(f["--hf"], std::string("NousResearch/Meta-Llama-3-8B-Instruct"));   // Llama 3 is not bundled
        QCOMPARE(f["--method"], std::string("qlora"));
        QCOMPARE(f["--quant"], std::string("int8"));
        QCOMPARE(f["--targets"], std::string("all"));
        QCOMPARE(f["--seq"], std::string("4096"));

        // Silent keys take axolotl's schema defaults, and say so.
        im = import_config(parse_config_document("base_model: NousResearch/Llama-3.2-1B\nadapter: lora\n"), std::nullopt,
                           &test::library());
        f = flags_of(im);
        QCOMPARE(f["--seq"], std::string("512"));
        QCOMPARE(f["--batch"], std::string("1"));
        QCOMPARE(f["--grad-checkpointing"], std::string("off"));
        QVERIFY(has_note(im.defaults, "sequence_len"));
    }

    void llamaFactoryExamples() {
        auto im = import_fixture("llama-factory/qwen3_lora_sft.yaml");
        QCOMPARE(im.format, ConfigFormat::LlamaFactory);
        auto f = flags_of(im);
        QCOMPARE(f["--model"], std::string("qwen3-4b"));   // Qwen/Qwen3-4B-Instruct-2507
        QCOMPARE(f["--rank"], std::string("8"));
        QCOMPARE(f["--alpha"], std::string("16"));           // default: rank × 2
        QCOMPARE(f["--targets"], std::string("all"));
        QCOMPARE(f["--seq"], std::string("2048"));           // cutoff_len
        QCOMPARE(f["--batch"], std::string("1"));
        QCOMPARE(f["--grad-accum"], std::string("8"));
        QCOMPARE(f["--grad-checkpointing"], std::string("on"));   // on by default in LLaMA-Factory
        QVERIFY(has_note(im.defaults, "disable_gradient_checkpointing"));
        QVERIFY(has_note(im.defaults, "lora_alpha"));

        f = flags_of(import_fixture("llama-factory/qwen3_lora_sft_otfq.yaml"));
        QCOMPARE(f["--method"], std::string("qlora"));
        QCOMPARE(f["--quant"], std::string("nf4-dq"));   // quantization_bit 4, double_quantization default true
        f = flags_of(import_fixture("llama-factory/qwen3_full_sft.yaml"));
        QCOMPARE(f["--method"], std::string("full"));
        QCOMPARE(f["--sharding"], std::string("zero3"));   // deepspeed: examples/deepspeed/ds_z3_config.json
        f = flags_of(import_fixture("llama-factory/qwen3_lora_sft_ds3.yaml"));
        QCOMPARE(f["--sharding"], std::string("zero3"));
        f = flags_of(import_fixture("llama-factory/llama3_lora_sft.yaml"));
        QCOMPARE(f["--hf"], std::string("meta-llama/Meta-Llama-3-8B-Instruct"));
    }

    void torchtuneRecipes() {
        auto im = import_fixture("torchtune/8B_lora_single_device.yaml");
        QCOMPARE(im.format, ConfigFormat::Torchtune);
        auto f = flags_of(im);
        QCOMPARE(f["--model"], std::string("llama-3.1-8b"));   // torchtune.models.llama3_1.lora_llama3_1_8b
        QCOMPARE(f["--method"], std::string("lora"));
        QCOMPARE(f["--targets"], std::string("q,v,o,gate,up,down"));   // q/v/output_proj + apply_lora_to_mlp
        QCOMPARE(f["--rank"], std::string("8"));
        QCOMPARE(f["--batch"], std::string("2"));
        QCOMPARE(f["--grad-accum"], std::string("8"));
        QCOMPARE(f["--precision"], std::string("bf16"));
        QCOMPARE(f["--framework"], std::string("torchtune"));
        QVERIFY(!f.count("--seq"));   // max_seq_len: null
        QVERIFY(has_note(im.ignored, "tokenizer.max_seq_len"));
        f = flags_of(import_fixture("torchtune/8B_qlora_single_device.yaml"));
        QCOMPARE(f["--method"], std::string("qlora"));
        f = flags_of(import_fixture("torchtune/8B_full_single_device.yaml"));
        QCOMPARE(f["--method"], std::string("full"));
        QCOMPARE(f["--optimizer"], std::string("paged-adamw8bit"));   // bitsandbytes.optim.PagedAdamW8bit
        // optimizer_in_bwd: True is the technique; compile and enable_activation_offloading False are read as off.
        QVERIFY(f.count("--optimizer-in-backward") && !f.count("--compile") && !f.count("--activation-offload"));
        QVERIFY(has_note(import_fixture("torchtune/8B_full_single_device.yaml").read, "enable_activation_offloading"));
    }

    void hfTrlAndPeft() {
        auto im = import_fixture("hf-trl/zephyr-7b-beta_sft_config_qlora.yaml");
        QCOMPARE(im.format, ConfigFormat::HfTrl);
        auto f = flags_of(im);
        QCOMPARE(f["--model"], std::string("mistral-7b-v0.1"));
        QCOMPARE(f["--method"], std::string("qlora"));
        QCOMPARE(f["--quant"], std::string("nf4"));
        QCOMPARE(f["--rank"], std::string("16"));
        QCOMPARE(f["--alpha"], std::string("16"));
        QCOMPARE(f["--seq"], std::string("2048"));   // max_seq_length
        QCOMPARE(f["--batch"], std::string("4"));
        QCOMPARE(f["--grad-accum"], std::string("2"));
        f = flags_of(import_fixture("hf-trl/zephyr-7b-beta_sft_config_full.yaml"));
        QCOMPARE(f["--method"], std::string("full"));
        QCOMPARE(f["--batch"], std::string("16"));
        im = import_fixture("hf-trl/trl_example_config.yaml");
        f = flags_of(im);
        QCOMPARE(f["--model"], std::string("qwen2.5-0.5b"));
        QCOMPARE(f["--seq"], std::string("1024"));   // SFTConfig's default max_length
        QCOMPARE(f["--batch"], std::string("8"));    // TrainingArguments' default
        QVERIFY(has_note(im.defaults, "per_device_train_batch_size"));

        for (const char* file : {"hf-trl/adapter_config_llama-2-7b.json", "hf-trl/adapter_config_tinyllama.json",
                                 "hf-trl/adapter_config_llama-3.2-3b.json"})
            QCOMPARE(import_fixture(file).format, ConfigFormat::PeftAdapter);
        f = flags_of(import_fixture("hf-trl/adapter_config_llama-2-7b.json"));
        QCOMPARE(f["--rank"], std::string("64"));
        QCOMPARE(f["--targets"], std::string("q,v"));
        f = flags_of(import_fixture("hf-trl/adapter_config_tinyllama.json"));
        QCOMPARE(f["--targets"], std::string("q,k,v,o,gate,up,down"));
        QCOMPARE(f["--alpha"], std::string("32"));
        f = flags_of(import_fixture("hf-trl/adapter_config_llama-3.2-3b.json"));
        QCOMPARE(f["--model"], std::string("llama-3.2-3b"));
        QCOMPARE(f["--rank"], std::string("8"));
        // An adapter on the LM head (PEFT's lm_head) is the target "head".
        json peft = read_config_file(fixture("hf-trl/adapter_config_llama-2-7b.json"));
        peft["target_modules"] = {"q_proj", "v_proj", "lm_head"};
        QCOMPARE(flags_of(import_config(peft, std::nullopt, &test::library()))["--targets"], std::string("q,v,head"));
    }

    void mlxLm() {
        auto im = import_fixture("mlx-lm/mlx-lm_lora_config.yaml");
        QCOMPARE(im.format, ConfigFormat::MlxLm);
        auto f = flags_of(im);
        QCOMPARE(f["--model"], std::string("llama-3.2-1b"));   // mlx-community/Llama-3.2-1B-Instruct-bf16
        QCOMPARE(f["--lora-layers"], std::string("16"));
        QCOMPARE(f["--rank"], std::string("8"));
        QCOMPARE(f["--alpha"], std::string("160"));   // scale 20 × rank 8
        QCOMPARE(f["--targets"], std::string("q,v"));
        QCOMPARE(f["--batch"], std::string("4"));
        QCOMPARE(f["--seq"], std::string("2048"));
        QCOMPARE(f["--grad-checkpointing"], std::string("off"));
        f = flags_of(import_fixture("mlx-lm/mlx-examples_lora_config.yaml"));
        QCOMPARE(f["--hf"], std::string("mlx_model"));
        QCOMPARE(f["--lora-layers"], std::string("16"));
        im = import_fixture("mlx-lm/mlx-examples_lora_config_2024-03.yaml");   // lora_layers, alpha beside scale
        f = flags_of(im);
        QCOMPARE(f["--lora-layers"], std::string("16"));
        QCOMPARE(f["--alpha"], std::string("80"));   // scale 10 × rank 8
        QVERIFY(has_note(im.ignored, "lora_parameters.alpha"));
        f = flags_of(import_config(parse_config_document("model: mlx-community/Llama-3.2-1B-Instruct-bf16\n"),
                                   ConfigFormat::MlxLm, &test::library()));
        QCOMPARE(f["--targets"], std::string("all"));   // every linear of an adapted block
        QCOMPARE(f["--rank"], std::string("8"));
    }

    void planFromConfigEndToEnd() {
        // The file's model is not bundled; --model after --from overrides it, and the rest stands.
        const json j = plan_json({"--from", fixture("llama-factory/llama3_lora_sft.yaml").string(), "--model", "llama-3.1-8b"});
        QCOMPARE(j["model"]["id"].get<std::string>(), std::string("llama-3.1-8b"));
        QCOMPARE(j["setup"]["seq_len"].get<int>(), 2048);
        QCOMPARE(j["setup"]["grad_accum"].get<int>(), 8);
        QCOMPARE(j["setup"]["lora_rank"].get<int>(), 8);
        QCOMPARE(j["setup"]["grad_checkpointing"].get<bool>(), true);
        QCOMPARE(j["import"]["format"].get<std::string>(), std::string("llama-factory"));
        QVERIFY(!j["import"]["ignored"].empty());
        // A flag after --from overrides the file's value.
        const json k = plan_json({"--from", fixture("axolotl/lora-1b.yml").string(), "--seq", "512"});
        QCOMPARE(k["setup"]["seq_len"].get<int>(), 512);
        QCOMPARE(k["setup"]["micro_batch"].get<int>(), 2);
        // The text output lists what was read, assumed and ignored.
        const auto t = run_wingspan({"plan", "--from", fixture("torchtune/8B_qlora_single_device.yaml").string(), "--machine", "rtx-4090"});
        QCOMPARE(t.code, 0);
        QVERIFY(t.out.find("Keys read:") != std::string::npos);
        QVERIFY(t.out.find("Keys ignored:") != std::string::npos);
        QVERIFY(t.out.find("NVIDIA GeForce RTX 4090") != std::string::npos);
        // --from-format forces a reader; a file no reader knows is refused clearly.
        const auto bad = run_wingspan({"plan", "--from", fixture("SOURCES.md").string()});
        QCOMPARE(bad.code, 2);
        const auto forced = run_wingspan({"plan", "--from", fixture("hf-trl/trl_example_config.yaml").string(), "--from-format", "nope"});
        QCOMPARE(forced.code, 2);
        QVERIFY(forced.err.find("--from-format expects") != std::string::npos);
    }

    void hostileDocuments() {
        QVERIFY_THROWS_EXCEPTION(InputError, parse_config_document("a: [1, 2"));
        QVERIFY_THROWS_EXCEPTION(InputError, parse_config_document("- just\n- a list\n"));
        // An alias bomb: 9 levels of 10 references each would be 10^9 values.
        std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
        for (int i = 1; i < 10; ++i) {
            bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
            for (int j = 0; j < 10; ++j) bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
            bomb += "]\n";
        }
        QElapsedTimer t;
        t.start();
        QVERIFY_THROWS_EXCEPTION(InputError, parse_config_document(bomb));
        QVERIFY(t.elapsed() < 5000);
        QVERIFY_THROWS_EXCEPTION(InputError, detect_config_format(parse_config_document("foo: 1\n")));
        // Nesting 100,000 deep is refused (yaml-cpp's depth guard), not a stack overflow.
        QVERIFY_THROWS_EXCEPTION(InputError, parse_config_document(std::string(100000, '[')));
        QVERIFY_THROWS_EXCEPTION(InputError, parse_config_document(std::string(2 << 20, ' ') + "a: 1"));   // over 1 MiB
        // Scalars as PyYAML reads them.
        const json d = parse_config_document("a: yes\nb: '8'\nc: 2e-5\nd: ~\ne: 16\n");
        QCOMPARE(d["a"].get<bool>(), true);
        QVERIFY(d["b"].is_string());
        QVERIFY(d["c"].is_number_float());
        QVERIFY(d["d"].is_null());
        QCOMPARE(d["e"].get<int>(), 16);
    }

    // Issue 31: preference and RL configs read into --objective and its knobs.
    void objectiveConfigs() {
        // alignment-handbook's DPO QLoRA: DPOConfig keys (beta, max_prompt_length) -> DPO.
        auto im = import_fixture("hf-trl/zephyr-7b-beta_dpo_config_qlora.yaml");
        auto f = flags_of(im);
        QCOMPARE(f["--objective"], std::string("dpo"));
        QCOMPARE(f["--method"], std::string("qlora"));
        QCOMPARE(f["--seq"], std::string("1024"));    // max_length: prompt + completion
        QCOMPARE(f["--batch"], std::string("4"));     // pairs per device
        QVERIFY(!f.count("--reference"));              // auto: the adapter disabled, as TRL does for PEFT
        QVERIFY(!f.count("--beta"));                   // DPO's beta changes no memory
        QVERIFY(has_note(im.read, "max_prompt_length") && has_note(im.read, "beta"));

        // open-r1's GRPO demo: 16 completions per device in groups of 7 -> 3 prompts (rounded up);
        // vllm_device (TRL before vllm_mode) put vLLM on a GPU of its own: no share of this one.
        im = import_fixture("hf-trl/open-r1_qwen2.5-1.5b_grpo_config_demo.yaml");
        f = flags_of(im);
        QCOMPARE(f["--objective"], std::string("grpo"));
        QCOMPARE(f["--generations"], std::string("7"));
        QCOMPARE(f["--completion-length"], std::string("1024"));
        QCOMPARE(f["--prompt-length"], std::string("512"));
        QCOMPARE(f["--batch"], std::string("3"));
        QCOMPARE(f["--beta"], std::string("0"));   // silent: TRL 1.16's default, no reference
        QVERIFY(!f.count("--vllm-share"));
        QVERIFY(has_note(im.defaults, "beta") && has_note(im.ignored, "vllm_device"));
        json plan = plan_json({"--from", fixture("hf-trl/open-r1_qwen2.5-1.5b_grpo_config_demo.yaml").string()});
        QCOMPARE(plan["setup"]["objective"]["kind"], json("grpo"));
        QCOMPARE(plan["setup"]["objective"]["generations"], json(7));
        QCOMPARE(plan["setup"]["micro_batch"], json(3));

        // Colocated vLLM (TRL 1.16's default vllm_mode) takes its share of the training GPU.
        im = import_config(parse_config_document("model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct\nuse_vllm: true\n"
                                                 "per_device_train_batch_size: 8\nbeta: 0.04\nmax_completion_length: 256\n"),
                           std::nullopt, &test::library());
        f = flags_of(im);
        QCOMPARE(f["--objective"], std::string("grpo"));
        QCOMPARE(f["--vllm-share"], std::string("0.3"));   // vllm_gpu_memory_utilization's default
        QCOMPARE(f["--generations"], std::string("8"));
        QCOMPARE(f["--batch"], std::string("1"));
        QCOMPARE(f["--beta"], std::string("0.04"));
        // The window takes the same flags as a setup (ConfigImport::setup_json), the objective's too.
        const TrainingSetup opened = TrainingSetup::from_json(im.setup_json());
        QCOMPARE(opened.objective.kind, Objective::Grpo);
        QCOMPARE(opened.objective.generations, std::int64_t(8));
        QCOMPARE(opened.objective.vllm_share, 0.3);
        QCOMPARE(opened.objective.beta, 0.04);
        QCOMPARE(opened.objective.completion_len, std::int64_t(256));
        // TRL 1.16 has no prompt length: reported with the defaults, the plan keeps its own.
        QVERIFY(has_note(im.defaults, "max_prompt_length") && !f.count("--prompt-length"));
        // precompute_ref_log_probs: no reference while training; KTO and SimPO by their keys.
        f = flags_of(import_config(parse_config_document("model_name_or_path: x/y\nbeta: 0.1\nprecompute_ref_log_probs: true\n"),
                                   std::nullopt, &test::library()));
        QCOMPARE(f["--objective"], std::string("dpo"));
        QCOMPARE(f["--reference"], std::string("precomputed"));
        f = flags_of(import_config(parse_config_document("model_name_or_path: x/y\ndesirable_weight: 1.0\n"), std::nullopt,
                                   &test::library()));
        QCOMPARE(f["--objective"], std::string("kto"));
        f = flags_of(import_config(parse_config_document("model_name_or_path: x/y\nloss_type: simpo\ncpo_alpha: 0\n"),
                                   std::nullopt, &test::library()));
        QCOMPARE(f["--objective"], std::string("simpo"));

        // LLaMA-Factory: stage and pref_loss.
        im = import_fixture("llama-factory/llama3_lora_dpo.yaml");
        f = flags_of(im);
        QCOMPARE(f["--objective"], std::string("dpo"));   // pref_loss: sigmoid
        QCOMPARE(f["--seq"], std::string("2048"));
        QVERIFY(has_note(im.read, "pref_beta"));
        QCOMPARE(flags_of(import_fixture("llama-factory/llama3_lora_kto.yaml"))["--objective"], std::string("kto"));
        for (const auto& [loss, objective] : std::vector<std::pair<std::string, std::string>>{
                 {"orpo", "orpo"}, {"simpo", "simpo"}, {"ipo", "dpo"}, {"kto_pair", "dpo"}}) {
            f = flags_of(import_config(parse_config_document("stage: dpo\nfinetuning_type: lora\npref_loss: " + loss + "\n"),
                                       std::nullopt, &test::library()));
            QCOMPARE(f["--objective"], objective);
        }
        f = flags_of(import_config(parse_config_document("stage: dpo\nfinetuning_type: lora\nref_model: m/ref\n"), std::nullopt,
                                   &test::library()));
        QCOMPARE(f["--reference"], std::string("copy"));   // a separate reference beside the adapter
        QVERIFY(!flags_of(import_fixture("llama-factory/qwen3_lora_sft.yaml")).count("--objective"));

        // torchtune's LoRA DPO recipe config: DPOLoss.
        im = import_fixture("torchtune/8B_lora_dpo_single_device.yaml");
        f = flags_of(im);
        QCOMPARE(f["--objective"], std::string("dpo"));
        QCOMPARE(f["--model"], std::string("llama-3.1-8b"));
        QCOMPARE(f["--method"], std::string("lora"));
        QCOMPARE(f["--batch"], std::string("4"));
        plan = plan_json({"--from", fixture("torchtune/8B_lora_dpo_single_device.yaml").string(), "--seq", "1024"});
        QCOMPARE(plan["setup"]["objective"]["kind"], json("dpo"));
        QVERIFY(!flags_of(import_fixture("torchtune/8B_lora_single_device.yaml")).count("--objective"));
    }

    // Every recipe Wingspan writes as a config file reads back as the plan it was written from
    // (the plans each framework can express; what it cannot, its recipe says it does instead).
    // Issue 26: a config's packing key is the plan's padding (`--padding`, used with --data), and
    // each framework's default where the file is silent is listed as assumed.
    void packingBecomesPadding() {
        struct Case {
            const char* yaml;
            const char* padding;
            bool assumed;
        };
        const Case cases[] = {
            {"base_model: m\nsample_packing: true\n", "packed", false},
            {"base_model: m\nsample_packing: false\n", "dynamic", false},
            {"base_model: m\npad_to_sequence_len: true\n", "max", false},
            {"base_model: m\n", "dynamic", true},
            {"finetuning_type: lora\npacking: true\n", "packed", false},
            {"finetuning_type: lora\nneat_packing: true\n", "packed", false},
            {"finetuning_type: full\nstage: pt\n", "packed", true},
            {"finetuning_type: full\nstage: pt\npacking: false\n", "dynamic", false},
            {"finetuning_type: lora\n", "dynamic", true},
            {"model_name_or_path: m\npacking: true\n", "packed", false},
            {"model_name_or_path: m\npacking: false\n", "dynamic", false},
            {"model_name_or_path: m\n", "dynamic", true},
            {"model:\n  _component_: torchtune.models.llama3_2.lora_llama3_2_1b\ndataset:\n  packed: true\n", "packed", false},
            {"model:\n  _component_: torchtune.models.llama3_2.lora_llama3_2_1b\n", "dynamic", true},
            {"fine_tune_type: lora\nmodel: m\n", "dynamic", true},
            {"from_pretrained:\n  model_name: m\nsft_config:\n  packing: true\n", "packed", false},
        };
        for (const auto& c : cases) {
            const ConfigImport im = import_config(parse_config_document(c.yaml), std::nullopt, &test::library());
            QVERIFY2(im.flag_value("--padding") == c.padding, (std::string(c.yaml) + " gave " + im.flag_value("--padding")).c_str());
            const bool in_defaults = std::any_of(im.defaults.begin(), im.defaults.end(),
                                                 [](const ConfigNote& n) { return n.note.rfind("--padding", 0) == 0; });
            const bool in_read = std::any_of(im.read.begin(), im.read.end(),
                                             [](const ConfigNote& n) { return n.note.rfind("--padding", 0) == 0; });
            QVERIFY2(in_defaults == c.assumed && in_read != c.assumed, c.yaml);
        }
        // A PEFT adapter file says nothing of batches: no padding is made up.
        QVERIFY(import_fixture("hf-trl/adapter_config_tinyllama.json").flag_value("--padding").empty());
    }
};

QTEST_GUILESS_MAIN(ConfigImportTest)
#include "test_config_import.moc"
