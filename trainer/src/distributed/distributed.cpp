#include "distributed/distributed.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cerrno>
#include <cstdlib>

#include "memory/memory.hpp"
#include "support/torch_version.hpp"

namespace wingspan::train::dist {

namespace {

// c10 messages carry a backtrace after the first line.
std::string first_line(const std::string& s) {
    const auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
}

int env_int(const char* name, int fallback, long min_value, long max_value) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    errno = 0;
    const long x = std::strtol(v, &end, 10);
    if (*end != '\0' || errno != 0 || x < min_value || x > max_value)
        throw std::invalid_argument(std::string(name) + "=\"" + v + "\" is not an integer in [" +
                                    std::to_string(min_value) + ", " + std::to_string(max_value) + "]");
    return static_cast<int>(x);
}

// A tensor gloo cannot take travels as an fp32 copy (Group::wire_dtype), counted with the
// component the caller allocates for (gradients, checkpoint temporaries): the planner predicts it
// there (profile key bf16_collectives_in_fp32).
bool needs_staging(const at::Tensor& t) { return Group::wire_dtype(t.scalar_type()) != t.scalar_type(); }
at::Tensor staged_copy(const at::Tensor& t) { return t.to(at::kFloat); }

bool is_loopback(const std::string& host) {
    return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

}  // namespace

JobEnv job_from_environment() {
    JobEnv e;
    e.world_size = env_int("WORLD_SIZE", 1, 1, 1 << 20);
    if (e.world_size == 1) return e;
    if (!std::getenv("RANK")) throw std::invalid_argument("WORLD_SIZE is set but RANK is not");
    e.rank = env_int("RANK", 0, 0, e.world_size - 1);
    e.local_rank = env_int("LOCAL_RANK", e.rank, 0, 1 << 20);
    e.local_world_size = env_int("LOCAL_WORLD_SIZE", e.world_size, 1, e.world_size);
    if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
    e.master_port = env_int("MASTER_PORT", e.master_port, 1, 65535);
    return e;
}

// What the collectives are called on: torch 2.0 split c10d's process group into a ProcessGroup
// front and per-device Backends, and ProcessGroupGloo became a Backend (class ProcessGroupGloo :
// public Backend, torch/csrc/distributed/c10d/ProcessGroupGloo.hpp); in 1.13 it is a
// ProcessGroup. Both have the same allreduce/reduce/broadcast/allgather/barrier calls.
#if WINGSPAN_TORCH_AT_LEAST(2, 0)
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

struct Group::Impl {
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<CollectiveGroup> pg;
};

void Pending::wait() {
    if (!work_) return;
    try {
        work_->wait();
    } catch (const std::exception& e) {
        work_.reset();
        throw CollectiveError(what_ + " failed (another rank stopped or did not answer): " + first_line(e.what()));
    }
    work_.reset();
    if (target_.defined()) target_.copy_(staged_);
    staged_ = target_ = at::Tensor();
}

std::unique_ptr<Group> Group::join(const JobEnv& env, std::chrono::milliseconds timeout) {
    std::unique_ptr<Group> g(new Group());
    g->impl_ = std::make_unique<Impl>();
    g->rank_ = env.rank;
    g->world_ = env.world_size;
    g->timeout_ = timeout;
    try {
        c10d::TCPStoreOptions so;
        so.port = static_cast<std::uint16_t>(env.master_port);
        // Under torchrun the agent already serves the store at MASTER_PORT: every rank is a client.
        const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
        so.isServer = env.rank == 0 && !(agent_store && std::string(agent_store) == "True");
        so.numWorkers = env.world_size;
        so.waitWorkers = true;
        so.timeout = timeout;
        // Our keys apart from anything else in a shared store.
        g->impl_->store = c10::make_intrusive<c10d::PrefixStore>(
            "wingspan-train/", c10::make_intrusive<c10d::TCPStore>(env.master_addr, so));
    } catch (const std::exception& e) {
        throw CollectiveError("rendezvous at " + env.master_addr + ":" + std::to_string(env.master_port) +
                              " failed within " + std::to_string(timeout.count() / 1000) + " s: " + first_line(e.what()));
    }
    try {
        // This trainer runs on the CPU today; NCCL is the backend for CUDA tensors where the
        // libtorch build has it (USE_C10D_NCCL), selected by the device code when it lands.
        auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
        if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
            opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
        else if (is_loopback(env.master_addr))
            opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        else
            opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        g->impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(g->impl_->store, env.rank, env.world_size, opts);
        g->backend_ = "gloo";
    } catch (const std::exception& e) {
        throw CollectiveError("the gloo process group did not form: " + first_line(e.what()));
    }
    return g;
}

Group::~Group() = default;

at::ScalarType Group::wire_dtype(at::ScalarType dt) { return dt == at::kBFloat16 ? at::kFloat : dt; }

double Group::sum(double x) {
    at::Tensor t;
    {
        mem::Scope scope(Component::FrameworkOverhead);   // communication workspace
        t = at::full({1}, x, at::kDouble);
    }
    all_reduce_sum(t).wait();
    return t.item<double>();
}

Pending Group::all_reduce_sum(at::Tensor t) {
    const at::Tensor target = needs_staging(t) ? t : at::Tensor();
    std::vector<at::Tensor> ts{target.defined() ? staged_copy(t) : std::move(t)};
    try {
        return Pending(impl_->pg->allreduce(ts), "all-reduce", target.defined() ? ts[0] : at::Tensor(), target);
    } catch (const std::exception& e) {
        throw CollectiveError("all-reduce failed: " + first_line(e.what()));
    }
}

Pending Group::reduce_sum(at::Tensor t, int root) {
    const at::Tensor target = needs_staging(t) && root == rank_ ? t : at::Tensor();
    std::vector<at::Tensor> ts{needs_staging(t) ? staged_copy(t) : std::move(t)};
    c10d::ReduceOptions o;
    o.rootRank = root;
    try {
        return Pending(impl_->pg->reduce(ts, o), "reduce", target.defined() ? ts[0] : at::Tensor(), target);
    } catch (const std::exception& e) {
        throw CollectiveError("reduce failed: " + first_line(e.what()));
    }
}

Pending Group::broadcast(at::Tensor t, int root) {
    const at::Tensor target = needs_staging(t) && root != rank_ ? t : at::Tensor();
    std::vector<at::Tensor> ts{needs_staging(t) ? staged_copy(t) : std::move(t)};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    try {
        return Pending(impl_->pg->broadcast(ts, o), "broadcast", target.defined() ? ts[0] : at::Tensor(), target);
    } catch (const std::exception& e) {
        throw CollectiveError("broadcast failed: " + first_line(e.what()));
    }
}

void Group::all_gather(const at::Tensor& mine, at::Tensor& all) {
    if (needs_staging(all)) {
        at::Tensor staged_all = staged_copy(all);
        all_gather(staged_copy(mine), staged_all);
        all.copy_(staged_all);
        return;
    }
    const std::int64_t n = mine.numel();
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < world_; ++r) out[0].push_back(all.narrow(0, r * n, n));
    std::vector<at::Tensor> in{mine.contiguous()};
    try {
        Pending(impl_->pg->allgather(out, in), "all-gather").wait();
    } catch (const CollectiveError&) {
        throw;
    } catch (const std::exception& e) {
        throw CollectiveError("all-gather failed: " + first_line(e.what()));
    }
}

void Group::barrier() {
    try {
        Pending(impl_->pg->barrier(), "barrier").wait();
    } catch (const CollectiveError&) {
        throw;
    } catch (const std::exception& e) {
        throw CollectiveError("barrier failed: " + first_line(e.what()));
    }
}

}  // namespace wingspan::train::dist
