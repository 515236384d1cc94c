// The training run: arguments -> model, data, optimizer -> steps, with protocol events.
#include "run/train.hpp"
#include "run/run.hpp"

#include <limits>
#include <cstdlib>
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/autograd/autograd.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "wingspan/trainer_invocation.hpp"
#include "run/checkpoint.hpp"
#include "data/data.hpp"
#include "kernels/device.hpp"
#include "support/cpu_binding.hpp"
#include "memory/device_memory.hpp"
#include "kernels/device_ops.hpp"
#include "distributed/distributed.hpp"
#include "distributed/distributed_sync.hpp"
#include "support/emit.hpp"
#include "kernels/kernels_gemm.hpp"
#include "memory/memory.hpp"
#include "model/model.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_in_backward.hpp"
#include "support/out_lock.hpp"
#include "tokenizer.hpp"
#include "chat_format.hpp"
#include "model/model_source.hpp"
#include "model/weights_io.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/verdict.hpp"
#include "wingspan/version.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;
using protocol::EventType;

using detail::Run;
using detail::RunError;

namespace {

bool g_hello_sent = false;
std::string g_device_name = "cpu";   // what --device asked for until it is resolved

// `hello` is the first line of every run, failed ones included.
void emit_minimal_hello() {
    if (g_hello_sent) return;
    g_hello_sent = true;
    emit(EventType::Hello, {{"trainer", "wingspan-train"},
                            {"version", kVersion},
                            {"torch", TORCH_VERSION},
                            {"device", g_device_name},
                            {"threads", at::get_num_threads()}});
}

void set_threads(int n, const dist::JobEnv& job) {
    at::set_num_threads(n);
    cpu::bind_compute_threads(n, job.local_rank, job.local_world_size);
    // OpenBLAS keeps its own pool; libtorch's setting does not reach it.
    using SetFn = void (*)(int);
    if (auto f = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
}

}  // namespace

namespace detail {

void Run::announce() {
    // The planner's prediction for exactly this run, with this machine's calibration when the
    // user saved one; --precision auto takes bf16-mixed where fp32 would not fit.
    const FrameworkProfile fw = framework_profile();
    fit_precision_to_memory(fw);
    model_ = std::make_unique<Model>(cfg_, model_options());   // shapes only: build_model() allocates
    const std::int64_t base = model_->base_parameter_count();
    const std::int64_t adapter = model_->adapter_parameter_count();
    json plan;
    try {
        plan = setup_.to_json();
    } catch (const std::exception& e) {
        plan = json::object();
    }
    g_hello_sent = true;
    emit(EventType::Hello,
         {{"trainer", "wingspan-train"},
          {"version", kVersion},
          {"torch", TORCH_VERSION},
          {"device", device_.str()},
          {"device_name", dev::info(device_).name},
          {"threads", at::get_num_threads()},
          {"cpu_binding", cpu::binding_summary()},
          {"plan", plan},
          {"precision", precision_.to_json()},
          {"params", {{"total", base + adapter}, {"trainable", opt_.method == Method::Full ? base : adapter}}},
          {"model", opt_.model_dir.empty() ? std::string("built-in default") : opt_.model_dir},
          {"architecture", hf_config_},
          {"tokenizer", tok_->description()},
          {"data", data_path_.string()},
          {"examples", {{"train", data_.train.size()}, {"eval", data_.eval.size()}}},
          {"data_bytes", data_.held_bytes + epoch_batches_.held_bytes() + eval_batches_.held_bytes()},
          {"total_steps", total_steps_},
          {"lr", lr_},
          {"objective", {{"kind", to_string(opt_.objective)},
                         {"beta", opt_.preference() ? json(opt_.beta_or_default()) : json(nullptr)},
                         {"reference", opt_.objective != Objective::Dpo ? "none" : opt_.method == Method::Full ? "copy" : "adapter-off"}}}});
    log_info("precision " + std::string(to_string(precision_.precision)) + ": " + precision_.reason);

    try {
        const MemoryEstimate est = estimate_memory(arch_, setup_at_peak(), fw);
        predicted_total_ = est.total_bytes;
        std::int64_t largest = -1;
        for (const auto& [c, b] : est.components)
            if (b > largest) largest = b, predicted_largest_ = c;
        json predicted = {{"components", protocol::components_to_json(est.components)},
                                    {"component_maxima", protocol::components_to_json(est.component_maxima())},
                                    {"peak_bytes", est.peak_allocated_bytes},
                                    {"total_bytes", est.total_bytes},
                                    {"peak_phase", est.peak_phase},
                                    {"framework", fw.id},
                                    // the micro-batch the prediction is made at (data_lengths.hpp)
                                    {"batch", {{"rows", peak_batch_.rows}, {"cols", peak_batch_.cols},
                                               {"padding", to_string(opt_.padding)}, {"tokens", peak_batch_.tokens()}}},
                                    {"precision", precision_.to_json()}};
        if (device_.is_cpu()) {
            predicted["cpu"] = dev::cpu_bf16_json();
            // The planner's speed on this machine (a GPU has no machine profile here): what the run
            // panel and `wingspan calibrate` compare the step events with.
            const SpeedEstimate speed = estimate_speed(arch_, setup_, detect_this_machine(), fw);
            predicted["tokens_per_s"] = speed.tokens_per_s;
            predicted["step_time_s"] = speed.step_seconds * double(std::max<std::int64_t>(1, setup_.grad_accum));
            predicted["speed_scale"] = fw.speed_scale;
        }
        emit(EventType::Predicted, predicted);
    } catch (const std::exception& e) {
        log_warning(std::string("the planner could not predict this run: ") + e.what());
    }
    for (const auto& w : cfg_.warnings) log_warning(w);
    for (const auto& w : tok_->warnings()) log_warning(w);
    for (const auto& a : arch_.assumptions) log_info("config.json: " + a);
    log_info("data: " + std::to_string(data_.lines) + " lines (" + data_.formats + "), " +
             std::to_string(data_.train.size()) + " train / " + std::to_string(data_.eval.size()) +
             " eval examples, chat format " + chat_.name() + ", " + std::to_string(batches_per_epoch_) +
             " micro-batches per epoch");
}

void Run::build_model() {
    Model::Source source;
    if (weights_) {
        source = [this](const std::string& name, const std::vector<std::int64_t>&) { return weights_->read(name); };
        log_info("weights: " + weights_->describe());
    } else if (!opt_.model_dir.empty()) {
        log_warning(opt_.model_dir + " has config.json but no weights: training from random weights "
                                     "(useful for memory and speed, not for quality)");
    }
    // A full fine-tune resumes from its saved weights instead of the base.
    std::optional<WeightReader> resumed;
    if (!opt_.resume_dir.empty() && opt_.method == Method::Full) {
        const fs::path f = fs::path(opt_.resume_dir) / "model.safetensors";
        if (!fs::exists(f)) throw RunError("io", "--resume: " + f.string() + " does not exist");
        resumed = WeightReader::open_file(f);
        source = [&resumed, f](const std::string& name, const std::vector<std::int64_t>& shape) {
            if (resumed->info(name).shape != shape)   // never broadcast a tensor of another shape
                throw InputError("--resume: " + name + " in " + f.string() + " has shape " +
                                 json(resumed->info(name).shape).dump() + ", this run's is " + json(shape).dump());
            return resumed->read(name);
        };
    }
    try {
        model_->build(source, opt_.seed);
    } catch (const InputError& e) {
        throw RunError("bad_model", e.what());
    }
    build_reference();
}

void Run::build_optimizer() {
    scaler_.enabled = opt_.precision == Precision::Fp16Mixed;
    scaler_.scale = scaler_.enabled ? opt_.initial_loss_scale : 1.0;
    scaler_.growth_interval = opt_.loss_scale_growth;
    const bool mixed = opt_.precision == Precision::Bf16Mixed || opt_.precision == Precision::Fp16Mixed;
    const bool pure_bf16 = opt_.precision == Precision::Bf16;
    // Gradients are made during backward; attribute them as they arrive.
    for (auto& nt : model_->trainable())
        nt.tensor.register_hook([](const at::Tensor& g) {
            retag(g, Component::Gradients);
            return g;
        });
    if (group_) {
        std::vector<at::Tensor> params;
        for (auto& nt : model_->trainable()) params.push_back(nt.tensor);
        sync_ = std::make_unique<dist::GradientSync>(*group_, setup_.sharding, params);
    }
    if (sharded()) {
        // ZeRO: moments (and the fp32 master) for this rank's range of the flat parameters only;
        // each state is a piece of a parameter, viewing the parameter and the shard tensors.
        const auto& trainable = model_->trainable();
        const std::int64_t n = sync_->shard_elements();
        const at::TensorOptions on_device = trainable.front().tensor.options();
        if (mixed) {
            mem::Scope scope(Component::MasterWeights);
            shard_master_ = at::empty({n}, on_device.dtype(at::kFloat));
        }
        {
            mem::Scope scope(Component::OptimizerState);
            shard_m_ = at::zeros({n}, on_device.dtype(pure_bf16 ? at::kBFloat16 : at::kFloat));
            shard_v_ = at::zeros({n}, on_device.dtype(pure_bf16 ? at::kBFloat16 : at::kFloat));
        }
        for (const auto& p : sync_->pieces()) {
            ParamState s;
            s.name = trainable[p.param].name;
            s.param = sync_->param_piece(p);
            s.m = dist::GradientSync::piece_of(shard_m_, p);
            s.v = dist::GradientSync::piece_of(shard_v_, p);
            if (mixed) s.master = dist::GradientSync::piece_of(shard_master_, p).copy_(s.param);
            states_.push_back(std::move(s));
        }
        return;
    }
    for (auto& nt : model_->trainable()) {
        ParamState s;
        s.name = nt.name;
        s.param = nt.tensor;
        if (mixed) {
            mem::Scope scope(Component::MasterWeights);
            s.master = nt.tensor.detach().to(at::kFloat, false, true);
            retag(s.master, Component::MasterWeights);
        }
        {
            mem::Scope scope(Component::OptimizerState);
            const auto dt = pure_bf16 ? at::kBFloat16 : at::kFloat;
            s.m = at::zeros(nt.tensor.sizes(), nt.tensor.options().dtype(dt));
            s.v = at::zeros(nt.tensor.sizes(), nt.tensor.options().dtype(dt));
        }
        states_.push_back(std::move(s));
    }
    if (opt_.optimizer_in_backward) {
        std::vector<at::Tensor> params;
        for (const auto& st : states_) params.push_back(st.param);
        step_in_backward_ = std::make_unique<StepInBackward>(std::move(params), [this](std::size_t i) { step_now(i); });
    }
}

void Run::refuse_if_beyond_machine() const {
    // The planner's total is known before any weight is allocated: a run that cannot fit in
    // this machine's memory stops here instead of allocating until the system kills it.
    if (!device_.is_cpu()) return;   // a GPU answers for its own memory with its own error
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0 || predicted_total_ <= 0) return;
    const std::int64_t ram = static_cast<std::int64_t>(pages) * page;
    if (predicted_total_ <= ram) return;
    throw RunError("out_of_memory",
                   "the planner predicts " + std::to_string(predicted_total_) + " bytes for this run, more than this "
                   "machine's " + std::to_string(ram) + " bytes of memory: nothing was allocated (use a smaller "
                   "model, --batch or --seq, or --method lora/qlora)",
                   {{"component", component_name(predicted_largest_)}, {"bytes", predicted_total_}, {"available_bytes", ram}});
}

bool Run::stopped_during_setup() {
    bool stop = interrupted();
    // Ranks agree here too, as after each step (every rank passes the same checks in the same
    // order): a rank that stopped in setup while another went on left that one failing its next
    // collective ("connection reset by peer").
    if (group_) stop = group_->sum(stop ? 1.0 : 0.0) > 0;
    if (!stop) return false;
    sampler_.stop();
    log_warning("interrupted during setup: no step was trained, nothing saved");
    emit_done("interrupted");
    return true;
}

// --device: a device this build or machine lacks ends the run with device_unavailable, never
// with a quiet fall-back to the CPU.
void Run::select_device() {
    g_device_name = opt_.device;
    try {
        device_ = dev::resolve(opt_.device);
    } catch (const dev::BadDeviceName& e) {
        throw RunError("bad_argument", e.what());
    } catch (const dev::DeviceUnavailable& e) {
        throw RunError("device_unavailable", e.what());
    }
    g_device_name = device_.str();
    mem::set_device_name(device_.str());
    mem::install(device_.is_cpu() ? opt_.memory_limit : 0);
    // A GPU's allocations reach us through c10's reporting hook. WINGSPAN_MEMORY_HOOK=1 uses it
    // on the CPU as well, which is how the tests show it measures what the counting allocator does.
    if (!device_.is_cpu() || std::getenv("WINGSPAN_MEMORY_HOOK"))
        tracking_ = std::make_unique<mem::DeviceTracking>(device_);
    if (!device_.is_cpu()) {
        // The BLAS library's workspace comes from the device allocator on the first matmul and
        // stays: make it now, as framework overhead, so no component's peak includes it.
        mem::Scope scope(Component::FrameworkOverhead);
        const at::Tensor a = at::ones({64, 64}, at::TensorOptions().device(device_));
        (void)at::mm(a, a).sum().item<float>();
    }
    if (const std::string why = dev::apply_memory_limit(device_, opt_.memory_limit); !why.empty())
        throw RunError("bad_argument", "--memory-limit on " + device_.str() + ": " + why);
}

int Run::execute() {
    // The first SIGINT/SIGTERM/SIGHUP asks for a clean stop (checkpoint, `done`), a second one
    // ends the process (stop_signals.hpp). A stop sent before this point is pending and ends the
    // run at setup's first check.
    stops::start_listener(true);
    // More threads than cores only makes them wait for each other (100000 stalled for minutes);
    // the cores are the ones this process may use (taskset, a container's cpuset), not the machine's.
    const int cores = static_cast<int>(cpu::allowed_cpus().size());
    set_threads(opt_.threads > 0 ? std::min(opt_.threads, cores) : cores, job_);
    select_device();
    if (const std::string why = kernels::bf16_path_error(); device_.is_cpu() && !why.empty())
        throw RunError("bad_argument", why);
    if (const std::string why = kernels::fp32_gemm_error(); device_.is_cpu() && !why.empty())
        throw RunError("bad_argument", why);
    choose_precision();
    if (opt_.optimizer_in_backward && opt_.precision == Precision::Fp16Mixed)
        throw RunError("bad_argument", "--precision auto chose fp16-mixed (" + precision_.reason +
                                           "), whose overflowed steps cannot be skipped with --optimizer-in-backward: "
                                           "add --precision fp32 or bf16-mixed");
    mem::set_phase(mem::Phase::Setup);
    // Before any work: an unwritable --out must not cost a whole training run, nor may a
    // folder another run is using (rank 0 holds the lock until this returns).
    std::optional<OutLock> out_lock;
    pid_t stale_owner = 0;
    if (!opt_.out_dir.empty()) {
        try {
            require_writable_directory(opt_.out_dir);
            if (job_.rank == 0) out_lock.emplace(opt_.out_dir, &stale_owner);
        } catch (const IoError& e) {
            throw RunError("io", std::string("--out: ") + e.what());
        }
    }
    if (job_.world_size > 1 && !device_.is_cpu())
        throw RunError("device_unavailable", "data-parallel ranks train on the CPU (gloo) in this build: "
                                             "GPU ranks need a libtorch with NCCL (add --device cpu)");
    if (job_.world_size > 1) group_ = dist::Group::join(job_, std::chrono::seconds(opt_.dist_timeout_s));
    try {
        load_inputs();
    } catch (const stops::StopRequested&) {
        emit_minimal_hello();   // the run's first line, as for any run
        stopped_during_setup();
        return 0;
    }
    stops::fault_point("data");
    announce();
    if (opt_.threads > cores)
        log_warning("--threads " + std::to_string(opt_.threads) + " is more than this machine's " +
                    std::to_string(cores) + " cores: using " + std::to_string(cores));
    if (group_)
        log_info("rank " + std::to_string(group_->rank()) + " of " + std::to_string(world()) + " (" + group_->backend() +
                 ", " + to_string(setup_.sharding) + ", micro-batch " + std::to_string(opt_.batch) + " of a global " +
                 std::to_string(opt_.batch * world()) + ")");
    if (stale_owner > 0)
        log_info("took over " + opt_.out_dir + " from run " + std::to_string(stale_owner) + ", which ended without releasing it");
    if (!opt_.out_dir.empty() && (!group_ || group_->rank() == 0))
        if (const int n = remove_stale_checkpoint_temporaries(opt_.out_dir); n > 0)
            log_info("removed " + std::to_string(n) + " temporary files an interrupted save left in " + opt_.out_dir);
    refuse_if_beyond_machine();
    if (!opt_.resume_dir.empty()) {
        try {
            verify_checkpoint(opt_.resume_dir);
        } catch (const InputError& e) {
            throw RunError("bad_argument", std::string("--resume: ") + e.what());
        }
        check_resume_settings();
    }
    // SIGTERM during setup (loading, tokenizing) ends the run as soon as the step at hand is done.
    if (stopped_during_setup()) return 0;
    sampler_.start(opt_.sample_every_ms);
    build_model();
    if (stopped_during_setup()) return 0;
    build_optimizer();
    {
        std::vector<ParamState> shards;   // sharded: resume() fills whole states, each rank keeps its range
        if (sharded() && !opt_.resume_dir.empty()) swap_optimizer_state(shards);
        resume();
        if (!shards.empty()) swap_optimizer_state(shards);
    }
    if (stopped_during_setup()) return 0;
    {
        std::map<Component, std::int64_t> bytes;
        for (const auto& nt : model_->tensors()) bytes[nt.component] += storage_bytes(nt.tensor);
        if (reference_)
            for (const auto& nt : reference_->tensors()) bytes[Component::ReferenceModel] += storage_bytes(nt.tensor);
        for (const auto& s : states_) {
            if (sharded()) break;   // pieces of the shard tensors, counted once below
            bytes[Component::OptimizerState] += storage_bytes(s.m) + storage_bytes(s.v);
            if (s.master.defined()) bytes[Component::MasterWeights] += storage_bytes(s.master);
        }
        if (sharded()) {
            bytes[Component::OptimizerState] += storage_bytes(shard_m_) + storage_bytes(shard_v_);
            if (shard_master_.defined()) bytes[Component::MasterWeights] += storage_bytes(shard_master_);
        }
        // The bytes of the trainer's own tensors, for checking the measured components.
        emit(EventType::Log, {{"level", "info"},
                              {"message", "model and optimizer tensors allocated"},
                              {"tensor_bytes", protocol::components_to_json(bytes)}});
    }
    mem::set_phase(mem::Phase::Idle);
    mem::reset_component_peaks();
    mem::Sampler::emit_now();
    train_loop();
    mem::set_phase(mem::Phase::Idle);
    const bool interrupted = stopping_ && step_ < total_steps_;
    if (!opt_.out_dir.empty()) {
        if (interrupted) save_checkpoint(fs::path(opt_.out_dir) / ("checkpoint-" + std::to_string(step_)), false);
        else save_checkpoint(opt_.out_dir, true);
    } else if (interrupted) {
        log_warning("interrupted without --out: nothing saved");
    }
    sampler_.stop();
    mem::Sampler::emit_now();
    out_lock.reset();   // free before `done`: a run started on it once `done` is read finds it so
    emit_done(interrupted ? "interrupted" : "completed");
    return 0;
}

}  // namespace detail

