// Objectives beyond SFT in the planner (issue 31): DPO's reference and chosen + rejected rows,
// GRPO's generation, the colocated vLLM share, and the objective in the plan's JSON.
#include <QtTest>
#include <algorithm>

#include "cli_result.hpp"
#include "test_support.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/recipe.hpp"

using namespace wingspan;

namespace {
std::int64_t term_bytes(const MemoryEstimate& e, Component c) {
    std::int64_t b = 0;
    for (const auto& t : e.terms)
        if (t.component == c && !t.on_host) b += t.bytes;
    return b;
}
const Phase* find_phase(const MemoryEstimate& e, const std::string& name) {
    for (const auto& p : e.phases)
        if (p.name == name) return &p;
    return nullptr;
}
std::int64_t in_phase(const MemoryEstimate& e, const std::string& name, Component c) {
    const Phase* p = find_phase(e, name);
    if (!p) throw std::runtime_error("no phase " + name);
    auto it = p->bytes.find(c);
    return it == p->bytes.end() ? 0 : it->second;
}
const Architecture& llama8b() { return test::library().model("llama-3.1-8b").arch; }
constexpr std::int64_t kLlama8bParams = 8'030'261'248;

TrainingSetup with_objective(TrainingSetup s, Objective o, Reference r = Reference::Auto) {
    s.objective.kind = o;
    s.objective.reference = r;
    return s;
}
}  // namespace

class ObjectivesTest : public QObject {
    Q_OBJECT
private slots:
    // A full fine-tune's reference is create_reference_model's copy: exactly the policy's bf16
    // weights more, held in every phase (the optimizer step's static state shows it alone).
    void dpoFullCopyAddsTheReferenceWeights() {
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Bf16Mixed;
        const auto fw = test::bare_framework("fused");
        const MemoryEstimate sft = estimate_memory(llama8b(), s, fw);
        const MemoryEstimate dpo = estimate_memory(llama8b(), with_objective(s, Objective::Dpo), fw);
        QCOMPARE(sft.params.total, kLlama8bParams);
        QCOMPARE(term_bytes(dpo, Component::ReferenceModel), 2 * kLlama8bParams);   // 16,060,522,496 B
        QCOMPARE(in_phase(dpo, "optimizer_step", Component::ReferenceModel), 2 * kLlama8bParams);
        QCOMPARE(find_phase(dpo, "optimizer_step")->total() - find_phase(sft, "optimizer_step")->total(),
                 2 * kLlama8bParams);
        QVERIFY(dpo.to_json()["components"].contains("reference_model"));
        QCOMPARE(term_bytes(sft, Component::ReferenceModel), 0);
    }

    // A PEFT policy is its own reference with the adapter disabled: no weights added; a copy
    // asked for explicitly is the base's frozen weights again.
    void dpoLoraAdapterOffAddsNoWeights() {
        TrainingSetup s;   // LoRA rank 16 on every linear
        const auto fw = test::bare_framework("fused");
        const MemoryEstimate sft = estimate_memory(llama8b(), s, fw);
        const MemoryEstimate dpo = estimate_memory(llama8b(), with_objective(s, Objective::Dpo), fw);
        QCOMPARE(term_bytes(dpo, Component::ReferenceModel), 0);
        QCOMPARE(find_phase(dpo, "optimizer_step")->total(), find_phase(sft, "optimizer_step")->total());
        QVERIFY(objective_summary(with_objective(s, Objective::Dpo)).find("reference adapter-off") != std::string::npos);
        // The reference still runs: its forward beside the policy's graph.
        QVERIFY(find_phase(dpo, "reference_forward") && find_phase(dpo, "reference_logps"));
        const MemoryEstimate copy = estimate_memory(llama8b(), with_objective(s, Objective::Dpo, Reference::Copy), fw);
        QCOMPARE(term_bytes(copy, Component::ReferenceModel), term_bytes(sft, Component::FrozenWeights));
        QCOMPARE(term_bytes(copy, Component::ReferenceModel), 2 * (kLlama8bParams));   // frozen base, bf16
        // Precomputed log-probs: no reference weights and no reference forward in the step.
        const MemoryEstimate pre = estimate_memory(llama8b(), with_objective(s, Objective::Dpo, Reference::Precomputed), fw);
        QCOMPARE(term_bytes(pre, Component::ReferenceModel), 0);
        QVERIFY(!find_phase(pre, "reference_forward"));
    }

