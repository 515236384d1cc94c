// Framework profiles as behaviour: each framework's dtypes, quantization, loss and defaults
// change the prediction where the frameworks differ, checked with hand-computed bytes.
#include <QtTest>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cli.hpp"
#include "test_support.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/framework_spec.hpp"

using namespace wingspan;

namespace {

std::int64_t term_bytes(const MemoryEstimate& e, Component c) {
    std::int64_t b = 0;
    for (const auto& t : e.terms)
        if (t.component == c && !t.on_host && t.formula.find("temporaries") == std::string::npos) b += t.bytes;
    return b;
}

const Architecture& llama8b() { return test::library().model("llama-3.1-8b").arch; }

TrainingSetup qlora_setup() {
    TrainingSetup s;
    s.method = Method::Qlora;
    s.quantization = Quantization::Nf4;
    s.seq_len = 512;
    return s;
}

// LoRA in bf16 (no autocast), 2 sequences of 2048 tokens: the loss tests' setup.
TrainingSetup lora_bf16_2x2048() {
    TrainingSetup s;
    s.method = Method::Lora;
    s.precision = Precision::Bf16;
    s.seq_len = 2048;
    s.micro_batch = 2;
    return s;
}

struct CliResult {
    int code;
    std::string out, err;
};

CliResult run_cli(std::vector<std::string> args) {
    args.push_back("--profiles");
    args.push_back(WINGSPAN_TEST_PROFILES_DIR);
    std::ostringstream out, err;
    const int code = wingspan::cli::run(args, out, err);
    return {code, out.str(), err.str()};
}

}  // namespace

class TestFrameworks : public QObject {
    Q_OBJECT
private slots:
    void ids_and_aliases() {
        const auto& lib = test::library();
        for (const char* id : {"hf-transformers", "torchtune", "litgpt", "unsloth", "mlx-lm", "libtorch-cpu"}) {
            const FrameworkProfile& f = lib.framework(id);
            QCOMPARE(f.id, std::string(id));
            QVERIFY2(!f.sources.empty(), id);
        }
        QCOMPARE(lib.framework("pytorch-cuda").id, std::string("hf-transformers"));
        QCOMPARE(lib.framework("mlx").id, std::string("mlx-lm"));
        QVERIFY_THROWS_EXCEPTION(InputError, lib.framework("pytorch-cudaa"));
        // The look-ups that do not throw agree with the ones that do, aliases included.
        QCOMPARE(lib.find_framework("pytorch-cuda"), &lib.framework("pytorch-cuda"));
        QCOMPARE(lib.find_framework("torchtune"), &lib.framework("torchtune"));
        QVERIFY(lib.find_framework("pytorch-cudaa") == nullptr);
        QCOMPARE(lib.find_machine("rtx-4090"), &lib.machine("rtx-4090"));
        QVERIFY(lib.find_machine("rtx-4090x") == nullptr);
        QCOMPARE(ProfileLibrary::default_framework_id(MachineKind::Gpu), std::string("hf-transformers"));
        QCOMPARE(ProfileLibrary::default_framework_id(MachineKind::Unified), std::string("mlx-lm"));
        QCOMPARE(ProfileLibrary::default_framework_id(MachineKind::Cpu), std::string("libtorch-cpu"));
        QCOMPARE(lib.framework_for(lib.machine("rtx-4090")).id, std::string("hf-transformers"));
        QCOMPARE(lib.framework_for(lib.machine("m4-max-128gb")).id, std::string("mlx-lm"));
        // The picker: a machine's own framework first, then the others of its kind.
        const auto cuda = lib.frameworks_for(lib.machine("rtx-4090"));
        QCOMPARE(cuda.front()->id, std::string("hf-transformers"));
        QCOMPARE(cuda.size(), size_t(5));   // hf-transformers, libtorch-cuda, litgpt, torchtune, unsloth
        const auto apple = lib.frameworks_for(lib.machine("m4-max-128gb"));
        QCOMPARE(apple.size(), size_t(2));   // mlx-lm, libtorch-mps
        QCOMPARE(apple.front()->id, std::string("mlx-lm"));
        for (const auto* f : cuda) QVERIFY2(f->id != "mlx-lm" && f->id != "libtorch-cpu", f->id.c_str());
    }

    void every_behaviour_field_cites_a_source() {
        for (const auto& f : test::library().frameworks()) {
            if (f.id == "libtorch-cpu") continue;
            for (const auto& [key, value] : f.behaviour.items()) {
                if (key == "aliases" || key == "devices") continue;
                bool cited = false;
                for (const auto& [s, text] : f.sources) cited |= s.rfind(key, 0) == 0 && !text.empty();
                QVERIFY2(cited, (f.id + ": " + key + " has no source").c_str());
            }
        }
    }