int run_train(const std::vector<std::string>& args, const std::string& argv0) {
    TrainerInvocation opt;
    bool help = false;
    dist::JobEnv job;
    try {
        try {
            job = dist::job_from_environment();
        } catch (const std::invalid_argument& e) {
            throw ArgError(std::string("torchrun environment: ") + e.what());
        }
        set_rank(job.rank, job.world_size);
        opt = TrainerInvocation::from_args(args, help);
        if (job.world_size > 1 && opt.nproc > 1)
            throw ArgError("--nproc starts its own ranks, but this process is already rank " + std::to_string(job.rank) +
                           " of " + std::to_string(job.world_size) + " (RANK/WORLD_SIZE): leave --nproc out");
        if (job.world_size > 1 && opt.optimizer_in_backward)
            throw ArgError("--optimizer-in-backward trains on one process, but this is rank " + std::to_string(job.rank) +
                           " of " + std::to_string(job.world_size) + " (RANK/WORLD_SIZE)");
    } catch (const ArgError& e) {
        emit_minimal_hello();
        emit(EventType::Error, {{"code", "bad_argument"}, {"message", valid_utf8(e.what())}});
        emit(EventType::Done, {{"reason", "error"}, {"peak_bytes", mem::peak()}, {"rss_peak_bytes", mem::read_rss().hwm}});
        std::cerr << "wingspan-train: " << e.what() << "\n" << trainer_usage();
        return 2;
    }
    if (help) {
        std::cerr << trainer_usage();
        return 0;
    }
    Run run(opt, argv0, job);
    std::string code, message;
    json extra = json::object();
    try {
        return run.execute();
    } catch (const RunError& e) {
        code = e.code;
        message = e.what();
        extra = e.extra;
    } catch (const DataError& e) {
        code = "bad_data";
        message = e.what();
        if (e.line > 0) extra["line"] = e.line;
    } catch (const InputError& e) {
        code = "bad_argument";
        message = e.what();
    } catch (const dist::CollectiveError& e) {
        code = "distributed";
        message = e.what();
    } catch (const std::exception& e) {
        code = "internal";
        message = e.what();
        // A GPU allocator's own out-of-memory error ("CUDA out of memory. Tried to allocate …").
        if (message.find("out of memory") != std::string::npos) {
            code = "out_of_memory";
            extra = {{"component", component_name(mem::current())}};
        }
    }
    run.stop_sampling();
    const mem::OomRecord oom = mem::last_oom();
    if (oom.hit) {
        code = "out_of_memory";
        message = "memory limit of " + std::to_string(oom.limit) + " bytes reached: " +
                  std::string(component_name(oom.component)) + " asked for " + std::to_string(oom.bytes) +
                  " bytes with " + std::to_string(oom.available) + " available";
        extra = {{"component", component_name(oom.component)},
                 {"bytes", oom.bytes},
                 {"available_bytes", oom.available},
                 {"limit_bytes", oom.limit}};
        mem::set_limit(0);   // room for the last events
    }
    // First line of c10 messages only: the rest is a C++ backtrace.
    if (const auto nl = message.find('\n'); code != "bad_data" && nl != std::string::npos) message.resize(nl);
    json err = {{"code", code}, {"message", valid_utf8(message)}};
    err.update(extra);
    emit_minimal_hello();
    emit(EventType::Error, err);
    std::cerr << "wingspan-train: " << message << "\n";
    const mem::Snapshot now = mem::snapshot();
    json done = {{"reason", "error"},
                 {"peak_bytes", now.peak},
                 {"reserved_peak_bytes", now.reserved_peak},
                 {"rss_peak_bytes", mem::read_rss().hwm}};
    emit(EventType::Done, done);
    return code == "bad_argument" ? 2 : 1;   // device_unavailable: the machine, not the input
}

