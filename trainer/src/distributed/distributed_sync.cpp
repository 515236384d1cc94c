#include "distributed/distributed_sync.hpp"

#include <algorithm>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/variable.h>

#include "support/emit.hpp"
#include "memory/memory.hpp"
#include "model/model.hpp"

namespace wingspan::train::dist {

Batch rows_of_rank(const Batch& global, int rank, int world) {
    Batch b;
    b.rows = global.rows / world;
    b.cols = global.cols;
    const auto first = static_cast<std::ptrdiff_t>(rank * b.rows * b.cols);
    const auto count = static_cast<std::ptrdiff_t>(b.rows * b.cols);
    b.input.assign(global.input.begin() + first, global.input.begin() + first + count);
    b.labels.assign(global.labels.begin() + first, global.labels.begin() + first + count);
    b.target_tokens = std::count_if(b.labels.begin(), b.labels.end(), [](std::int64_t l) { return l != -100; });
    return b;
}

GradientSync::GradientSync(Group& group, Sharding sharding, std::vector<at::Tensor> params)
    : group_(group), sharding_(sharding), params_(std::move(params)) {
    if (params_.empty()) throw std::invalid_argument("data parallel training needs trainable parameters");
    for (const auto& p : params_) {
        if (p.scalar_type() != params_.front().scalar_type())
            throw std::invalid_argument("data parallel training needs one dtype for all trainable parameters");
        offsets_.push_back(total_);
        total_ += p.numel();
    }
    const int n = group_.world_size(), r = group_.rank();
    if (sharded()) {
        const std::int64_t chunk = (total_ + n - 1) / n;
        owned_begin_ = std::min(total_, r * chunk);
        owned_end_ = std::min(total_, (r + 1) * chunk);
        for (std::size_t i = 0; i < params_.size(); ++i) {
            const std::int64_t lo = std::max(owned_begin_, offsets_[i]);
            const std::int64_t hi = std::min(owned_end_, offsets_[i] + params_[i].numel());
            if (hi > lo) pieces_.push_back({i, lo - offsets_[i], hi - lo, lo - owned_begin_});
        }
    } else {
        owned_end_ = total_;
    }
    // Buckets in the order backward fills them: from the last parameter to the first.
    bucket_of_.resize(params_.size());
    const std::int64_t elem = params_.front().element_size();
    std::size_t last = params_.size();
    while (last > 0) {
        std::size_t first = last - 1;
        std::int64_t bytes = params_[first].numel() * elem;
        while (first > 0 && bytes + params_[first - 1].numel() * elem <= kBucketBytes) {
            --first;
            bytes += params_[first].numel() * elem;
        }
        Bucket b;
        b.first = first;
        b.last = last;
        b.begin = offsets_[first];
        b.end = offsets_[last - 1] + params_[last - 1].numel();
        buckets_.push_back(std::move(b));
        last = first;
    }
    for (std::size_t k = 0; k < buckets_.size(); ++k)
        for (std::size_t i = buckets_[k].first; i < buckets_[k].last; ++i) bucket_of_[i] = k;
    {
        mem::Scope scope(Component::Gradients);
        // DDP's buckets and ZeRO-2's reduce bucket are in the dtype the collectives take (fp32
        // for bf16 gradients on gloo): the bf16 gradients are widened into them, no staged copy.
        const auto wire = params_.front().options().dtype(Group::wire_dtype(params_.front().scalar_type()));
        if (sharding_ == Sharding::Ddp)
            for (auto& b : buckets_) b.buffer = at::zeros({b.end - b.begin}, wire);
        if (sharding_ == Sharding::Zero2) {
            shard_grad_ = at::zeros({shard_elements()}, params_.front().options());
            reduce_buffer_ = at::zeros({std::min(kBucketBytes / elem, total_)}, wire);
        }
        if (sharding_ == Sharding::Zero1) {
            std::int64_t largest = 0;
            for (const auto& p : params_) largest = std::max(largest, p.numel());
            wire_buffer_ = at::zeros({largest}, wire);
        }
    }
    // Each parameter's AccumulateGrad node tells when its gradient is in .grad (grad_hooks.hpp).
    for (std::size_t i = 0; i < params_.size(); ++i)
        accumulators_.push_back(
            hook_gradient_accumulated(params_[i], [this, i] { on_accumulated(i); }, "data parallel training"));
}

at::Tensor GradientSync::param_piece(const Piece& p) const {
    return params_[p.param].detach().view(-1).narrow(0, p.begin, p.length);
}

void GradientSync::begin_backward(bool last_micro_batch) {
    // zero2 reduces every micro-batch (and accumulates its own range); the others sync once.
    armed_ = last_micro_batch || sharding_ == Sharding::Zero2;
    gradients_waiting_ = static_cast<int>(params_.size());
    for (auto& b : buckets_) {
        b.launched = false;
        b.waiting = static_cast<int>(b.last - b.first);
    }
}

// Parameter `param`'s gradient has just been accumulated into its .grad: launch its bucket if it
// was the bucket's last. A bucket launched while other gradients are still to come overlaps the
// rest of backward.
void GradientSync::on_accumulated(std::size_t param) {
    if (!armed_) return;
    if (sharding_ == Sharding::Zero2) return zero2_accumulated(param);
    --gradients_waiting_;
    Bucket& b = buckets_[bucket_of_[param]];
    if (--b.waiting == 0 && !b.launched) {
        if (gradients_waiting_ > 0) ++launched_during_backward_;
        launch(b);
    }
}

at::Tensor GradientSync::flat_grads(const Bucket& b) {
    for (std::size_t i = b.first; i < b.last; ++i) {
        at::Tensor slice = b.buffer.narrow(0, offsets_[i] - b.begin, params_[i].numel());
        const at::Tensor& g = params_[i].grad();
        if (g.defined()) slice.copy_(g.reshape(-1));
        else slice.zero_();   // no gradient reached it on this rank: it adds nothing
    }
    return b.buffer;
}

// shard += part, where a bf16 shard takes an fp32 sum off the wire: ATen's add_ computes in fp32 into
// a temporary the size of the part and copies it back (TensorIterator casts its output), bytes no
// planner row has; on the CPU each element is added and rounded in place instead (the same
// arithmetic: the fp32 sum rounded to bf16 once).
static void add_into_shard(at::Tensor shard, const at::Tensor& part) {
    if (shard.scalar_type() != at::kBFloat16 || part.scalar_type() != at::kFloat || !shard.is_cpu() ||
        !shard.is_contiguous() || !part.is_contiguous()) {
        shard.add_(part);
        return;
    }
    auto* dst = shard.data_ptr<at::BFloat16>();
    const float* src = part.data_ptr<float>();
    at::parallel_for(0, shard.numel(), 1 << 15, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) dst[i] = at::BFloat16(static_cast<float>(dst[i]) + src[i]);
    });
}

