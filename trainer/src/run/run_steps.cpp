// A run's steps: micro-batches, backward with the gradient sync, the optimizer update, the loop
// with its events, evaluation, the end-of-run sample and `done`.
#include "run/run.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "kernels/device.hpp"
#include "kernels/device_ops.hpp"
#include "support/emit.hpp"
#include "support/profile_scopes.hpp"
#include "support/step_trace.hpp"
#include "wingspan/protocol.hpp"

namespace wingspan::train::detail {

using protocol::EventType;

namespace {

double lr_at(std::int64_t step, std::int64_t total, std::int64_t warmup, double peak, double min_ratio) {
    if (warmup > 0 && step <= warmup) return peak * static_cast<double>(step) / static_cast<double>(warmup);
    const double span = std::max<std::int64_t>(1, total - warmup);
    const double progress = std::clamp(static_cast<double>(step - warmup) / span, 0.0, 1.0);
    const double cosine = 0.5 * (1 + std::cos(M_PI * progress));
    return peak * (min_ratio + (1 - min_ratio) * cosine);
}

at::Tensor to_tensor(const std::vector<std::int64_t>& v, std::int64_t rows, std::int64_t cols,
                     const c10::Device& device) {
    at::Tensor t = at::empty({rows, cols}, at::kLong);
    std::memcpy(t.data_ptr<std::int64_t>(), v.data(), v.size() * sizeof(std::int64_t));
    return t.to(device);   // the same tensor on the CPU
}

}  // namespace

const Batch& Run::next_batch() {
    const std::int64_t epoch = cursor_ / batches_per_epoch_;
    if (epoch != cached_epoch_) {
        epoch_batches_ = opt_.preference()
                             ? EpochBatches(make_pair_batches(pairs_.train, opt_.seq, opt_.batch, chat_.pad >= 0 ? chat_.pad : 0,
                                                              opt_.seed, epoch, true, true))
                             : EpochBatches(data_.train, opt_.seq, opt_.batch * world(), opt_.padding, chat_.pad, opt_.seed,
                                            epoch, true, true);
        cached_epoch_ = epoch;
    }
    current_batch_ = epoch_batches_[static_cast<size_t>(cursor_ % batches_per_epoch_)];
    ++cursor_;
    return current_batch_;
}

double Run::train_step(std::int64_t step) {
    WINGSPAN_PROFILE_SCOPE(profile::kTrainStep);
    double loss_sum = 0;
    step_metrics_ = PreferenceMetrics{};
    step_tokens_ = 0;
    for (std::int64_t micro = 0; micro < opt_.grad_accum; ++micro) {
        const Batch& global = next_batch();
        step_tokens_ += global.rows * global.cols;   // padded dynamically, a batch's cols vary
        Batch mine;
        const Batch& b = group_ ? (mine = dist::rows_of_rank(global, group_->rank(), world())) : global;
        mem::set_phase(mem::Phase::Forward);
        stops::fault_point("forward");
        // ids and labels stay alive to the micro-batch's end, as before the scope: memory does not move.
        at::Tensor ids, labels, loss;
        double l = 0;
        {
            WINGSPAN_PROFILE_SCOPE(profile::kForward);
            ids = to_tensor(b.input, b.rows, b.cols, device_);
            labels = to_tensor(b.labels, b.rows, b.cols, device_);
            loss = opt_.preference() ? preference_loss(ids, labels, 1.0 / static_cast<double>(opt_.grad_accum))
                                     : model_->loss(ids, labels, opt_.grad_checkpointing);
            l = loss.item<double>();
        }
        if (group_) {
            // Weighed by its share of the global batch's target tokens, the ranks' losses (and
            // so their gradients) sum to those of the global batch's mean loss.
            const double share = static_cast<double>(b.target_tokens) / static_cast<double>(std::max<std::int64_t>(1, global.target_tokens));
            l = group_->sum(b.target_tokens > 0 ? l * share : 0.0);
            loss = loss * share;
        }
        if (!std::isfinite(l))
            throw RunError("nan_loss", "the loss is " + std::string(std::isnan(l) ? "NaN" : "infinite") + " at step " +
                                           std::to_string(step) + " (try a lower --lr)");
        loss_sum += l;
        mem::set_phase(mem::Phase::Backward);
        stops::fault_point("backward");
        if (opt_.grad_accum > 1) loss = loss / static_cast<double>(opt_.grad_accum);
        if (scaler_.enabled) loss = loss * scaler_.scale;
        if (sync_) sync_->begin_backward(micro + 1 == opt_.grad_accum);
        if (step_in_backward_) {
            backward_step_ = step;
            backward_lr_ = lr_at(step, total_steps_, warmup_, lr_, opt_.min_lr_ratio);
            step_in_backward_->begin_backward();
        }
        // Every rank runs backward, one without trained tokens too (its loss is 0, so are its
        // gradients): the gradient hooks, and so the collectives they launch, come in the same
        // order on every rank.
        {
            WINGSPAN_PROFILE_SCOPE(profile::kBackward);
            torch::autograd::backward({loss});
            if (sync_) sync_->end_backward();
            if (step_in_backward_) step_in_backward_->end_backward();
        }
    }
    // Every parameter was stepped, and its gradient freed, in backward: no optimizer phase.
    if (step_in_backward_) return loss_sum;
    mem::set_phase(mem::Phase::Optimizer);
    stops::fault_point("optimizer");
    {
        WINGSPAN_PROFILE_SCOPE(profile::kOptimizer);
        at::NoGradGuard no_grad;
        double sumsq = 0;
        at::Tensor device_sumsq;   // summed on the device, read once
        for (std::size_t i = 0; i < states_.size(); ++i) {
            at::Tensor g = grad_for(i);
            if (!g.defined()) continue;
            retag(g, Component::Gradients);
            if (g.is_cpu()) sumsq += grad_sumsq(g);
            else device_sumsq = device_sumsq.defined() ? device_sumsq + ops::sumsq(g) : ops::sumsq(g);
        }
        if (device_sumsq.defined()) sumsq += device_sumsq.item<double>();
        if (sharded()) sumsq = group_->sum(sumsq);   // each rank holds its range of the gradients
        // Gradients of a scaled loss: an inf or NaN anywhere means the scale overflowed fp16.
        last_loss_scale_ = scaler_.scale;
        last_step_skipped_ = !scaler_.update(std::isfinite(sumsq));
        const double unscale = scaler_.enabled ? 1.0 / last_loss_scale_ : 1.0;
        const double norm = std::sqrt(sumsq) * unscale;
        const double clip = opt_.max_grad_norm > 0 && norm > opt_.max_grad_norm ? opt_.max_grad_norm / (norm + 1e-6) : 1.0;
        const double lr = lr_at(step, total_steps_, warmup_, lr_, opt_.min_lr_ratio);
        for (std::size_t i = 0; i < states_.size(); ++i) {
            at::Tensor g = grad_for(i);
            if (!g.defined()) continue;
            if (!last_step_skipped_) adamw_step(states_[i], g, step, lr, opt_.weight_decay, clip * unscale);
            if (!sharded()) states_[i].param.mutable_grad() = at::Tensor();   // gradients are freed after the step
        }
        if (sync_) sync_->after_update();
    }
    return loss_sum / static_cast<double>(opt_.grad_accum);
}

void Run::step_now(std::size_t state) {
    at::NoGradGuard no_grad;
    // The step's temporaries (none in the CPU kernels) are the optimizer's, as in the planner.
    mem::Scope scope(Component::OptimizerState);
    ParamState& s = states_[state];
    {
        const at::Tensor g = s.param.grad();
        if (!g.defined()) return;
        // Unclipped and unscaled (both refused with the flag): the same update as train_step's
        // with gscale 1, bit for bit.
        adamw_step(s, g, backward_step_, backward_lr_, opt_.weight_decay, 1.0);
    }
    s.param.mutable_grad() = at::Tensor();   // freed once the engine drops its input reference
}

double Run::evaluate() {
    if (eval_batches_.empty()) return std::nan("");
    mem::set_phase(mem::Phase::Eval);
    stops::fault_point("eval");
    if (opt_.preference()) {
        const double l = evaluate_preference();
        mem::set_phase(mem::Phase::Idle);
        return l;
    }
    at::NoGradGuard no_grad;
    double sum = 0;
    std::int64_t n = 0;
    for (size_t i = 0; i < eval_batches_.size(); ++i) {
        const Batch b = eval_batches_[i];
        if (b.target_tokens == 0) continue;
        const double l = model_->loss(to_tensor(b.input, b.rows, b.cols, device_),
                                      to_tensor(b.labels, b.rows, b.cols, device_), false)
                             .item<double>();
        sum += l * static_cast<double>(b.target_tokens);
        n += b.target_tokens;
    }
    mem::set_phase(mem::Phase::Idle);
    return n ? sum / static_cast<double>(n) : std::nan("");
}

void Run::train_loop() {
    const std::int64_t eval_every =
        opt_.eval_every >= 0 ? opt_.eval_every : std::max<std::int64_t>(1, total_steps_ / 5);
    // WINGSPAN_PROFILE_TRACE: written when the loop ends, however it ends (evaluation and
    // checkpoints between steps are in the trace but outside the steps' scopes).
    StepTrace trace(!group_ || group_->rank() == 0);
    if (!trace.error().empty()) throw RunError("bad_argument", trace.error());
    while (step_ < total_steps_) {
        const std::int64_t step = step_ + 1;
        mem::set_step(step);
        trace.before_step();
        const auto t0 = std::chrono::steady_clock::now();
        const double loss = train_step(step);
        dev::synchronize(device_);   // a GPU's queued work belongs to this step's time
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        step_ = step;
        losses_.push_back(loss);
        mem::set_phase(mem::Phase::Idle);
        // The rows × cols of every rank's micro-batches (a preference micro-batch of B pairs is 2·B rows).
        const std::int64_t tokens = step_tokens_;
        json fields = {{"step", step},
                       {"total_steps", total_steps_},
                       {"loss", loss},
                       {"lr", lr_at(step, total_steps_, warmup_, lr_, opt_.min_lr_ratio)},
                       {"tokens_per_s", dt > 0 ? static_cast<double>(tokens) / dt : 0.0},
                       {"tokens", tokens},
                       {"step_time_s", dt},
                       {"epoch", static_cast<double>(cursor_) / static_cast<double>(batches_per_epoch_)}};
        if (scaler_.enabled) {
            fields["loss_scale"] = last_loss_scale_;
            fields["skipped"] = last_step_skipped_;   // gradients overflowed: the weights did not move
        }
        if (opt_.preference()) fields["preference"] = step_metrics_.to_json(opt_.objective);
        emit(EventType::Step, fields);
        const bool stop = stop_requested();
        if (eval_every > 0 && step % eval_every == 0 && step < total_steps_ && !stop) {
            const double el = evaluate();
            if (std::isfinite(el)) emit_eval(step, el);
        }
        if (stop) return;
        if (opt_.save_every > 0 && step % opt_.save_every == 0 && step < total_steps_ && !opt_.out_dir.empty())
            save_checkpoint(fs::path(opt_.out_dir) / ("checkpoint-" + std::to_string(step)), false);
    }
    trace.finish();
    const double el = evaluate();
    if (std::isfinite(el)) emit_eval(step_, el);
}

void Run::emit_eval(std::int64_t step, double loss) {
    json fields = {{"step", step}, {"loss", loss}};
    if (opt_.preference()) fields["preference"] = eval_metrics_.to_json(opt_.objective);
    emit(EventType::Eval, fields);
}

std::string Run::sample() {
    if (opt_.sample_tokens <= 0 || interrupted()) return "";
    mem::set_phase(mem::Phase::Eval);
    stops::fault_point("sample");
    // The prompt of a held-out example (everything before its first trained token).
    const std::vector<Example>& pool = data_.eval.empty() ? data_.train : data_.eval;
    std::vector<std::int64_t> prompt;
    if (!pool.empty()) {
        const Example& e = pool.front();
        size_t end = 0;
        while (end < e.ids.size() && !e.trained[end]) ++end;
        if (end == 0) end = std::min<size_t>(8, e.ids.size());
        prompt.assign(e.ids.begin(), e.ids.begin() + static_cast<std::ptrdiff_t>(end));
        if (prompt.size() > 96) prompt.erase(prompt.begin(), prompt.end() - 96);
    }
    if (prompt.empty()) prompt.push_back(chat_.bos >= 0 ? chat_.bos : 0);
    std::int64_t stop = chat_.eos;
    if (chat_.kind == ChatFormat::ChatML) stop = tok_->token_id("<|im_end|>").value_or(stop);
    if (chat_.kind == ChatFormat::Llama3) stop = tok_->token_id("<|eot_id|>").value_or(stop);
    log_info("generating a sample of up to " + std::to_string(opt_.sample_tokens) + " tokens");
    // A stop signal ends the sample at the token at hand (a long sample of a big model on a CPU
    // takes minutes): what was generated so far is the sample.
    const auto out = model_->generate(prompt, opt_.sample_tokens, stop, [] { return interrupted(); });
    mem::set_phase(mem::Phase::Idle);
    return valid_utf8(tok_->decode(std::vector<std::int32_t>(out.begin(), out.end()), true));
}

void Run::emit_done(const std::string& reason) {
    const mem::Snapshot now = mem::snapshot();
    json d = {{"reason", reason},
              {"steps", step_},
              {"peak_bytes", now.peak},
              {"reserved_peak_bytes", now.reserved_peak},
              {"rss_peak_bytes", mem::read_rss().hwm}};
    if (const auto gpu = mem::device_process_peak_bytes()) d["device_process_peak_bytes"] = *gpu;
    if (!last_checkpoint_.empty()) d["checkpoint"] = last_checkpoint_.string();
    // Each component's own peak, exact from the allocator (the sampled events can miss one).
    d["component_peaks"] = protocol::components_to_json(now.component_peaks);
    if (reason != "error" && (!group_ || group_->rank() == 0)) {   // the ranks hold the same weights
        const bool stopped_before = interrupted();
        try {
            d["sample"] = sample();
        } catch (const std::exception& e) {
            log_warning(std::string("no sample: ") + e.what());
        }
        // Stopped while sampling: the run ends as any stopped run does (its files are saved).
        if (!stopped_before && interrupted()) {
            log_warning("interrupted during the sample: it ends where it was");
            d["reason"] = "interrupted";
        }
    }
    if (!losses_.empty()) d["final_loss"] = losses_.back();
    emit(EventType::Done, d);
}

}  // namespace wingspan::train::detail
