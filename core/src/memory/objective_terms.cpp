#include "memory/objective_terms.hpp"

#include <algorithm>

#include "wingspan/units.hpp"

// Sources (read, not copied), huggingface/trl main as of 2025:
//   trl/trainer/dpo_trainer.py   DPOTrainer.__init__ (ref_model None for a PeftModel or with
//                                precompute_ref_log_probs, else create_reference_model(model));
//                                concatenated_inputs/concatenated_forward (chosen and rejected
//                                concatenated on the batch axis: one forward of 2·B rows over
//                                prompt + completion, logits for every position);
//                                get_batch_loss_metrics (the reference's log-probs after the
//                                policy's forward, under no_grad: the policy's graph is alive).
//   trl/trainer/kto_trainer.py   the same reference rule; one completion per row; forward() runs
//                                _compute_kl_logps (no_grad, mismatched pairs) before the policy's
//                                own forward, so its transient does not stack on the saved graph.
//   trl/trainer/orpo_trainer.py, cpo_trainer.py (SimPO is loss_type="simpo"): concatenated
//                                chosen + rejected, no reference model.
//   trl/trainer/grpo_config.py   num_generations 8, max_completion_length 512 (1.16.0, line 494; no
//                                max_prompt_length: the planner assumes 512), beta 0.0 ("the reference model is not
//                                loaded"; releases before it defaulted to 0.04 — this follows the
//                                current default), vllm_gpu_memory_utilization for colocate mode,
//                                ds3_gather_for_generation True (ZeRO-3 gathers the whole policy
//                                to generate: unwrap_model_for_generation in trl/models/utils.py).
//   trl/trainer/grpo_trainer.py  _generate_and_score_completions (generate B·G completions, then
//                                the reference's per-token log-probs under no_grad when beta > 0);
//                                _get_per_token_logps (logits only for the completion:
//                                logits_to_keep = completion length).
//   transformers generation/utils.py  _sample: fp32 next-token logits and their softmax per step.