    // TRL concatenates chosen and rejected on the batch axis: DPO at batch B is SFT at 2·B for
    // the policy's activations and logits, twice SFT at B; ORPO and SimPO alike, KTO not.
    void chosenAndRejectedDoubleActivationsAndLogits() {
        TrainingSetup s;
        s.grad_checkpointing = false;
        s.seq_len = 512;
        s.micro_batch = 2;
        const auto fw = test::bare_framework("fused");
        TrainingSetup s2 = s;
        s2.micro_batch = 4;
        const MemoryEstimate sft = estimate_memory(llama8b(), s, fw);
        const MemoryEstimate sft2 = estimate_memory(llama8b(), s2, fw);
        for (Objective o : {Objective::Dpo, Objective::Orpo, Objective::Simpo}) {
            const MemoryEstimate pref = estimate_memory(llama8b(), with_objective(s, o), fw);
            QCOMPARE(pref.term(Component::Activations)->bytes, sft2.term(Component::Activations)->bytes);
            QCOMPARE(pref.term(Component::LogitsLoss)->bytes, sft2.term(Component::LogitsLoss)->bytes);
            QCOMPARE(pref.term(Component::Activations)->bytes, 2 * sft.term(Component::Activations)->bytes);
            QCOMPARE(pref.term(Component::LogitsLoss)->bytes, 2 * sft.term(Component::LogitsLoss)->bytes);
        }
        const MemoryEstimate kto = estimate_memory(llama8b(), with_objective(s, Objective::Kto), fw);
        QCOMPARE(kto.term(Component::Activations)->bytes, sft.term(Component::Activations)->bytes);
        // Prompt + completion set the sequence: 256 + 256 is the same 512 tokens.
        TrainingSetup pc = with_objective(s, Objective::Dpo);
        pc.seq_len = 4096;
        pc.objective.prompt_len = 256;
        pc.objective.completion_len = 256;
        QCOMPARE(estimate_memory(llama8b(), pc, fw).term(Component::Activations)->bytes,
                 sft2.term(Component::Activations)->bytes);
    }

    // GRPO: B prompts × G completions; HF generate's KV cache for B·G sequences of P + C
    // tokens, fp32 sampling logits; the policy's forward over B·G rows with logits only for C.
    void grpoGenerationKvCacheAndRows() {
        TrainingSetup s;
        s.method = Method::Qlora;
        s.micro_batch = 1;
        s = with_objective(s, Objective::Grpo);
        s.objective.generations = 8;
        s.objective.completion_len = 512;   // prompt: TRL's default 512
        const auto fw = test::bare_framework("fused");
        const MemoryEstimate e = estimate_memory(llama8b(), s, fw);
        const Architecture& a = llama8b();
        QCOMPARE(a.layers, std::int64_t(32));
        QCOMPARE(a.kv_dim(), std::int64_t(8 * 128));
        // B·G·(P+C)·layers·2·kv_heads·head_dim·bytes = 1·8·1024·32·2·8·128·2 = 1 GiB
        const std::int64_t kv = 1 * 8 * (512 + 512) * 32 * 2 * 8 * 128 * 2;
        QCOMPARE(kv, std::int64_t(1) << 30);
        QCOMPARE(term_bytes(e, Component::KvCache), kv);
        QCOMPARE(in_phase(e, "generation_decode", Component::KvCache), kv);
        QCOMPARE(in_phase(e, "generation_decode", Component::LogitsLoss), 2 * 8 * a.vocab * 4);
        QCOMPARE(in_phase(e, "generation_prefill", Component::KvCache), kv / 2);
        // beta 0 (TRL's default): no reference at all.
        QCOMPARE(term_bytes(e, Component::ReferenceModel), 0);
        QVERIFY(!find_phase(e, "reference_logps"));
        // The training forward is SFT's at 8 rows of 1,024 tokens.
        TrainingSetup rows = s;
        rows.objective = {};
        rows.micro_batch = 8;
        rows.seq_len = 1024;
        QCOMPARE(e.term(Component::Activations)->bytes, estimate_memory(a, rows, fw).term(Component::Activations)->bytes);
        // Logits only for the completion: 8 × 512 positions.
        TrainingSetup logits = rows;
        logits.seq_len = 512;
        QCOMPARE(e.term(Component::LogitsLoss)->bytes, estimate_memory(a, logits, fw).term(Component::LogitsLoss)->bytes);
        // beta > 0: the base with the adapter disabled scores the completions (no copy).
        s.objective.beta = 0.04;
        const MemoryEstimate kl = estimate_memory(a, s, fw);
        QCOMPARE(term_bytes(kl, Component::ReferenceModel), 0);
        QCOMPARE(in_phase(kl, "reference_logps", Component::LogitsLoss), (8 + 1) * 512 * a.vocab * 2);
    }