    void mlx_affine_4bit_is_not_nf4() {
        // Apple prices QLoRA as MLX affine 4-bit: 0.5 B + 4 B (bf16 scale and bias) per 64
        // values, embeddings and head quantized too; NF4: 0.5 B + 4 B fp32 absmax per 64, linears only.
        const auto& lib = test::library();
        TrainingSetup s = qlora_setup();
        const Architecture& a = llama8b();
        const auto mlx = estimate_memory(a, s, lib.framework("mlx-lm"));
        const auto hf = estimate_memory(a, s, lib.framework("hf-transformers"));
        std::int64_t linear = 0, embed = 0;
        for (const auto& g : a.tensor_groups()) {
            if (g.kind == TensorKind::Linear) linear += g.total_elements();
            if (g.kind == TensorKind::Embedding || g.kind == TensorKind::Head) embed += g.total_elements();
        }
        QCOMPARE(mlx.params.quantized, linear + embed);
        QCOMPARE(term_bytes(mlx, Component::QuantConstants), (linear + embed) / 64 * 4);
        QCOMPARE(hf.params.quantized, linear);
        QCOMPARE(term_bytes(hf, Component::QuantConstants), linear / 64 * 4);
        QVERIFY(mlx.explain(Component::QuantConstants).find("scale + bias") != std::string::npos);
        // HF's preparation upcasts the 1.05 B embedding and head parameters (and norms) to fp32.
        QVERIFY(term_bytes(hf, Component::FrozenWeights) - linear / 2 >= embed * 4);
        QVERIFY(term_bytes(mlx, Component::FrozenWeights) < hf.components.at(Component::FrozenWeights) - embed * 3);
    }

    void mlx_serving_reads_packed_codes_and_queues_arrays() {
        // mlx-lm serving Qwen3-4B at 2,176 tokens (its BENCHMARKS.md setup): the KV cache holds 2,304
        // positions (blocks of 256), 11 × 50 MiB of arrays stay with queued command buffers, and a
        // 4-bit plan dequantizes no weight (quantized_matmul reads the codes); the same serve plan
        // under bitsandbytes still dequantizes its largest quantized weight, a 2,560 × 9,728 MLP linear.
        const auto& lib = test::library();
        const Architecture& a = lib.model("qwen3-4b").arch;
        TrainingSetup s;
        s.method = Method::Serve;
        s.precision = Precision::Bf16;
        s.seq_len = 2176;
        const std::int64_t kv = 2LL * 36 * 1024 * 2304 * 2, queued = 11LL * 50 * 1024 * 1024;
        const auto bf16 = estimate_memory(a, s, lib.framework("mlx-lm"));
        QCOMPARE(term_bytes(bf16, Component::KvCache), kv);
        QVERIFY(bf16.explain(Component::KvCache).find("2,304 positions (2,176 tokens in blocks of 256)") != std::string::npos);
        QVERIFY(bf16.explain(Component::Activations).find("queued command buffers") != std::string::npos);
        s.quantization = Quantization::Nf4;
        const auto q4 = estimate_memory(a, s, lib.framework("mlx-lm"));
        const std::int64_t workspace = 2176LL * (2 * 2560 + 2 * 9728 + 4096 + 2 * 1024) * 2;
        QCOMPARE(q4.components.at(Component::Activations), workspace + queued);
        QCOMPARE(bf16.components.at(Component::Activations), workspace + queued);
        const auto hf = estimate_memory(a, s, lib.framework("hf-transformers"));
        QCOMPARE(hf.components.at(Component::Activations), workspace + 2560LL * 9728 * 2);
        QCOMPARE(term_bytes(hf, Component::KvCache), 2LL * 36 * 1024 * 2176 * 2);
    }

