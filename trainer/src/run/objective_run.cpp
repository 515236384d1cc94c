// A run's DPO and ORPO parts (issue 31): the preference data, the reference (the base with the
// adapters off for LoRA/QLoRA, a frozen copy for a full fine-tune), the loss of one micro-batch
// of pairs and the held-out evaluation. One DPO micro-batch scores the 2·B concatenated rows with
// the reference first (no_grad, nothing of the policy alive), then runs the policy's forward:
// TRL runs the reference after the policy's forward, beside its whole graph and logits
// (huggingface/trl f2cd577 trl/trainer/dpo_trainer.py _compute_loss: model(...) at line 1340, the
// reference under no_grad at 1373), which makes that moment a DPO step's
// peak; here the peak stays the policy's own backward, as for SFT of 2·B rows. The planner plans
// this order for wingspan-train (profiles/frameworks/libtorch-*.json objective.reference_before_policy,
// core/src/memory/objective_terms.cpp).
#include "run/run.hpp"

#include "support/emit.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train::detail {

namespace {

// The policy's adapters off for the scope (an exception turns them back on).
class AdaptersOff {
public:
    explicit AdaptersOff(Model& m) : m_(m) { m_.set_adapters_enabled(false); }
    ~AdaptersOff() { m_.set_adapters_enabled(true); }
    AdaptersOff(const AdaptersOff&) = delete;
    AdaptersOff& operator=(const AdaptersOff&) = delete;

private:
    Model& m_;
};

at::Tensor to_device(const std::vector<std::int64_t>& v, std::int64_t rows, std::int64_t cols, const c10::Device& d) {
    return at::tensor(v, at::kLong).view({rows, cols}).to(d);
}

}  // namespace

ModelOptions Run::model_options() const {
    ModelOptions mo;
    mo.method = opt_.method;
    mo.precision = opt_.precision;
    mo.rank = opt_.rank;
    mo.alpha = opt_.alpha;
    mo.dropout = opt_.dropout;
    mo.targets = opt_.targets;
    mo.sdpa = opt_.attention == "sdpa";
    mo.device = device_;
    return mo;
}

// Combinations refused before anything is loaded.
void Run::check_preference_setup() const {
    if (!opt_.preference()) return;
    const std::string what = "--objective " + std::string(to_string(opt_.objective));
    if (world() > 1 || job_.world_size > 1)
        throw RunError("bad_argument", what + " trains on one process (the pairs of a micro-batch are not split across ranks)");
    if (cfg_.final_softcap > 0)
        throw RunError("bad_argument", what + " is not implemented for a soft-capped head (Gemma 2's final_logit_softcapping)");
    if (!opt_.packing()) log_info(what + ": preference rows are never packed (one pair side per row)");
}

void Run::load_preference_data() {
    pairs_ = load_preference_jsonl(data_path_, *tok_, chat_, opt_.seq, opt_.eval_fraction, opt_.seed);
    data_.train = chosen_examples(pairs_.train);   // the sample's prompt and the example counts
    data_.eval = chosen_examples(pairs_.eval);
    data_.lines = pairs_.lines;
    data_.formats = "preference pairs, " + pairs_.formats;
    const std::int32_t pad = chat_.pad >= 0 ? chat_.pad : 0;
    epoch_batches_ = EpochBatches(make_pair_batches(pairs_.train, opt_.seq, opt_.batch, pad, opt_.seed, 0, true, true));
    if (!pairs_.eval.empty()) {
        try {
            eval_batches_ = EpochBatches(make_pair_batches(pairs_.eval, opt_.seq, opt_.batch, pad, opt_.seed, 0, false, false));
        } catch (const DataError&) {
            eval_batches_.clear();
        }
        if (static_cast<std::int64_t>(eval_batches_.size()) > opt_.eval_batches)
            eval_batches_.truncate(static_cast<size_t>(opt_.eval_batches));
    }
    if (pairs_.truncated > 0)
        log_info(std::to_string(pairs_.truncated) + " pairs are longer than --seq " + std::to_string(opt_.seq) +
                 " + 1 tokens: each row keeps its first tokens (TRL's truncation_mode keep_start)");
    if (pairs_.dropped > 0)
        log_warning(std::to_string(pairs_.dropped) + " pairs left out: their prompt fills --seq " + std::to_string(opt_.seq) +
                    " with no completion token (the first on line " + std::to_string(pairs_.first_dropped_line) + ")");
}

void Run::build_reference() {
    if (opt_.objective != Objective::Dpo) return;
    if (opt_.method != Method::Full) {
        log_info("DPO reference: the base model with the LoRA adapters disabled (no copy)");
        return;
    }
    // The base the policy starts from (never a resumed checkpoint): its weights, or the same
    // seeded random ones.
    Model::Source source;
    if (weights_) source = [this](const std::string& name, const std::vector<std::int64_t>&) { return weights_->read(name); };
    reference_ = std::make_unique<Model>(cfg_, model_options());
    try {
        reference_->build(source, opt_.seed);
    } catch (const InputError& e) {
        throw RunError("bad_model", std::string("the DPO reference: ") + e.what());
    }
    std::int64_t bytes = 0;
    for (const auto& nt : reference_->tensors()) {
        nt.tensor.requires_grad_(false);
        retag(nt.tensor, Component::ReferenceModel);
        bytes += storage_bytes(nt.tensor);
    }
    log_info("DPO reference: a frozen copy of the policy, " + std::to_string(bytes) +
             " bytes (a full fine-tune has no adapter to switch off; TRL create_reference_model copies it too)");
}

at::Tensor Run::preference_loss(const at::Tensor& ids, const at::Tensor& labels, double weight) {
    at::Tensor reference;
    if (opt_.objective == Objective::Dpo && reference_) {
        reference = reference_logps(*reference_, ids, labels);
    } else if (opt_.objective == Objective::Dpo) {
        AdaptersOff off(*model_);
        reference = reference_logps(*model_, ids, labels);
    }
    const at::Tensor policy = sequence_logps(*model_, ids, labels, opt_.grad_checkpointing);
    PreferenceLoss pl;
    if (opt_.objective == Objective::Dpo) {
        pl = dpo_loss(policy, reference, opt_.beta_or_default());
    } else {
        pl = orpo_loss(policy, scored_tokens(labels), opt_.beta_or_default());
    }
    step_metrics_.add(pl.metrics, weight);
    return pl.loss;
}

double Run::evaluate_preference() {
    eval_metrics_ = PreferenceMetrics{};
    std::int64_t pairs = 0;
    for (size_t i = 0; i < eval_batches_.size(); ++i) pairs += eval_batches_[i].rows / 2;
    if (pairs == 0) return std::nan("");
    at::NoGradGuard no_grad;
    std::swap(step_metrics_, eval_metrics_);   // preference_loss adds into step_metrics_
    for (size_t i = 0; i < eval_batches_.size(); ++i) {
        const Batch b = eval_batches_[i];
        preference_loss(to_device(b.input, b.rows, b.cols, device_), to_device(b.labels, b.rows, b.cols, device_),
                        static_cast<double>(b.rows / 2) / static_cast<double>(pairs));
    }
    std::swap(step_metrics_, eval_metrics_);
    return eval_metrics_.loss;
}

}  // namespace wingspan::train::detail