    // TRL 1.16's fused log-prob head (hf-transformers objective.fused_logprob_head): the 8B QLoRA
    // GRPO command keeps no logits, only one [4,096 × 32,768] bf16 tile, the fp32 head's bf16 block, and
    // per-token statistics; on a device without Triton every shifted position is projected, with the torch
    // fold's fp32 temporaries (the profile's logprob_labelled_only).
    void trlFusedHeadKeepsOneTileNotTheLogits() {
        TrainingSetup s;
        s.method = Method::Qlora;
        s.precision = Precision::Bf16Mixed;
        s.micro_batch = 1;
        s = with_objective(s, Objective::Grpo);
        s.objective.generations = 8;
        s.objective.completion_len = 512;
        const FrameworkProfile& fw = test::library().framework("hf-transformers");
        const Architecture& a = llama8b();
        const MemoryEstimate e = estimate_memory(a, s, fw);
        const std::int64_t N = 8 * 512, tile = 4096LL * 32768 * 2, head_block = 32768LL * a.hidden * 2;
        QCOMPARE(in_phase(e, "forward_end", Component::LogitsLoss), tile + head_block + N * (8 + 12 * 4));
        QCOMPARE(in_phase(e, "loss_backward", Component::LogitsLoss),
                 N * 16 + N * 4 + tile + head_block + N * a.hidden * (4 + 2));
        QVERIFY(e.term(Component::LogitsLoss)->bytes < 700'000'000);   // was 7.35 GB of full logits
        // The CPU's head: every one of 8 × 1,023 shifted positions, a 4,096-token tile, fp32 temporaries.
        FrameworkProfile cpu = fw;
        cpu.traits.objective.logprob_labelled_only = false;
        const std::int64_t Nc = 8 * 1023, block = 4096LL * 32768 * 4;
        QCOMPARE(in_phase(estimate_memory(a, s, cpu), "forward_end", Component::LogitsLoss),
                 tile + head_block + 3 * block + Nc * (8 + 12 * 4));
        // ORPO keeps TRL's full logits (no fused head in ORPOTrainer).
        TrainingSetup orpo = with_objective(s, Objective::Orpo);
        orpo.seq_len = 1024;
        QVERIFY(in_phase(estimate_memory(a, orpo, fw), "forward_end", Component::LogitsLoss) > 2 * 1024 * a.vocab * 4);
    }

    // A colocated vLLM takes its fraction of the device's whole memory on top of training, and
    // then generation leaves no KV cache in the trainer.
    void grpoVllmShareTakesItsFraction() {
        TrainingSetup s;
        s.method = Method::Qlora;
        s = with_objective(s, Objective::Grpo);
        const MachineProfile& m = test::library().machine("h100");
        const FrameworkProfile& fw = test::library().framework_for(m);
        const MachineVerdict plain = evaluate(llama8b(), s, m, fw);
        s.objective.vllm_share = 0.3;
        const MachineVerdict shared = evaluate(llama8b(), s, m, fw);
        QCOMPARE(term_bytes(shared.estimate, Component::KvCache), 0);
        QCOMPARE(shared.estimate.reserved_device_fraction, 0.3);
        QCOMPARE(shared.needed_bytes - shared.estimate.total_bytes,
                 static_cast<std::int64_t>(0.3 * double(m.memory_bytes)));
        QVERIFY(shared.needed_bytes > plain.estimate.total_bytes);
        QVERIFY(!shared.notes.empty() && shared.notes.back().find("vLLM") != std::string::npos);
    }

    // TRL's ds3_gather_for_generation: under ZeRO-3 HF generate runs on the whole gathered policy.
    void grpoUnderZero3GathersThePolicyToGenerate() {
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Bf16;
        s.devices = 4;
        s.sharding = Sharding::Zero3;
        s = with_objective(s, Objective::Grpo);
        const MemoryEstimate e = estimate_memory(llama8b(), s, test::bare_framework("fused"));
        const std::int64_t shard = 2 * kLlama8bParams / 4;   // bf16 weights over 4 devices
        QCOMPARE(in_phase(e, "optimizer_step", Component::TrainableWeights), shard);
        QCOMPARE(in_phase(e, "generation_decode", Component::TrainableWeights), 4 * shard);
        s.devices = 1;
        s.sharding = Sharding::None;
        const MemoryEstimate one = estimate_memory(llama8b(), s, test::bare_framework("fused"));
        QCOMPARE(in_phase(one, "generation_decode", Component::TrainableWeights), 4 * shard);
    }

    // GRPO's sequence is prompt + completion: `fit --solve seq` finds the longest completion.
    void grpoSolvesTheCompletionLength() {
        TrainingSetup s;
        s.method = Method::Qlora;
        s = with_objective(s, Objective::Grpo);
        const MachineProfile& m = test::library().machine("rtx-4090");
        const FrameworkProfile& fw = test::library().framework_for(m);
        const Solution sol = solve(SolveFor::Seq, llama8b(), s, m, fw);
        QVERIFY(sol.completion_length);
        QVERIFY(!sol.unbounded);
        QVERIFY(sol.value > 512);   // TRL 1.16's default completion (512) fits at batch 1
        s.objective.completion_len = sol.value;
        QVERIFY(evaluate(llama8b(), s, m, fw).fit != Fit::No);
        s.objective.completion_len = sol.value + 1;
        QCOMPARE(evaluate(llama8b(), s, m, fw).fit, Fit::No);
        TrainingSetup sft;   // SFT still solves the sequence
        QVERIFY(!solve(SolveFor::Seq, llama8b(), sft, m, fw).completion_length);
    }