    void loss_differs_by_framework() {
        // 2 × 2048 tokens × 128,256 vocab in bf16. transformers: the Trainer frees the model output
        // (the 16-bit logits) before backward: the fp32 log-softmax kept and two fp32 gradients in
        // backward, (4 + 8) B per token·vocab (in forward 2 + 4 + 4: logits, upcast, log-softmax). torchtune: no
        // logits kept, fp32 log-softmax kept, 8 chunks of 512 tokens: 4 B + (8 B)/8.
        const auto& lib = test::library();
        TrainingSetup s = lora_bf16_2x2048();
        const std::int64_t tv = 4096LL * 128256;
        const auto hf = estimate_memory(llama8b(), s, lib.framework("hf-transformers"));
        const auto tt = estimate_memory(llama8b(), s, lib.framework("torchtune"));
        const auto lg = estimate_memory(llama8b(), s, lib.framework("litgpt"));
        const auto un = estimate_memory(llama8b(), s, lib.framework("unsloth"));
        QCOMPARE(term_bytes(hf, Component::LogitsLoss), tv * 12);
        QCOMPARE(term_bytes(tt, Component::LogitsLoss), tv * 4 + tv / 8 * 8);
        // LitGPT: Fabric's bf16-true wrapper hands the head's chunks back in fp32, so fp32 logits and an
        // fp32 log-softmax are kept (8 B); in backward chunks of 128 positions of both rows
        // (x.split(128, dim=1) on [2, 2048, h]: 256 tokens), each with two fp32 gradients. In forward the
        // last chunk's shifted slice is copied (2 rows × 127 positions, fp32). As the model returns: the
        // fp32 logits, the 16-bit chunks they were converted from and the previous micro-batch's fp32
        // logits, which the loop still holds (4 + 2 + 4 B): the most.
        QCOMPARE(test::component_at(lg, "forward_end", Component::LogitsLoss), tv * 8 + 2 * 127LL * 128256 * 4);
        QCOMPARE(test::component_at(lg, "forward_output", Component::LogitsLoss), tv * 10);
        QCOMPARE(test::component_at(lg, "loss_backward", Component::LogitsLoss), tv * 8 + 256LL * 128256 * 8);
        QCOMPARE(term_bytes(lg, Component::LogitsLoss), tv * 10);
        // Unsloth: 4096 × 128,256 × 4 B = 2.1 GB of fp32 logits fits its 4 GiB chunk target: one
        // chunk, nothing kept, the hidden states' gradient kept: (2 + 4 + 12) B in forward.
        QCOMPARE(term_bytes(un, Component::LogitsLoss), tv * 18 + 4096LL * 4096 * 2);
        // At 4 × 8192 tokens the fp32 logits (16.8 GB) need 4 chunks of 8192 tokens.
        s.seq_len = 8192;
        s.micro_batch = 4;
        const auto un_long = estimate_memory(llama8b(), s, lib.framework("unsloth"));
        QVERIFY(un_long.explain(Component::LogitsLoss).find("4 chunks of 8,192 tokens") != std::string::npos);
    }

    void precision_as_frameworks_mean_it() {
        const auto& lib = test::library();
        TrainingSetup s;
        s.method = Method::Full;
        const Architecture& a = test::library().model("llama-3.2-1b").arch;
        const std::int64_t p = count_parameters(a, s).trainable;
        // bf16-true (torchtune's default): 2 B weights, 2 B gradients, 2 × 2 B moments, no master.
        const TrainingSetup tt_setup = apply_framework_defaults(s, lib.framework("torchtune"), {});
        QCOMPARE(tt_setup.precision, Precision::Bf16);
        const auto tt = estimate_memory(a, tt_setup, lib.framework("torchtune"));
        QCOMPARE(term_bytes(tt, Component::TrainableWeights), 2 * p);
        QCOMPARE(tt.term(Component::Gradients)->bytes, 2 * p);   // (the tied embedding's dense gradient is a second term)
        QCOMPARE(term_bytes(tt, Component::MasterWeights), std::int64_t(0));
        QCOMPARE(term_bytes(tt, Component::OptimizerState), 4 * p);
        // HF bf16-mixed: an fp32 model under autocast, 4 + 4 + 8, no separate master.
        const auto hf = estimate_memory(a, s, lib.framework("hf-transformers"));
        QCOMPARE(term_bytes(hf, Component::TrainableWeights), 4 * p);
        QCOMPARE(term_bytes(hf, Component::MasterWeights), std::int64_t(0));
        QCOMPARE(term_bytes(hf, Component::OptimizerState), 8 * p);
        // A chosen precision is kept; the CLI and window say which is in force.
        ChosenFields chosen;
        chosen.precision = true;
        QCOMPARE(apply_framework_defaults(s, lib.framework("torchtune"), chosen).precision, Precision::Bf16Mixed);
        QVERIFY(precision_in_force(tt_setup, lib.framework("torchtune")).find("no master copy") != std::string::npos);
        QVERIFY(precision_in_force(s, lib.framework("libtorch-cpu")).find("fp32 master copy") != std::string::npos);
        // LoRA under peft: fp32 adapters even in bf16.
        TrainingSetup l;
        l.method = Method::Lora;
        const auto hf_lora = estimate_memory(llama8b(), l, lib.framework("hf-transformers"));
        QCOMPARE(term_bytes(hf_lora, Component::Adapters), 4 * hf_lora.params.adapter);
    }

