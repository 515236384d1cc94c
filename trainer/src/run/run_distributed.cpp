// The data-parallel parts of a run (issue 18): gradients and stops agreed across ranks, sharded
// optimizer state gathered for checkpoints (distributed*.cpp hold the collectives).
#include "run/run.hpp"

#include <ATen/ATen.h>

#include <exception>
#include <utility>

namespace wingspan::train::detail {

at::Tensor Run::grad_for(std::size_t state) const {
    return sharded() ? sync_->grad_of(sync_->pieces()[state]) : states_[state].param.grad();
}

bool Run::stop_requested() {
    bool stop = interrupted();
    // Ranks stop together, after the same step (a signal reaches them at different moments).
    if (group_) stop = group_->sum(stop ? 1.0 : 0.0) > 0;
    stopping_ = stopping_ || stop;
    return stopping_;
}

// Sharded runs: whole-parameter optimizer states (gathered from every rank) go into states_ for a
// checkpoint to save or a resume to fill; `held` keeps this rank's pieces meanwhile. The second
// call puts the pieces back, each taking its range of the whole states.
void Run::swap_optimizer_state(std::vector<ParamState>& held) {
    at::NoGradGuard no_grad;
    if (held.empty()) {
        mem::Scope scope(Component::Activations);   // checkpoint temporaries, like its reads and writes
        const at::Tensor m = sync_->gather(shard_m_), v = sync_->gather(shard_v_);
        const at::Tensor master = shard_master_.defined() ? sync_->gather(shard_master_) : at::Tensor();
        const auto trainable = model_->trainable();
        std::vector<ParamState> whole;
        for (std::size_t i = 0; i < trainable.size(); ++i) {
            const at::Tensor& p = trainable[i].tensor;
            auto part = [&](const at::Tensor& flat) { return flat.narrow(0, sync_->flat_offset(i), p.numel()).view(p.sizes()); };
            whole.push_back({trainable[i].name, p, master.defined() ? part(master) : at::Tensor(), part(m), part(v)});
        }
        held = std::exchange(states_, std::move(whole));
        return;
    }
    for (std::size_t k = 0; k < held.size(); ++k) {
        const auto& piece = sync_->pieces()[k];
        const ParamState& w = states_[piece.param];
        auto range = [&](const at::Tensor& t) { return t.reshape(-1).narrow(0, piece.begin, piece.length); };
        held[k].m.copy_(range(w.m));
        held[k].v.copy_(range(w.v));
        if (held[k].master.defined()) held[k].master.copy_(range(w.master));
    }
    states_ = std::exchange(held, {});
}

// Every rank takes part (sharded state is gathered), rank 0 writes.
fs::path Run::save_checkpoint(const fs::path& dir, bool final) {
    if (!group_) return save(dir, final);
    std::vector<ParamState> held;
    if (sharded()) swap_optimizer_state(held);
    fs::path path;
    std::exception_ptr failed;
    if (group_->rank() == 0) {
        try {
            path = save(dir, final);
        } catch (...) {
            failed = std::current_exception();
        }
    }
    if (sharded()) swap_optimizer_state(held);
    if (failed) std::rethrow_exception(failed);
    return path;
}

}  // namespace wingspan::train::detail