    void impossibleReferencesAreRefused() {
        TrainingSetup s;
        s.method = Method::Full;
        QVERIFY_THROWS_EXCEPTION(InputError, with_objective(s, Objective::Dpo, Reference::AdapterOff).validate(llama8b()));
        QVERIFY_THROWS_EXCEPTION(InputError, with_objective(s, Objective::Orpo, Reference::Copy).validate(llama8b()));
        QVERIFY_THROWS_EXCEPTION(InputError, with_objective(s, Objective::Grpo, Reference::Copy).validate(llama8b()));
        TrainingSetup v = with_objective(s, Objective::Dpo);
        v.objective.vllm_share = 0.5;
        QVERIFY_THROWS_EXCEPTION(InputError, v.validate(llama8b()));
        with_objective(s, Objective::Dpo, Reference::Copy).validate(llama8b());   // fine
    }

    // The setup's JSON carries the objective and reads it back; a plan without one is SFT.
    void objectiveInTheSetupJson() {
        TrainingSetup s;
        s = with_objective(s, Objective::Grpo);
        s.objective.generations = 4;
        s.objective.beta = 0.04;
        const nlohmann::json j = s.to_json();
        QCOMPARE(j["objective"]["kind"].get<std::string>(), std::string("grpo"));
        const TrainingSetup back = TrainingSetup::from_json(j);
        QCOMPARE(back.objective.kind, Objective::Grpo);
        QCOMPARE(back.objective.generations, std::int64_t(4));
        QCOMPARE(back.objective.beta, 0.04);
        nlohmann::json old = j;
        old.erase("objective");
        QCOMPARE(TrainingSetup::from_json(old).objective.kind, Objective::Sft);
        old["objective"] = "dpo";
        QVERIFY_THROWS_EXCEPTION(InputError, TrainingSetup::from_json(old));
    }

    void cliPlanTakesTheObjective() {
        const auto r = test::run_cli({"plan", "--model", "llama-3.1-8b", "--method", "qlora", "--objective", "grpo",
                                      "--generations", "8", "--completion-length", "512", "--json"});
        QCOMPARE(r.code, 0);
        const auto j = nlohmann::json::parse(r.out);
        QCOMPARE(j["setup"]["objective"]["kind"].get<std::string>(), std::string("grpo"));
        QCOMPARE(j["setup"]["objective"]["generations"].get<int>(), 8);
        QCOMPARE(j["components"].value("kv_cache", std::int64_t(0)) > 0 || j["component_maxima"].contains("kv_cache"), true);
        QVERIFY(j["objective_in_force"].get<std::string>().find("8 completions per prompt") != std::string::npos);
        const auto text = test::run_cli({"plan", "--model", "llama-3.1-8b", "--method", "full", "--objective", "dpo",
                                         "--machine", "h200"});
        QCOMPARE(text.code, 0);
        QVERIFY(text.out.find("Reference model") != std::string::npos);
        QVERIFY(text.out.find("reference copy (as TRL does it)") != std::string::npos);
        // A framework without a DPO trainer refuses the plan, naming those that have one (not
        // written as SFT); TRL writes it.
        recipe::Request req;
        req.framework = "mlx-lm";
        req.arch = llama8b();
        req.setup = with_objective(TrainingSetup{}, Objective::Dpo);
        try {
            recipe::make(recipe::default_dir(), test::library(), req);
            QFAIL("a DPO plan was written as an mlx-lm recipe");
        } catch (const InputError& e) {
            const std::string what = e.what();
            QVERIFY2(what.find("has no dpo trainer") != std::string::npos, what.c_str());
            QVERIFY2(what.find("dpo recipes exist for: hf-transformers") != std::string::npos, what.c_str());
        }
        req.framework = "hf-transformers";
        const recipe::Recipe dpo = recipe::make(recipe::default_dir(), test::library(), req);
        QVERIFY(std::any_of(dpo.files.begin(), dpo.files.end(), [](const recipe::RecipeFile& f) {
            return f.path == "train.py" && f.text.find("DPOTrainer(") != std::string::npos;
        }));
        const auto bad = test::run_cli({"plan", "--objective", "ppo"});
        QVERIFY(bad.code != 0);
        QVERIFY(bad.err.find("unknown objective 'ppo'") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(ObjectivesTest)
#include "test_objectives.moc"