// The part of parameter i's flat range that rank r owns, as [lo, hi) within the parameter.
static std::pair<std::int64_t, std::int64_t> owned_part(std::int64_t offset, std::int64_t n, std::int64_t total, int world,
                                                        int r) {
    const std::int64_t chunk = (total + world - 1) / world;
    const std::int64_t lo = std::max(offset, std::min(total, r * chunk));
    const std::int64_t hi = std::min(offset + n, std::min(total, (r + 1) * chunk));
    return {lo - offset, std::max(lo, hi) - offset};
}

void GradientSync::launch(Bucket& b) {
    at::NoGradGuard no_grad;
    b.launched = true;
    if (sharding_ == Sharding::Ddp) {
        b.work.push_back(group_.all_reduce_sum(flat_grads(b)));
    } else {
        // ZeRO-1 reduces each gradient in place through the wire buffer (fp32 for bf16 on gloo),
        // one at a time, so no gradient is ever handed to gloo itself: its worker thread keeps the
        // last work's tensors until it takes the next one, and a gradient it held outlived its
        // reset after the step (4 KB beside the next step's gradients, now and then).
        for (std::size_t i = b.first; i < b.last; ++i) {
            at::Tensor& g = params_[i].mutable_grad();
            if (!g.defined() || !g.is_contiguous()) {
                mem::Scope scope(Component::Gradients);
                g = g.defined() ? g.contiguous() : at::zeros_like(params_[i]);
            }
            at::Tensor w = wire_buffer_.narrow(0, 0, g.numel());
            w.copy_(g.view(-1));
            group_.all_reduce_sum(w).wait();
            g.view(-1).copy_(w);
        }
    }
    in_flight_.push_back(&b);
}