namespace wingspan {

namespace {

std::string n(std::int64_t v) { return format_count(v); }

bool lora(const TrainingSetup& s) { return s.method == Method::Lora || s.method == Method::Qlora; }

bool pairs(Objective o) { return o == Objective::Dpo || o == Objective::Orpo || o == Objective::Simpo; }

// One decoder layer's forward workspace without a graph (as serving's prefill): the residual and
// normed input, the MLP's two inner tensors, q, k and v.
std::int64_t layer_workspace(const ObjectiveInputs& in, std::int64_t tokens) {
    const Architecture& a = in.arch;
    return tokens * (2 * a.hidden + 2 * in.inner + a.q_dim() + 2 * a.kv_dim()) * in.value_bytes;
}

void add(std::vector<MemoryTerm>& terms, Component c, std::int64_t bytes, std::string formula,
         std::map<std::string, double> inputs) {
    if (bytes > 0) terms.push_back({c, bytes, std::move(formula), std::move(inputs), false});
}

}  // namespace

bool sequence_from_lengths(const TrainingSetup& s) {
    const ObjectiveSetup& o = s.objective;
    return o.kind == Objective::Grpo || (o.kind != Objective::Sft && o.prompt_len > 0 && o.completion_len > 0);
}

ObjectiveShape objective_shape(const TrainingSetup& s) {
    ObjectiveShape sh;
    const ObjectiveSetup& o = s.objective;
    const std::int64_t b = s.trains() ? s.micro_batch : s.serve_batch;
    sh.rows = b;
    sh.seq = s.seq_len;
    if (o.kind == Objective::Grpo) {
        sh.prompt = o.prompt_len > 0 ? o.prompt_len : kTrlGrpoPromptLength;
        sh.completion = o.completion_len > 0 ? o.completion_len : kTrlGrpoCompletionLength;
        sh.rows = b * o.generations;   // B prompts × G completions, each a row of the loss's forward
        sh.seq = sh.prompt + sh.completion;
        sh.logit_positions = sh.completion;
        return sh;
    }
    if (sequence_from_lengths(s)) {
        sh.prompt = o.prompt_len;
        sh.completion = o.completion_len;
        sh.seq = o.prompt_len + o.completion_len;
    }
    if (pairs(o.kind)) sh.rows = 2 * b;
    sh.logit_positions = sh.seq;
    return sh;
}

TrainingSetup forward_setup(const TrainingSetup& s) {
    if (s.objective.kind == Objective::Sft) return s;
    const ObjectiveShape sh = objective_shape(s);
    TrainingSetup f = s;
    f.micro_batch = sh.rows;
    f.seq_len = sh.seq;
    return f;
}

Reference resolved_reference(const TrainingSetup& s) {
    const ObjectiveSetup& o = s.objective;
    const bool takes = o.kind == Objective::Dpo || o.kind == Objective::Kto ||
                       (o.kind == Objective::Grpo && o.beta > 0);
    if (!takes) return Reference::None;
    if (o.reference != Reference::Auto) return o.reference;
    return lora(s) ? Reference::AdapterOff : Reference::Copy;
}

std::string objective_summary(const TrainingSetup& s) {
    const ObjectiveSetup& o = s.objective;
    if (o.kind == Objective::Sft) return "sft";
    const ObjectiveShape sh = objective_shape(s);
    std::string out = std::string(to_string(o.kind)) + ": ";
    if (pairs(o.kind))
        out += "chosen + rejected in one forward (" + n(sh.rows) + " rows = 2 × batch " + n(s.micro_batch) + ")";
    else if (o.kind == Objective::Grpo)
        out += n(o.generations) + " completions per prompt (" + n(sh.rows) + " rows = batch " + n(s.micro_batch) +
               " prompts × " + n(o.generations) + "), prompt " + n(sh.prompt) + " + completion " + n(sh.completion) +
               " tokens, beta " + std::to_string(o.beta).substr(0, 5) +
               (o.vllm_share > 0 ? ", colocated vLLM taking " + std::to_string(o.vllm_share).substr(0, 4) + " of the GPU"
                                 : ", generation by the policy (HF generate)");
    else
        out += "one completion per row (" + n(sh.rows) + " rows)";
    if (o.kind != Objective::Grpo) out += ", " + n(sh.seq) + " tokens per row";
    const Reference r = resolved_reference(s);
    out += std::string(", reference ") + to_string(r);
    if (o.reference == Reference::Auto && r != Reference::None) out += " (as TRL does it)";
    return out;
}

std::int64_t reference_weights(const ObjectiveInputs& in, std::vector<MemoryTerm>& terms) {
    if (resolved_reference(in.setup) != Reference::Copy || !in.setup.trains()) return 0;
    add(terms, Component::ReferenceModel, in.policy_weights,
        "a frozen copy of the policy's weights without adapters (" + n(in.policy_weights) +
            " B, the same storage; TRL create_reference_model deep-copies the model), held throughout",
        {{"policy_weight_bytes", double(in.policy_weights)}});
    return in.policy_weights;
}

std::vector<ExtraPhase> objective_phases(const ObjectiveInputs& in, const PolicyHeld& held,
                                         std::vector<MemoryTerm>& terms) {
    std::vector<ExtraPhase> out;
    const TrainingSetup& s = in.setup;
    if (!s.trains() || s.objective.kind == Objective::Sft) return out;
    const ObjectiveShape& sh = in.shape;
    const Architecture& a = in.arch;
    const std::int64_t e = in.value_bytes, V = a.vocab, L = a.layers, kvd = a.kv_dim();
    const Reference ref = resolved_reference(s);
    const bool ref_forward = ref == Reference::Copy || ref == Reference::AdapterOff;
    const std::string who = ref == Reference::Copy ? "the reference copy" : "the base with the adapter disabled";
    // The reference's logits for every position it scores, in the compute dtype, and one row's
    // log-softmax beside them (TRL's selective_log_softmax goes row by row for 16-bit logits).
    // (TRL 1.16 scores the reference through its fused head too: in.reference_logprobs.)
    const bool fused_reference = in.reference_logprobs >= 0;
    const std::int64_t ref_logits = fused_reference ? in.reference_logprobs : (sh.rows + 1) * sh.logit_positions * V * e;
    const std::string ref_logits_formula =
        fused_reference
            ? "reference log-probs (" + who + ", no_grad) through the fused head: one tile and per-token statistics (" +
                  n(ref_logits) + " B, trl/kernels/chunked_logprob.py)"
            : "reference log-probs (" + who + ", no_grad): (rows " + n(sh.rows) + " + 1 row's log-softmax) × " +
                  n(sh.logit_positions) + " positions × " + n(V) + " vocab × " + std::to_string(e) + " B";
    const std::map<std::string, double> ref_inputs = {
        {"rows", double(sh.rows)}, {"positions", double(sh.logit_positions)}, {"vocab", double(V)}, {"bytes_per_value", double(e)}};

    if (s.objective.kind == Objective::Grpo) {
        // Generation before the step: no graph; B·G sequences' keys and values grow to P + C tokens.
        if (s.objective.vllm_share <= 0) {
            // ZeRO-3 gathers every shard of the policy for HF generate (ds3_gather_for_generation).
            const std::int64_t N = s.devices;
            const std::int64_t gathered = s.sharding == Sharding::Zero3 && N > 1 ? in.policy_weights * (N - 1) : 0;
            const Component weights = lora(s) ? Component::FrozenWeights : Component::TrainableWeights;
            add(terms, weights, gathered,
                "GRPO generation under ZeRO-3: the policy's other " + n(N - 1) + " shards gathered (" + n(in.policy_weights) +
                    " B each; TRL ds3_gather_for_generation)",
                {{"shard_bytes", double(in.policy_weights)}, {"devices", double(N)}});
            const std::int64_t kv = 2 * L * kvd * sh.seq * sh.rows * e;
            add(terms, Component::KvCache, kv,
                "GRPO generation (HF generate): 2 (k, v) × " + n(L) + " layers × " + n(kvd) + " kv_dim × (" + n(sh.prompt) +
                    " prompt + " + n(sh.completion) + " completion) tokens × " + n(sh.rows) + " sequences (batch " +
                    n(s.micro_batch) + " × " + n(s.objective.generations) + " generations) × " + std::to_string(e) + " B",
                {{"layers", double(L)}, {"kv_dim", double(kvd)}, {"context", double(sh.seq)}, {"sequences", double(sh.rows)},
                 {"bytes_per_value", double(e)}});
            const std::int64_t prefill = layer_workspace(in, sh.rows * sh.prompt);
            const std::int64_t prompt_kv = 2 * L * kvd * sh.prompt * sh.rows * e;
            add(terms, Component::Activations, prefill,
                "GRPO prefill of the prompts: one layer's workspace rows·P·(2h + 2i + q_dim + 2·kv_dim)·" + std::to_string(e) +
                    " B (" + n(sh.rows) + " × " + n(sh.prompt) + " tokens)",
                {{"rows", double(sh.rows)}, {"prompt", double(sh.prompt)}, {"inner", double(in.inner)}});
            const std::int64_t sampling = 2 * sh.rows * V * 4;
            add(terms, Component::LogitsLoss, sampling,
                "GRPO sampling: fp32 next-token logits and their softmax, 2 × " + n(sh.rows) + " sequences × " + n(V) +
                    " vocab × 4 B",
                {{"sequences", double(sh.rows)}, {"vocab", double(V)}});
            out.push_back({"generation_prefill", {{Component::Gradients, held.gradients},
                                                  {weights, gathered},
                                                  {Component::KvCache, prompt_kv},
                                                  {Component::Activations, prefill}}});
            out.push_back({"generation_decode", {{Component::Gradients, held.gradients},
                                                 {weights, gathered},
                                                 {Component::KvCache, kv},
                                                 {Component::Activations, layer_workspace(in, sh.rows)},
                                                 {Component::LogitsLoss, sampling}}});
        }
        // The reference scores the completions after generation, before the policy's forward.
        if (ref_forward) {
            const std::int64_t ws = layer_workspace(in, sh.rows * sh.seq);
            add(terms, Component::LogitsLoss, ref_logits, ref_logits_formula, ref_inputs);
            out.push_back({"reference_forward", {{Component::Gradients, held.gradients}, {Component::Activations, ws}}});
            out.push_back({"reference_logps", {{Component::Gradients, held.gradients}, {Component::LogitsLoss, ref_logits}}});
        }
        return out;
    }
    // wingspan-train (objective.reference_before_policy): the reference scores the micro-batch
    // before the policy's forward (trainer/src/run/objective_run.cpp Run::preference_loss), so only
    // the gradients held across steps are beside it; its logits are the policy's rows × positions
    // in the compute dtype and one row's log-softmax, as TRL's (trainer/src/model/objective_preference.cpp
    // reference_logps). Planned as TRL's order, a LoRA DPO step of the built-in model (seq 128,
    // 4 pairs, fp32) was predicted at 107,859,968 B against 100,233,736 B measured (+7.6 %).
    if (ref_forward && in.reference_before_policy) {
        const std::int64_t ws = layer_workspace(in, sh.rows * sh.seq);
        add(terms, Component::Activations, ws,
            "reference forward (" + who + ", no_grad) before the policy's forward: one layer's workspace rows·s·(2h + "
            "2i + q_dim + 2·kv_dim)·" + std::to_string(e) + " B (" + n(sh.rows) + " × " + n(sh.seq) + " tokens)",
            {{"rows", double(sh.rows)}, {"seq", double(sh.seq)}, {"inner", double(in.inner)}});
        add(terms, Component::LogitsLoss, ref_logits, ref_logits_formula, ref_inputs);
        out.push_back({"reference_forward", {{Component::Gradients, held.gradients}, {Component::Activations, ws}}});
        out.push_back({"reference_logps", {{Component::Gradients, held.gradients}, {Component::LogitsLoss, ref_logits}}});
        return out;
    }
    // DPO, KTO: the reference runs after the policy's forward, whose graph and logits are alive.
    if (ref_forward) {
        const std::int64_t ws = layer_workspace(in, sh.rows * sh.seq);
        add(terms, Component::Activations, ws,
            "reference forward (" + who + ", no_grad) beside the policy's graph: one layer's workspace rows·s·(2h + 2i + "
            "q_dim + 2·kv_dim)·" + std::to_string(e) + " B (" + n(sh.rows) + " × " + n(sh.seq) + " tokens)",
            {{"rows", double(sh.rows)}, {"seq", double(sh.seq)}, {"inner", double(in.inner)}});
        add(terms, Component::LogitsLoss, ref_logits, ref_logits_formula, ref_inputs);
        out.push_back({"reference_forward", {{Component::Gradients, held.gradients},
                                             {Component::Activations, held.activations + ws},
                                             {Component::LogitsLoss, held.logits}}});
        out.push_back({"reference_logps", {{Component::Gradients, held.gradients},
                                           {Component::Activations, held.activations},
                                           {Component::LogitsLoss, held.logits + ref_logits}}});
    }
    return out;
}

}  // namespace wingspan
