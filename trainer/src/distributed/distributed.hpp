#pragma once
// One process of a data-parallel job: which rank it is (torchrun's environment variables, as
// `wingspan-train --nproc N` also sets them) and its c10d process group (TCPStore rendezvous,
// gloo on CPU; NCCL only where libtorch was built with it). Every collective has a timeout, and
// a failed one (a rank died, or did not answer in time) throws CollectiveError instead of hanging.
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace wingspan::train::dist {

// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
struct JobEnv {
    int rank = 0;
    int world_size = 1;
    int local_rank = 0;
    int local_world_size = 1;   // ranks on this machine (they share its CPUs)
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
};

// No WORLD_SIZE (or 1): a single process. Throws std::invalid_argument naming the variable
// when one is malformed or inconsistent (RANK outside [0, WORLD_SIZE), a port outside 1..65535).
JobEnv job_from_environment();

// A collective (or the rendezvous) failed: another rank stopped, or did not answer in time.
struct CollectiveError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A collective in flight; wait() throws CollectiveError on failure. A staged collective ran on
// an fp32 copy (gloo has no bf16) that wait() copies back into the target.
class Pending {
public:
    Pending() = default;
    Pending(c10::intrusive_ptr<c10d::Work> work, std::string what, at::Tensor staged = {}, at::Tensor target = {})
        : work_(std::move(work)), what_(std::move(what)), staged_(std::move(staged)), target_(std::move(target)) {}
    void wait();
    bool valid() const { return static_cast<bool>(work_); }

private:
    c10::intrusive_ptr<c10d::Work> work_;
    std::string what_;
    at::Tensor staged_, target_;
};

class Group {
public:
    // Rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 hosts the store) and builds the process group.
    // `timeout` bounds the rendezvous and every collective.
    static std::unique_ptr<Group> join(const JobEnv& env, std::chrono::milliseconds timeout);
    ~Group();

    int rank() const { return rank_; }
    int world_size() const { return world_; }
    std::chrono::milliseconds timeout() const { return timeout_; }
    const std::string& backend() const { return backend_; }

    // The dtype tensors of `dt` travel in: gloo in libtorch 1.13 reduces and gathers no bf16,
    // so bf16 goes as fp32 (exact for bf16 values; the sum is rounded once when copied back).
    static at::ScalarType wire_dtype(at::ScalarType dt);

    // Sums of one number over all ranks (losses, gradient norms, stop flags).
    double sum(double x);
    // In place, sums over all ranks.
    Pending all_reduce_sum(at::Tensor t);
    // Sums into `t` on `root` only; other ranks' `t` is left undefined.
    Pending reduce_sum(at::Tensor t, int root);
    // `t` (contiguous) on every rank gets root's `t`, in place.
    Pending broadcast(at::Tensor t, int root);
    // `all` (world_size × chunk elements, contiguous) gets every rank's `mine` in rank order.
    void all_gather(const at::Tensor& mine, at::Tensor& all);
    void barrier();

private:
    Group() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    int rank_ = 0, world_ = 1;
    std::chrono::milliseconds timeout_{0};
    std::string backend_;
};

}  // namespace wingspan::train::dist