    void mlx_num_layers_and_dora() {
        const auto& lib = test::library();
        const FrameworkProfile& mlx = lib.framework("mlx-lm");
        TrainingSetup s;
        s.method = Method::Lora;
        s.grad_checkpointing = false;   // as mlx-lm's default
        const TrainingSetup d = apply_framework_defaults(s, mlx, {});
        QVERIFY(!d.grad_checkpointing);
        QCOMPARE(d.lora_layers, std::int64_t(16));
        const Architecture& a = llama8b();   // 32 layers
        const auto all = count_parameters(a, s);
        const auto last16 = count_parameters(a, d);
        QCOMPARE(last16.adapter * 2, all.adapter);
        const auto e_all = estimate_memory(a, s, mlx);
        const auto e_16 = estimate_memory(a, d, mlx);
        QVERIFY(e_16.components.at(Component::Activations) < e_all.components.at(Component::Activations));
        // DoRA: one magnitude per output row of each adapted linear.
        TrainingSetup dora = s;
        dora.dora = true;
        std::int64_t rows = 0;
        for (const auto& g : a.tensor_groups())
            if (g.kind == TensorKind::Linear && s.lora_targets.count(g.role)) rows += g.rows * g.count;
        QCOMPARE(count_parameters(a, dora).adapter - all.adapter, rows);
        QVERIFY(estimate_memory(a, dora, mlx).peak_allocated_bytes > e_all.peak_allocated_bytes);
        TrainingSetup bad = s;
        bad.lora_layers = -1;
        QVERIFY_THROWS_EXCEPTION(InputError, bad.validate(a));
    }

    void this_machine_is_stable() {
        const MachineProfile a = detect_this_machine();
        const MachineProfile b = detect_this_machine();
        QCOMPARE(a.usable_bytes, b.usable_bytes);
        QVERIFY(a.usable_bytes < a.memory_bytes && a.usable_bytes >= a.memory_bytes / 2);
    }

    void this_machine_knows_its_bf16_instructions() {
        QCOMPARE(cpuinfo_bf16_isa("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma avx512f\n"), std::string());
        QCOMPARE(cpuinfo_bf16_isa("flags\t\t: avx2 avx512f avx512_bf16 avx512vl\n"), std::string("avx512_bf16"));
        QCOMPARE(cpuinfo_bf16_isa("flags\t\t: avx512_bf16 amx_bf16 amx_tile\n"), std::string("amx_bf16"));
        QCOMPARE(cpuinfo_bf16_isa("flags\t\t: avx512_bf16x\n"), std::string());   // whole words only
        QCOMPARE(cpuinfo_bf16_isa(""), std::string());
        std::ifstream f("/proc/cpuinfo");
        const std::string here(std::istreambuf_iterator<char>(f), {});
        const MachineProfile m = detect_this_machine();
        QCOMPARE(m.bf16, !cpuinfo_bf16_isa(here).empty());
        QCOMPARE(m.tflops_bf16 > 0, m.bf16);
    }

