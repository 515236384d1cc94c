#pragma once
// Gradient synchronisation and ZeRO sharding for a data-parallel run.
//
// The trainable parameters, in model order, form one flat index space of P elements. Buckets are
// contiguous ranges of parameters (about kBucketBytes each). A bucket's collective is launched
// during backward, as soon as the last of its gradients has been accumulated (a post hook on
// each parameter's AccumulateGrad node says so), while backward goes on making the earlier
// layers' gradients. Buckets whose gradients did not all arrive (a parameter this backward did
// not reach) are launched when backward returns. Every rank runs backward, one without trained
// tokens too, so the collectives come in the same order on every rank.
//
//  ddp   : each bucket has a persistent flat buffer (the planner's "DDP all-reduce buckets", a
//          second copy of the gradients); gradients are copied in, all-reduced (summed), copied
//          back into each parameter's .grad.
//  zero1 : the bucket's gradients are all-reduced in place (no second copy); rank r owns the
//          r-th of N equal ranges of the flat space and keeps AdamW moments (and the fp32
//          master) for that range only; after its update the ranks all-gather the weights.
//  zero2 : as DeepSpeed's stage 2 with contiguous gradients: one flat reduce buffer of
//          kGradientBucketBytes (all the gradients, if fewer), held throughout. Each gradient,
//          as soon as it is accumulated, is copied into the buffer and freed; when the next one
//          does not fit, the buffer's ranges are reduced to the ranks that own them (a
//          reduce-scatter made of reduces: gloo in libtorch 1.13 has no reduce_scatter) and each
//          rank adds its range to its gradient shard. So a rank holds its shard, the buffer and,
//          in backward, the one whole gradient being copied in: what the planner predicts. A
//          gradient larger than the buffer is reduced where it is. Every micro-batch is reduced;
//          every rank runs the same backward, so the reductions come in the same order.
//
// Gradients are summed, not averaged: each rank scales its loss by its share of the global
// batch's target tokens, so the sum is the gradient of the global mean loss.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "data/data.hpp"
#include "distributed/distributed.hpp"
#include "optim/grad_hooks.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/setup.hpp"

namespace wingspan::train::dist {

// Rank r's rows of a global batch of world × b rows: rows r·b ... (r+1)·b - 1.
Batch rows_of_rank(const Batch& global, int rank, int world);

class GradientSync {
public:
    static constexpr std::int64_t kBucketBytes = kGradientBucketBytes;   // core's, which predicts from it

    // A piece of parameter `param` (elements [begin, begin+length) of its flat view) that this
    // rank owns; `shard_offset` is where it sits in this rank's shard.
    struct Piece {
        std::size_t param = 0;
        std::int64_t begin = 0, length = 0, shard_offset = 0;
    };

    GradientSync(Group& group, Sharding sharding, std::vector<at::Tensor> params);

    bool sharded() const { return sharding_ == Sharding::Zero1 || sharding_ == Sharding::Zero2; }
    // This rank's range of the flat space (sharded runs; the whole space for ddp).
    std::int64_t shard_elements() const { return owned_end_ - owned_begin_; }
    const std::vector<Piece>& pieces() const { return pieces_; }
    // `shard` (shard_elements() long) seen as the part belonging to `p`.
    static at::Tensor piece_of(const at::Tensor& shard, const Piece& p) { return shard.narrow(0, p.shard_offset, p.length); }
    // The parameter's elements of a piece (a view sharing the parameter's storage).
    at::Tensor param_piece(const Piece& p) const;

    // Before each backward: whether it is the last micro-batch of the step.
    void begin_backward(bool last_micro_batch);
    // After each backward. After the last one of a step, ddp/zero1 leave each parameter's .grad
    // summed over ranks; zero2 leaves this rank's range in grad_of().
    void end_backward();
    // The summed gradient of a piece (a view into .grad, or into zero2's shard buffer).
    at::Tensor grad_of(const Piece& p) const;
    // After the sharded update: all-gather the updated weights, free the step's gradients.
    void after_update();

    // Full flat P-element tensor from every rank's shard (checkpoints).
    at::Tensor gather(const at::Tensor& shard);
    // This rank's shard of a full flat tensor.
    at::Tensor shard_of(const at::Tensor& full) const { return full.narrow(0, owned_begin_, shard_elements()); }
    std::int64_t flat_offset(std::size_t param) const { return offsets_[param]; }

private:
    struct Bucket {
        std::size_t first = 0, last = 0;   // parameters [first, last)
        std::int64_t begin = 0, end = 0;   // flat range
        at::Tensor buffer;                 // ddp only
        std::vector<Pending> work;
        bool launched = false;
        int waiting = 0;                   // gradients not yet accumulated this backward
    };
    void on_accumulated(std::size_t param);
    void launch(Bucket& b);
    void complete(Bucket& b);
    at::Tensor flat_grads(const Bucket& b);
    // zero2: gradients copied into the reduce buffer as they arrive, reduced when it is full.
    void zero2_accumulated(std::size_t param);
    void zero2_reduce_buffer();
    void zero2_reduce(const at::Tensor& flat, const std::vector<std::pair<std::size_t, std::int64_t>>& entries,
                      std::int64_t from = 0, std::int64_t to = std::numeric_limits<std::int64_t>::max());
    void zero2_reduce_through_buffer(const at::Tensor& g, std::size_t param);

    Group& group_;
    Sharding sharding_;
    std::vector<at::Tensor> params_;
    std::vector<std::int64_t> offsets_;   // flat offset of each parameter
    std::int64_t total_ = 0;
    std::int64_t owned_begin_ = 0, owned_end_ = 0;
    std::vector<Piece> pieces_;
    std::vector<Bucket> buckets_;
    std::vector<std::size_t> bucket_of_;
    std::deque<Bucket*> in_flight_;
    at::Tensor shard_grad_;               // zero2: this rank's range of the summed gradients
    at::Tensor reduce_buffer_;            // zero2: min(kBucketBytes, all gradients), held throughout
    at::Tensor wire_buffer_;              // zero1: the largest gradient in the wire dtype, held throughout
    std::int64_t buffer_fill_ = 0;        // zero2: elements of the buffer in use
    std::vector<std::pair<std::size_t, std::int64_t>> buffer_entries_;   // zero2: (parameter, offset) in it
    std::vector<AccumulatorRef> accumulators_;   // kept alive with their hooks
    bool armed_ = false;
    int gradients_waiting_ = 0;           // this backward's gradients not yet accumulated
    int launched_during_backward_ = 0;    // in the first synchronised backward, for its log line
    bool reported_ = false;
};

}  // namespace wingspan::train::dist