void GradientSync::complete(Bucket& b) {
    at::NoGradGuard no_grad;
    for (auto& w : b.work) w.wait();
    b.work.clear();
    if (sharding_ == Sharding::Ddp) {
        for (std::size_t i = b.first; i < b.last; ++i) {
            at::Tensor slice = b.buffer.narrow(0, offsets_[i] - b.begin, params_[i].numel()).view(params_[i].sizes());
            if (params_[i].grad().defined()) {
                params_[i].mutable_grad().copy_(slice);
            } else {
                mem::Scope scope(Component::Gradients);
                params_[i].mutable_grad() = slice.to(params_[i].scalar_type(), false, true);   // a copy
            }
        }
    }
}

// ---- zero2 ----

// Parameter i's gradient has just been accumulated: copy it into the reduce buffer (reducing
// the buffer first if it has no room left) and free it. Every rank runs the same backward, so
// the gradients arrive, and the buffer is reduced, in the same order on every rank.
void GradientSync::zero2_accumulated(std::size_t i) {
    --gradients_waiting_;
    at::NoGradGuard no_grad;
    at::Tensor& g = params_[i].mutable_grad();
    if (!g.defined()) return;
    // Whatever autograd allocated it as (a clone made to match the parameter's strides is
    // working memory), the whole gradient is a gradient until it is in the buffer.
    retag(g, Component::Gradients);
    const std::int64_t n = g.numel();
    if (n > reduce_buffer_.numel()) {   // larger than the buffer: reduced where it is
        zero2_reduce_buffer();
        if (!g.is_contiguous()) {
            mem::Scope scope(Component::Gradients);
            g = g.contiguous();
        }
        zero2_reduce_through_buffer(g.view(-1), i);
        g = at::Tensor();
        return;
    }
    if (buffer_fill_ + n > reduce_buffer_.numel()) zero2_reduce_buffer();
    reduce_buffer_.narrow(0, buffer_fill_, n).view(params_[i].sizes()).copy_(g);
    buffer_entries_.push_back({i, buffer_fill_});
    buffer_fill_ += n;
    g = at::Tensor();
}

void GradientSync::zero2_reduce_buffer() {
    if (buffer_entries_.empty()) return;
    if (gradients_waiting_ > 0) ++launched_during_backward_;
    zero2_reduce(reduce_buffer_, buffer_entries_);
    buffer_entries_.clear();
    buffer_fill_ = 0;
}

// Reduces each entry's gradient (parameter, where its element 0 lies in `flat`), range by range, to
// the rank that owns the range (a reduce-scatter out of reduces: gloo in libtorch 1.13 has no
// reduce_scatter), then adds this rank's ranges to its shard. Only the parameters' elements in
// [from, to) are in `flat` (a piece of one large gradient); all of them by default.
void GradientSync::zero2_reduce(const at::Tensor& flat, const std::vector<std::pair<std::size_t, std::int64_t>>& entries,
                                std::int64_t from, std::int64_t to) {
    const int n = group_.world_size();
    // Rank r's part of parameter `param` within [from, to), as [lo, hi) within the parameter.
    auto part = [&](std::size_t param, int r) {
        const auto [lo, hi] = owned_part(offsets_[param], params_[param].numel(), total_, n, r);
        return std::pair{std::max(lo, from), std::min(hi, to)};
    };
    std::vector<Pending> work;
    for (const auto& [param, offset] : entries)
        for (int r = 0; r < n; ++r)
            if (const auto [lo, hi] = part(param, r); hi > lo) work.push_back(group_.reduce_sum(flat.narrow(0, offset + lo, hi - lo), r));
    for (auto& w : work) w.wait();
    for (const auto& [param, offset] : entries)
        if (const auto [lo, hi] = part(param, group_.rank()); hi > lo)
            add_into_shard(shard_grad_.narrow(0, offsets_[param] + lo - owned_begin_, hi - lo), flat.narrow(0, offset + lo, hi - lo));
}