int run_devices() {
    std::cout << dev::devices_json().dump() << std::endl;
    return 0;
}

int run_tokenize(const std::vector<std::string>& args) {
    std::string file;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--tokenizer" && i + 1 < args.size()) {
            file = args[++i];
        } else {
            emit(EventType::Error, {{"code", "bad_argument"},
                                    {"message", "tokenize: unknown argument \"" + valid_utf8(args[i]) + "\""}});
            return 2;
        }
    }
    std::shared_ptr<Tokenizer> tok;
    try {
        if (!file.empty()) require_regular_file(file);
        tok = file.empty() ? Tokenizer::byte_level() : Tokenizer::from_file(file);
    } catch (const InputError& e) {
        const bool missing = !file.empty() && !fs::exists(file);
        emit(EventType::Error, {{"code", missing ? "io" : "bad_model"}, {"message", valid_utf8(e.what())}});
        return 1;
    }
    // Bounded: tokenizing costs tens of bytes of memory per input byte.
    constexpr size_t kMaxTokenizeBytes = 16u << 20;
    std::string text(kMaxTokenizeBytes + 1, '\0');
    std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(std::cin.gcount()));
    if (text.size() > kMaxTokenizeBytes) {
        emit(EventType::Error, {{"code", "bad_data"},
                                {"message", "tokenize: stdin is larger than " + std::to_string(kMaxTokenizeBytes) +
                                                " bytes; tokenize it in pieces"}});
        return 2;
    }
    std::vector<std::int32_t> ids;
    try {
        ids = tok->encode(text);
    } catch (const InputError& e) {   // a split pattern past its bounds
        emit(EventType::Error, {{"code", "bad_model"}, {"message", valid_utf8(e.what())}});
        return 1;
    }
    std::cout << json(ids).dump() << std::endl;
    return 0;
}

}  // namespace wingspan::train