    void old_profile_without_behaviour_predicts_as_before() {
        // A profile file without the behaviour sections (as libtorch-cuda/-mps were written) keeps the
        // reference path: the bare framework and one parsed from JSON agree to the byte.
        const FrameworkProfile parsed = parse_framework_profile(
            nlohmann::json{{"id", "bare"}, {"name", "bare"}, {"optimizer_step", "per_tensor"}}, "bare.json");
        TrainingSetup s;
        s.method = Method::Qlora;
        const auto x = estimate_memory(test::tiny_arch(), s, parsed);
        const auto y = estimate_memory(test::tiny_arch(), s, test::bare_framework());
        QCOMPARE(x.total_bytes, y.total_bytes);
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(
            nlohmann::json{{"id", "x"}, {"dtypes", {{"bf16", {{"adapters", 4}}}}}}, "x.json"));
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(
            nlohmann::json{{"id", "x"}, {"quantization", {{"format", "gguf"}}}}, "x.json"));
    }

    // A typo in a profile key is an error naming the file and the key (issue 25), at the top
    // level and inside a section, with the key it was probably meant to be.
    // Unsloth 2025.1 sent more than 1,024 tokens to Apple's Cut Cross-Entropy (profile release
    // "2025.1"): no logits, an fp32 log-sum-exp, an int64 index and an fp32 dot per token and an fp32
    // average per vocabulary entry; in backward the int32 vocabulary order, int32 locks (one per token
    // and per vocabulary entry) and the bf16 gradients of the hidden states and of the frozen head.
    void releases_plan_their_own_loss() {
        const auto& lib = test::library();
        const FrameworkProfile& current = lib.framework("unsloth");
        const FrameworkProfile& jan2025 = lib.framework("unsloth@2025.1");
        QCOMPARE(jan2025.release, std::string("2025.1"));
        QCOMPARE(jan2025.id, std::string("unsloth"));
        QVERIFY(jan2025.traits.loss.cut_cross_entropy && !current.traits.loss.cut_cross_entropy);
        QCOMPARE(jan2025.traits.loss.cut_cross_entropy_above_tokens, std::int64_t(1024));
        TrainingSetup s = lora_bf16_2x2048();
        const std::int64_t N = 4096, V = 128256, h = 4096;
        const std::int64_t cce = N * 12 + V * 4 + V * 4 + N * h * 2 + V * h * 2 + (N + V) * 4;
        QCOMPARE(term_bytes(estimate_memory(llama8b(), s, jan2025), Component::LogitsLoss), cce);
        // 1,024 tokens keep the logits (RETURN_LOGITS): the release plans as the profile does.
        s.seq_len = 512;
        QCOMPARE(term_bytes(estimate_memory(llama8b(), s, jan2025), Component::LogitsLoss),
                 term_bytes(estimate_memory(llama8b(), s, current), Component::LogitsLoss));
        // The CLI takes a release as framework@release.
        const auto cli = run_cli({"plan", "--model", "llama-3.1-8b", "--method", "qlora", "--seq", "4096", "--framework", "unsloth@2025.1"});
        QCOMPARE(cli.code, 0);
        QVERIFY2(cli.out.find("Cut Cross-Entropy (no logits)") != std::string::npos, cli.out.c_str());
        QVERIFY(run_cli({"plan", "--model", "llama-3.1-8b", "--framework", "unsloth@2024.6"}).code != 0);
        try {
            lib.framework("unsloth@2024.6");
            QFAIL("an unknown release was accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("its releases: 2025.1") != std::string::npos, e.what());
        }
    }

    // Issue 25: a plan names the release it planned, in the JSON's framework fields and in the text,
    // so a saved plan says which release's behaviour made its numbers; the current one is the plain id.
    void a_release_plan_names_its_release() {
        const std::vector<std::string> plan = {"plan", "--model", "llama-3.1-8b", "--method", "qlora", "--seq", "4096",
                                               "--machine", "rtx-4090"};
        auto with = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = plan;
            args.insert(args.end(), extra.begin(), extra.end());
            const auto r = run_cli(args);
            if (r.code != 0) throw std::runtime_error(r.err);
            return r.out;
        };
        const auto old_json = nlohmann::json::parse(with({"--framework", "unsloth@2025.1", "--json"}));
        QCOMPARE(old_json["framework"].get<std::string>(), std::string("unsloth@2025.1"));
        QCOMPARE(old_json["machines"][0]["framework"].get<std::string>(), std::string("unsloth@2025.1"));
        const auto now_json = nlohmann::json::parse(with({"--framework", "unsloth", "--json"}));
        QCOMPARE(now_json["framework"].get<std::string>(), std::string("unsloth"));
        QCOMPARE(now_json["machines"][0]["framework"].get<std::string>(), std::string("unsloth"));
        // The release's own loss (Cut Cross-Entropy above 1,024 tokens) makes the numbers differ: the
        // name is not a label on the current release's plan.
        QVERIFY(old_json["total_bytes"] != now_json["total_bytes"]);
        const std::string text = with({"--framework", "unsloth@2025.1"});
        QVERIFY2(text.find("[unsloth@2025.1]") != std::string::npos, text.c_str());
        QVERIFY2(text.find(" unsloth@2025.1 ") != std::string::npos, text.c_str());   // the machine's row
        const std::string now_text = with({"--framework", "unsloth"});
        QVERIFY2(now_text.find("[unsloth]") != std::string::npos && now_text.find("unsloth@") == std::string::npos, now_text.c_str());
        // The spec is what --framework takes back.
        QCOMPARE(framework_spec(test::library().framework("unsloth@2025.1")), std::string("unsloth@2025.1"));
        QCOMPARE(framework_spec(test::library().framework("hf-transformers@4.46")), std::string("hf-transformers@4.46"));
        QCOMPARE(framework_spec(test::library().framework("pytorch-cuda")), std::string("hf-transformers"));
    }

    // transformers 4.46-4.48 shift a contiguous copy of the fp32 logits: with 2 sequences of 2048 tokens one
    // more fp32 2 × 2047 × 128,256 in forward (the forward moment is then the loss's largest: 6 + 4 + 4 B
    // per token·vocab against 12 B in backward); one sequence's slice needs no copy.
    void transformers_release_shifts_a_logits_copy() {
        const auto& lib = test::library();
        TrainingSetup s = lora_bf16_2x2048();
        const std::int64_t tv = 4096LL * 128256;
        QCOMPARE(term_bytes(estimate_memory(llama8b(), s, lib.framework("hf-transformers")), Component::LogitsLoss), tv * 12);
        const auto old = estimate_memory(llama8b(), s, lib.framework("hf-transformers@4.46"));
        QCOMPARE(term_bytes(old, Component::LogitsLoss), tv * 10 + 2LL * 2047 * 128256 * 4);
        s.micro_batch = 1;
        s.seq_len = 4096;
        QCOMPARE(term_bytes(estimate_memory(llama8b(), s, lib.framework("hf-transformers@4.46")), Component::LogitsLoss), tv * 12);
    }

    // A model that returns fp32 logits (torchtune before #1390): the kept logits are 4 B per token × vocab,
    // so the loss backward holds 16 B (logits, fp32 log-softmax, its two fp32 gradients), not 14.
    void model_returning_fp32_logits_keeps_them_at_4_bytes() {
        const nlohmann::json bf16_held = {{"id", "x"}, {"loss", {{"logits_held", true}, {"upcast_fp32", true}}}};
        nlohmann::json fp32_held = bf16_held;
        fp32_held["loss"]["logits_fp32"] = true;
        const TrainingSetup s = lora_bf16_2x2048();
        const std::int64_t tv = 4096LL * 128256;
        const auto bf16_est = estimate_memory(llama8b(), s, parse_framework_profile(bf16_held, "x.json"));
        const auto fp32_est = estimate_memory(llama8b(), s, parse_framework_profile(fp32_held, "x.json"));
        QCOMPARE(term_bytes(bf16_est, Component::LogitsLoss), tv * 14);
        QCOMPARE(term_bytes(fp32_est, Component::LogitsLoss), tv * 16);
        QVERIFY(fp32_est.peak_allocated_bytes - bf16_est.peak_allocated_bytes == tv * 2);
        // An fp32 run's logits are fp32 already: the key changes nothing there.
        TrainingSetup f = s;
        f.precision = Precision::Fp32;
        QCOMPARE(term_bytes(estimate_memory(llama8b(), f, parse_framework_profile(fp32_held, "x.json")), Component::LogitsLoss),
                 term_bytes(estimate_memory(llama8b(), f, parse_framework_profile(bf16_held, "x.json")), Component::LogitsLoss));
    }

    // prime-rl's FusedOutputLinear: the head in blocks of 2,048 vocabulary columns, no [tokens, vocab]
    // tensor. Its backward is the loss's largest moment: per token the fp32 log-Z, log-probs and entropy
    // (12 B) and the log-probs' gradient (4 B), per block element 2 + 20 B (the recomputed block beside
    // the previous one's fp32 probabilities and gradient), and the head's bf16 gradient, vocab × hidden.
    void vocabulary_blocked_head_keeps_no_logits() {
        const nlohmann::json blocked = {{"id", "x"}, {"loss", {{"head_vocab_chunk", 2048}}}};
        const std::int64_t N = 4096, C = 2048, V = 128256, h = 4096;
        const auto est = estimate_memory(llama8b(), lora_bf16_2x2048(), parse_framework_profile(blocked, "x.json"));
        QCOMPARE(term_bytes(est, Component::LogitsLoss), N * 16 + N * C * 22 + V * h * 2);
        // A block wider than the vocabulary is the vocabulary.
        const nlohmann::json wide = {{"id", "x"}, {"loss", {{"head_vocab_chunk", 1 << 20}}}};
        QCOMPARE(term_bytes(estimate_memory(llama8b(), lora_bf16_2x2048(), parse_framework_profile(wide, "x.json")),
                            Component::LogitsLoss),
                 N * 16 + N * V * 22 + V * h * 2);
        for (const nlohmann::json bad : {nlohmann::json("2048"), nlohmann::json(-1), nlohmann::json(2.5)}) {
            try {
                parse_framework_profile({{"id", "x"}, {"loss", {{"head_vocab_chunk", bad}}}}, "x.json");
                QFAIL(("loss.head_vocab_chunk " + bad.dump() + " was accepted").c_str());
            } catch (const ProfileError& e) {
                QCOMPARE(e.field(), std::string("loss.head_vocab_chunk"));
            }
        }
    }
    // A release's behaviour is checked like the profile's own: a misspelt key names the release.
    void release_keys_are_checked() {
        const nlohmann::json base = {{"id", "x"}, {"loss", {{"upcast_fp32", true}}}};
        auto with_release = [&](nlohmann::json release) {
            nlohmann::json j = base;
            j["releases"] = {{"1.0", release}};
            return j;
        };
        try {
            parse_framework_profile(with_release({{"summary", "x 1.0"}, {"behaviour", {{"loss", {{"cut_cross_entrop", true}}}}}}),
                                    "rel.json");
            QFAIL("a misspelt release key was accepted");
        } catch (const ProfileError& e) {
            QCOMPARE(e.field(), std::string("releases.1.0.behaviour.loss.cut_cross_entrop"));
        }
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(with_release({{"behaviour", nlohmann::json::object()}}), "rel.json"));
        QVERIFY_THROWS_EXCEPTION(ProfileError,
                                 parse_framework_profile(with_release({{"summary", "x"}, {"behaviour", {{"loss", {{"upcast_fp32", 3}}}}}}),
                                                         "rel.json"));
        const FrameworkProfile ok =
            parse_framework_profile(with_release({{"summary", "x 1.0"}, {"behaviour", {{"loss", {{"upcast_fp32", false}}}}}}), "rel.json");
        QCOMPARE(ok.releases.size(), std::size_t(1));
        QVERIFY(ok.loss_upcast_fp32 && !ok.releases.front().profile->loss_upcast_fp32);
    }

    void unknown_profile_keys_are_errors() {
        try {
            parse_framework_profile(nlohmann::json{{"id", "x"}, {"allocator_slak", 0.1}}, "typo.json");
            QFAIL("a misspelt top-level key was accepted");
        } catch (const ProfileError& e) {
            QCOMPARE(e.file(), std::string("typo.json"));
            QCOMPARE(e.field(), std::string("allocator_slak"));
            QVERIFY(std::string(e.what()).find("did you mean 'allocator_slack'") != std::string::npos);
        }
        try {
            parse_framework_profile(nlohmann::json{{"id", "x"}, {"compile", {{"enabeld", true}}}}, "typo.json");
            QFAIL("a misspelt section key was accepted");
        } catch (const ProfileError& e) {
            QCOMPARE(e.field(), std::string("compile.enabeld"));
            QVERIFY(std::string(e.what()).find("'compile.enabled'") != std::string::npos);
        }
        // Out-of-range values are refused before a plan multiplies them (a block of 2^62 positions
        // would overflow the KV cache's rounding).
        for (const auto& [key, value] : std::vector<std::pair<std::string, double>>{
                 {"kv_cache_step", 4.6e18}, {"queued_bytes", 1e18}, {"queued_bytes", -1}}) {
            try {
                parse_framework_profile(nlohmann::json{{"id", "x"}, {key, value}}, "range.json");
                QFAIL(("accepted " + key).c_str());
            } catch (const ProfileError& e) {
                QCOMPARE(e.field(), key);
            }
        }
    }

    // profiles/frameworks/README.md documents exactly the keys the parser accepts: each key is
    // named there (`section.key`, or `key` at the top level), and each `section.key` the README's
    // tables name is one the parser accepts.
    void readme_matches_the_accepted_keys() {
        std::ifstream in(std::string(WINGSPAN_TEST_PROFILES_DIR) + "/frameworks/README.md");
        const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QVERIFY(!readme.empty());
        const auto& keys = framework_profile_keys();
        for (const auto& [section, names] : keys)
            for (const auto& k : names) {
                const std::string full = section.empty() ? k : section + "." + k;
                QVERIFY2(readme.find("`" + full + "`") != std::string::npos || readme.find("`." + k + "`") != std::string::npos,
                         ("README.md does not name " + full).c_str());
            }
        std::istringstream lines(readme);
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("| `", 0) != 0) continue;
            const std::string first = line.substr(3, line.find('`', 3) - 3);
            const auto dot = first.find('.');
            if (dot == std::string::npos) continue;
            const auto section = keys.find(first.substr(0, dot));
            QVERIFY2(section != keys.end(), ("README.md names an unknown section: " + first).c_str());
            if (section->first == "dtypes") continue;
            const auto& names = section->second;
            QVERIFY2(std::find(names.begin(), names.end(), first.substr(dot + 1)) != names.end(),
                     ("README.md names a key the parser rejects: " + first).c_str());
        }
    }

    // The README's key table is generated from the typed behaviour (framework_behaviour.cpp): the
    // committed table is exactly what behaviour_keys_markdown() writes. WINGSPAN_WRITE_README=1
    // rewrites it in place instead.
    void readme_key_table_is_generated() {
        const std::string path = std::string(WINGSPAN_TEST_PROFILES_DIR) + "/frameworks/README.md";
        std::string readme;
        {
            std::ifstream in(path);
            readme.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
        const auto begin = readme.find(kBehaviourTableBegin);
        const auto end = readme.find(kBehaviourTableEnd);
        QVERIFY2(begin != std::string::npos && end != std::string::npos && begin < end, "README.md has no generated key table");
        const auto end_of_block = end + std::string(kBehaviourTableEnd).size() + 1;
        const std::string committed = readme.substr(begin, end_of_block - begin);
        const std::string generated = behaviour_keys_markdown();
        if (committed != generated && std::getenv("WINGSPAN_WRITE_README")) {
            std::ofstream(path) << readme.substr(0, begin) + generated + readme.substr(end_of_block);
            return;
        }
        QVERIFY2(committed == generated,
                 "profiles/frameworks/README.md's key table differs from core/src/profiles/framework_behaviour.cpp; regenerate: "
                 "WINGSPAN_WRITE_README=1 build/tests/test_core_frameworks readme_key_table_is_generated");
        // Each typed flag is in the table with the typed struct's default.
        const FrameworkBehaviour defaults;
        for (const auto& k : behaviour_keys())
            if (k.flag) {
                FrameworkBehaviour b = defaults;
                QCOMPARE(std::string(k.flag(b) ? "true" : "false"), k.default_text);
            }
    }

    // Each typed flag is read from its own key (a key that set another flag would pass the
    // README check above).
    void typed_flags_read_their_own_keys() {
        for (const auto& k : behaviour_keys()) {
            if (!k.flag) continue;
            const FrameworkProfile p = parse_framework_profile(
                nlohmann::json{{"id", "x"}, {k.section, {{k.key, true}}}}, "x.json");
            FrameworkBehaviour expected;
            k.flag(expected) = true;
            FrameworkBehaviour got = p.traits;
            int set = 0;
            for (const auto& other : behaviour_keys())
                if (other.flag && other.flag(got)) {
                    ++set;
                    QVERIFY2(other.flag == k.flag, (std::string(k.section) + "." + k.key + " set " + other.section + "." + other.key).c_str());
                }
            QCOMPARE(set, 1);
        }
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(
            nlohmann::json{{"id", "x"}, {"attention", {{"sdpa_runs_math", 1}}}}, "x.json"));
    }

    void cli_lists_and_picks_frameworks() {
        const auto list = run_cli({"frameworks"});
        QCOMPARE(list.code, 0);
        for (const char* id : {"hf-transformers", "torchtune", "litgpt", "unsloth", "mlx-lm", "libtorch-cpu"})
            QVERIFY2(list.out.find(id) != std::string::npos, id);
        QVERIFY(list.out.find("also: pytorch-cuda") != std::string::npos);
        // Each machine gets its own framework and that framework's default precision.
        const auto plan = run_cli({"plan", "--model", "llama-3.2-1b", "--method", "lora", "--machine", "rtx-4090",
                               "--machine", "m4-max-128gb", "--json"});
        QCOMPARE(plan.code, 0);
        const auto j = nlohmann::json::parse(plan.out);
        QCOMPARE(j["machines"][0]["framework"].get<std::string>(), std::string("hf-transformers"));
        QCOMPARE(j["machines"][1]["framework"].get<std::string>(), std::string("mlx-lm"));
        QCOMPARE(j["machines"][1]["setup"]["precision"].get<std::string>(), std::string("bf16"));
        QCOMPARE(j["machines"][1]["setup"]["lora_layers"].get<int>(), 16);
        // --framework and --precision win; the text says which precision is in force and why.
        const auto tt = run_cli({"plan", "--model", "llama-3.2-1b", "--framework", "torchtune"});
        QVERIFY(tt.out.find("Precision in force: bf16 (bf16-true") != std::string::npos);
        QVERIFY(tt.out.find("(the framework's default)") != std::string::npos);
        const auto chosen = run_cli({"plan", "--model", "llama-3.2-1b", "--framework", "torchtune", "--precision", "bf16-mixed"});
        QVERIFY(chosen.out.find("Precision in force: bf16-mixed") != std::string::npos);
        QVERIFY(chosen.out.find("(--precision)") != std::string::npos);
        QVERIFY(run_cli({"plan", "--model", "llama-3.2-1b", "--framework", "pytorch-cuda"}).code == 0);
        QCOMPARE(run_cli({"plan", "--model", "llama-3.2-1b", "--framework", "nope"}).code, 2);
        QCOMPARE(run_cli({"plan", "--model", "llama-3.2-1b", "--lora-layers", "-3"}).code, 2);
        // mlx-lm's --num-layers, and the GB column says what it shows.
        const auto mlx = run_cli({"plan", "--model", "llama-3.1-8b", "--framework", "mlx-lm", "--num-layers", "8", "--dora"});
        QVERIFY(mlx.out.find("last 8 of 32 layers") != std::string::npos);
        QVERIFY(mlx.out.find("DoRA") != std::string::npos);
        QVERIFY(mlx.out.find("GB at peak") != std::string::npos);
    }

    void serve_plans_speak_of_serving() {
        const auto serve = run_cli({"plan", "--model", "llama-3.2-1b", "--method", "serve", "--machine", "rtx-4090"});
        QCOMPARE(serve.code, 0);
        QVERIFY(serve.out.find("training tokens") == std::string::npos);
        QVERIFY(serve.out.find("cost") == std::string::npos);
        QVERIFY(serve.out.find("Serving 1 sequence") != std::string::npos);
        const auto train = run_cli({"plan", "--model", "llama-3.2-1b", "--machine", "rtx-4090"});
        QVERIFY(train.out.find("training tokens") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestFrameworks)
#include "test_frameworks.moc"