// A gradient larger than the reduce buffer goes through it a buffer's length at a time, in the
// buffer's dtype (fp32 where the collectives take no bf16): no copy of the whole gradient is made,
// where reducing it in place would stage each rank's range of a bf16 gradient as an fp32 copy.
void GradientSync::zero2_reduce_through_buffer(const at::Tensor& g, std::size_t param) {
    const std::int64_t numel = g.numel(), length = reduce_buffer_.numel();
    for (std::int64_t c0 = 0; c0 < numel; c0 += length) {
        const std::int64_t c1 = std::min(numel, c0 + length);
        reduce_buffer_.narrow(0, 0, c1 - c0).copy_(g.narrow(0, c0, c1 - c0));
        zero2_reduce(reduce_buffer_, {{param, -c0}}, c0, c1);   // element c0 at the buffer's start
    }
}

void GradientSync::end_backward() {
    if (!armed_) return;
    if (sharding_ == Sharding::Zero2) zero2_reduce_buffer();   // what is left in it
    for (auto& b : buckets_)
        if (!b.launched && sharding_ != Sharding::Zero2) launch(b);
    while (!in_flight_.empty()) {
        complete(*in_flight_.front());
        in_flight_.pop_front();
    }
    armed_ = false;
    if (!reported_) {
        reported_ = true;
        if (sharding_ == Sharding::Zero2)
            log_info("gradient sync (zero2): a reduce bucket of " + std::to_string(storage_bytes(reduce_buffer_)) + " B, " +
                     std::to_string(launched_during_backward_) + " reduced while backward was still running");
        else
            log_info("gradient sync (" + std::string(to_string(sharding_)) + "): " + std::to_string(buckets_.size()) +
                     " bucket(s) of up to " + std::to_string(kBucketBytes >> 20) + " MiB, " +
                     std::to_string(launched_during_backward_) + " launched while backward was still running");
    }
}

at::Tensor GradientSync::grad_of(const Piece& p) const {
    if (sharding_ == Sharding::Zero2) return shard_grad_.narrow(0, p.shard_offset, p.length);
    return params_[p.param].grad().view(-1).narrow(0, p.begin, p.length);
}

at::Tensor GradientSync::gather(const at::Tensor& shard) {
    const int n = group_.world_size();
    const std::int64_t chunk = (total_ + n - 1) / n;
    at::Tensor mine = at::zeros({chunk}, shard.options());
    if (shard.numel() > 0) mine.narrow(0, 0, shard.numel()).copy_(shard);
    at::Tensor all = at::empty({chunk * n}, shard.options());
    group_.all_gather(mine, all);
    return all.narrow(0, 0, total_);
}

void GradientSync::after_update() {
    if (!sharded()) return;
    at::NoGradGuard no_grad;
    if (sharding_ == Sharding::Zero1)
        for (auto& p : params_) p.mutable_grad() = at::Tensor();
    else
        shard_grad_.zero_();
    // Each rank's updated range goes to every other rank in place, in the parameters
    // themselves: one broadcast per piece, no gathered copy. bf16 travels in fp32 (gloo has no
    // bf16) through one buffer the size of the largest parameter, made once per step: a fresh fp32 copy
    // per piece would leave the previous one alive while gloo's worker thread still holds it, so
    // the bytes would depend on thread timing (core: rows_gradients.cpp "ZeRO parameter piece").
    const int n = group_.world_size();
    const at::ScalarType dtype = params_.front().scalar_type();
    const bool staged = Group::wire_dtype(dtype) != dtype;
    mem::Scope scope(Component::OptimizerState);   // a temporary of the step
    at::Tensor wire;
    if (staged) {
        std::int64_t largest = 0;
        for (const auto& p : params_) largest = std::max<std::int64_t>(largest, p.numel());
        wire = at::empty({largest}, params_.front().options().dtype(Group::wire_dtype(dtype)));
    }
    std::vector<Pending> work;
    for (int r = 0; r < n; ++r)
        for (std::size_t i = 0; i < params_.size(); ++i) {
            const auto [lo, hi] = owned_part(offsets_[i], params_[i].numel(), total_, n, r);
            if (hi <= lo) continue;
            at::Tensor piece = params_[i].detach().view(-1).narrow(0, lo, hi - lo);
            if (!staged) {
                work.push_back(group_.broadcast(piece, r));
                continue;
            }
            at::Tensor on_wire = wire.narrow(0, 0, hi - lo);
            if (r == group_.rank()) on_wire.copy_(piece);
            group_.broadcast(on_wire, r).wait();
            if (r != group_.rank()) piece.copy_(on_wire);
        }
    for (auto& w : work) w.wait();
}

}  // namespace wingspan::train::dist
