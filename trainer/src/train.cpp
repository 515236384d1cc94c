// The training run: arguments -> model, data, optimizer -> steps, with protocol events.
#include "train.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/autograd/autograd.h>

#include <dlfcn.h>
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

#include "args.hpp"
#include "checkpoint.hpp"
#include "data.hpp"
#include "device.hpp"
#include "device_memory.hpp"
#include "device_ops.hpp"
#include "distributed.hpp"
#include "distributed_sync.hpp"
#include "emit.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "optimizer.hpp"
#include "tokenizer.hpp"
#include "chat_format.hpp"
#include "model_source.hpp"
#include "weights_io.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/protocol.hpp"

#ifndef WINGSPAN_VERSION
#define WINGSPAN_VERSION "0.0.0"
#endif

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;
using protocol::EventType;

namespace {

std::atomic<bool> g_interrupted{false};
bool g_hello_sent = false;
std::string g_device_name = "cpu";   // what --device asked for until it is resolved

// `hello` is the first line of every run, failed ones included.
void emit_minimal_hello() {
    if (g_hello_sent) return;
    g_hello_sent = true;
    emit(EventType::Hello, {{"trainer", "wingspan-train"},
                            {"version", WINGSPAN_VERSION},
                            {"torch", TORCH_VERSION},
                            {"device", g_device_name},
                            {"threads", at::get_num_threads()}});
}

// The first SIGINT/SIGTERM asks for a clean stop (checkpoint, `done`); a second one stops at
// once, saving nothing more: the default action, so the launcher sees the signal.
extern "C" void on_signal(int sig) {
    if (g_interrupted.exchange(true)) {
        std::signal(sig, SIG_DFL);
        std::raise(sig);
    }
}

// A failure with its protocol error code.
struct RunError : std::runtime_error {
    RunError(std::string code_, const std::string& msg, json extra_ = json::object())
        : std::runtime_error(msg), code(std::move(code_)), extra(std::move(extra_)) {}
    std::string code;
    json extra;
};

void set_threads(int n) {
    at::set_num_threads(n);
    // OpenBLAS keeps its own pool; libtorch's setting does not reach it.
    using SetFn = void (*)(int);
    if (auto f = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
}

json read_json_file(const fs::path& p, const char* code_if_bad) {
    std::string text;
    try {
        text = read_regular_file(p);
    } catch (const InputError& e) {
        throw RunError("io", e.what());
    }
    try {
        return parse_untrusted_json(text, p.string());
    } catch (const InputError& e) {
        throw RunError(code_if_bad, e.what());
    }
}

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

// ---------------------------------------------------------------------------------------

class Run {
public:
    Run(Options o, std::string argv0, dist::JobEnv job) : opt_(std::move(o)), argv0_(std::move(argv0)), job_(std::move(job)) {}
    int execute();

private:
    void load_inputs();
    void announce();
    void build_model();
    void build_optimizer();
    void resume();
    void train_loop();
    double train_step(std::int64_t step);
    double evaluate();
    const Batch& next_batch();
    fs::path save(const fs::path& dir, bool final);
    std::string sample();
    void emit_done(const std::string& reason);
    void refuse_if_beyond_machine() const;
    bool stopped_during_setup();
    // Data parallel (issue 18; distributed*.cpp hold the logic).
    int world() const { return group_ ? group_->world_size() : 1; }
    bool sharded() const { return sync_ && sync_->sharded(); }
    at::Tensor grad_for(std::size_t state) const;
    bool stop_requested();
    fs::path save_checkpoint(const fs::path& dir, bool final);
    void swap_optimizer_state(std::vector<ParamState>& held);

    void select_device();

    Options opt_;
    std::string argv0_;
    dist::JobEnv job_;
    c10::Device device_{c10::kCPU};   // where every tensor of the run lives
    json hf_config_;
    ModelConfig cfg_;
    Architecture arch_;
    TrainingSetup setup_;
    std::shared_ptr<Tokenizer> tok_;
    ChatFormat chat_;
    Dataset data_;
    fs::path data_path_;
    std::optional<WeightReader> weights_;
    std::unique_ptr<Model> model_;
    std::vector<ParamState> states_;
    LossScaler scaler_;                // fp16-mixed only
    double last_loss_scale_ = 1.0;     // the scale of the last step's backward
    bool last_step_skipped_ = false;   // its gradients overflowed: no update
    double lr_ = 0;
    std::int64_t warmup_ = 0;
    std::int64_t total_steps_ = 0;
    std::int64_t step_ = 0;            // completed optimizer steps
    std::int64_t cursor_ = 0;          // micro-batches consumed since the start of training
    std::int64_t batches_per_epoch_ = 0;
    std::int64_t cached_epoch_ = -1;
    std::vector<Batch> epoch_batches_;
    std::vector<Batch> eval_batches_;
    std::vector<double> losses_;
    fs::path last_checkpoint_;
    std::unique_ptr<mem::DeviceTracking> tracking_;   // a GPU's bytes through c10's hook
    mem::Sampler sampler_;                            // stopped before tracking_ ends
    std::int64_t predicted_total_ = 0;   // the planner's bytes for this run (0: no prediction)
    Component predicted_largest_ = Component::FrozenWeights;
    std::unique_ptr<dist::Group> group_;
    std::unique_ptr<dist::GradientSync> sync_;
    at::Tensor shard_m_, shard_v_, shard_master_;   // zero1/zero2: this rank's optimizer shard
    bool stopping_ = false;
};

void Run::load_inputs() {
    // Model configuration and weights.
    if (!opt_.model_dir.empty()) {
        try {
            opt_.model_dir = resolve_model_argument(opt_.model_dir).string();
        } catch (const InputError& e) {
            throw RunError("io", e.what());
        }
        const fs::path dir = opt_.model_dir;
        if (!fs::is_directory(dir)) throw RunError("io", "--model: " + dir.string() + " is not a folder");
        const fs::path cfg = dir / "config.json";
        if (!fs::exists(cfg)) throw RunError("io", "--model: " + cfg.string() + " does not exist");
        hf_config_ = read_json_file(cfg, "bad_model");
    }
    // Tokenizer.
    try {
        fs::path tf = opt_.tokenizer_file;
        if (tf.empty() && !opt_.model_dir.empty() && fs::exists(fs::path(opt_.model_dir) / "tokenizer.json"))
            tf = fs::path(opt_.model_dir) / "tokenizer.json";
        if (!tf.empty()) {
            if (!fs::exists(tf)) throw RunError("io", "tokenizer file " + tf.string() + " does not exist");
            require_regular_file(tf);
            tok_ = Tokenizer::from_file(tf);
        } else {
            tok_ = Tokenizer::byte_level();
        }
    } catch (const InputError& e) {
        throw RunError("bad_model", e.what());
    }
    if (hf_config_.is_null()) hf_config_ = default_model_config(tok_->vocab_size());
    try {
        cfg_ = ModelConfig::from_hf(hf_config_);
    } catch (const InputError& e) {
        throw RunError("bad_model", e.what());
    }
    if (tok_->vocab_size() > cfg_.vocab)
        throw RunError("bad_model", "the tokenizer has " + std::to_string(tok_->vocab_size()) +
                                        " tokens but the model's vocab_size is " + std::to_string(cfg_.vocab));
    try {
        arch_ = Architecture::from_hf_config(hf_config_);
    } catch (const std::exception& e) {
        throw RunError("bad_model", std::string("config.json: ") + e.what());
    }
    if (!opt_.model_dir.empty()) {
        try {
            weights_ = WeightReader::open_dir(opt_.model_dir);
        } catch (const InputError& e) {
            throw RunError("bad_model", e.what());
        }
        if (weights_) {
            std::vector<std::string> ignored;
            try {
                check_weights(*weights_, expected_tensors(cfg_), ignored);
            } catch (const InputError& e) {
                throw RunError("bad_model", e.what());
            }
        }
    }
    // The training setup, as the planner sees it.
    setup_.method = opt_.method;
    setup_.precision = opt_.precision;
    setup_.optimizer = Optimizer::AdamW;
    setup_.attention = opt_.attention == "sdpa" ? Attention::Sdpa : Attention::Eager;
    setup_.seq_len = opt_.seq;
    setup_.micro_batch = opt_.batch;
    setup_.grad_accum = opt_.grad_accum;
    setup_.grad_checkpointing = opt_.grad_checkpointing;
    setup_.loss_chunk_tokens = 0;
    setup_.lora_rank = opt_.rank;
    setup_.lora_alpha = opt_.alpha;
    setup_.lora_dropout = opt_.dropout;
    setup_.lora_targets = opt_.targets;
    setup_.quantization = opt_.method == Method::Qlora ? Quantization::Nf4DoubleQuant : Quantization::None;
    setup_.devices = world();
    setup_.sharding = world() > 1 ? opt_.sharding : Sharding::None;
    if (opt_.method != Method::Full && opt_.rank > std::min(cfg_.hidden, cfg_.intermediate))
        throw RunError("bad_argument", "--rank " + std::to_string(opt_.rank) + " is larger than the model's width");

    // Data.
    data_path_ = opt_.data_file.empty() ? default_sample_data(argv0_) : fs::path(opt_.data_file);
    try {
        chat_ = chat_format_for_model(*tok_, opt_.model_dir, opt_.chat_format);
    } catch (const DataError& e) {
        throw RunError("bad_data", e.what());
    } catch (const InputError& e) {
        throw RunError("bad_argument", e.what());
    }
    try {
        data_ = load_jsonl(data_path_, *tok_, chat_, opt_.eval_fraction, opt_.seed);
        // Each rank takes its rows of the global batch (rank r: rows r·batch ... (r+1)·batch - 1).
        epoch_batches_ = make_batches(data_.train, opt_.seq, opt_.batch * world(), opt_.packing, chat_.pad, opt_.seed, 0,
                                      true, true);
        if (!data_.eval.empty()) {
            try {
                eval_batches_ = make_batches(data_.eval, opt_.seq, opt_.batch, opt_.packing, chat_.pad, opt_.seed, 0,
                                             false, false);
            } catch (const DataError&) {
                eval_batches_.clear();   // too little held-out text for one row: no eval
            }
            if (static_cast<std::int64_t>(eval_batches_.size()) > opt_.eval_batches)
                eval_batches_.resize(opt_.eval_batches);
        }
    } catch (const DataError& e) {
        json extra = json::object();
        if (e.line > 0) extra["line"] = e.line;
        throw RunError("bad_data", data_path_.string() + ": " + e.what(), extra);
    } catch (const InputError& e) {
        throw RunError("io", e.what());
    }
    cached_epoch_ = 0;
    batches_per_epoch_ = static_cast<std::int64_t>(epoch_batches_.size());
    const std::int64_t steps_per_epoch = std::max<std::int64_t>(1, batches_per_epoch_ / opt_.grad_accum);
    total_steps_ = opt_.steps > 0 ? opt_.steps : opt_.epochs > 0 ? opt_.epochs * steps_per_epoch : 100;
    warmup_ = opt_.warmup_steps >= 0 ? opt_.warmup_steps : total_steps_ / 10;
    const bool pretrained = weights_.has_value();
    lr_ = opt_.lr ? *opt_.lr
                  : opt_.method == Method::Full ? (pretrained ? 2e-5 : 1e-3) : (pretrained ? 2e-4 : 3e-3);
}

void Run::announce() {
    ModelOptions mo;
    mo.method = opt_.method;
    mo.precision = opt_.precision;
    mo.rank = opt_.rank;
    mo.alpha = opt_.alpha;
    mo.dropout = opt_.dropout;
    mo.targets = opt_.targets;
    mo.sdpa = opt_.attention == "sdpa";
    mo.device = device_;
    model_ = std::make_unique<Model>(cfg_, mo);   // shapes only: build_model() allocates
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
          {"version", WINGSPAN_VERSION},
          {"torch", TORCH_VERSION},
          {"device", device_.str()},
          {"device_name", dev::info(device_).name},
          {"threads", at::get_num_threads()},
          {"plan", plan},
          {"params", {{"total", base + adapter}, {"trainable", opt_.method == Method::Full ? base : adapter}}},
          {"model", opt_.model_dir.empty() ? std::string("built-in default") : opt_.model_dir},
          {"architecture", hf_config_},
          {"tokenizer", tok_->description()},
          {"data", data_path_.string()},
          {"examples", {{"train", data_.train.size()}, {"eval", data_.eval.size()}}},
          {"total_steps", total_steps_},
          {"lr", lr_}});

    // The planner's prediction for exactly this run, with this machine's calibration when the
    // user saved one (Calibrate from my runs… / wingspan calibrate).
    // The framework profile of the device that trains: libtorch-cpu, libtorch-cuda, libtorch-mps.
    FrameworkProfile fw;
    fw.id = device_.is_cuda() ? "libtorch-cuda" : device_.is_mps() ? "libtorch-mps" : "libtorch-cpu";
    const std::string bundled_id = fw.id;
    try {
        ProfileLibrary lib = ProfileLibrary::load(ProfileLibrary::default_dir(argv0_));
        fw = lib.framework(fw.id);
        try {
            for (const auto& w : lib.load_user_profiles(ProfileLibrary::user_dir())) log_warning(w);
            fw = lib.calibrated_or_bundled(fw.id);
            if (fw.id == calibrated_framework_id(bundled_id))
                log_info("predicting with your calibrated framework profile " + fw.file.string());
        } catch (const std::exception& e) {
            log_warning(std::string("your own profiles were not loaded (") + e.what() + "); predicting with the bundled one");
        }
    } catch (const std::exception& e) {
        log_warning("framework profile " + bundled_id + " not loaded (" + e.what() + "); predicting without it");
    }
    try {
        const MemoryEstimate est = estimate_memory(arch_, setup_, fw);
        predicted_total_ = est.total_bytes;
        std::int64_t largest = -1;
        for (const auto& [c, b] : est.components)
            if (b > largest) largest = b, predicted_largest_ = c;
        emit(EventType::Predicted, {{"components", protocol::components_to_json(est.components)},
                                    {"component_maxima", protocol::components_to_json(est.component_maxima())},
                                    {"peak_bytes", est.peak_allocated_bytes},
                                    {"total_bytes", est.total_bytes},
                                    {"peak_phase", est.peak_phase},
                                    {"framework", fw.id}});
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
        source = [&resumed](const std::string& name, const std::vector<std::int64_t>&) { return resumed->read(name); };
    }
    try {
        model_->build(source, opt_.seed);
    } catch (const InputError& e) {
        throw RunError("bad_model", e.what());
    }
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
}

void Run::resume() {
    if (opt_.resume_dir.empty()) return;
    const fs::path dir = opt_.resume_dir;
    TrainerState st;
    try {
        st = TrainerState::from_json(read_json_file(dir / "trainer_state.json", "bad_argument"),
                                     (dir / "trainer_state.json").string());
    } catch (const InputError& e) {
        throw RunError("bad_argument", std::string("--resume: ") + e.what());
    }
    auto mismatch = [&](const char* what, const std::string& was, const std::string& now) {
        if (was != now)
            throw RunError("bad_argument", std::string("--resume: the checkpoint was made with ") + what + " " + was +
                                               ", this run has " + now);
    };
    mismatch("--method", st.method, method_name(opt_.method));
    mismatch("--precision", st.precision, precision_name(opt_.precision));
    if (opt_.method != Method::Full) mismatch("--rank", std::to_string(st.rank), std::to_string(opt_.rank));
    mismatch("--seq", std::to_string(st.seq), std::to_string(opt_.seq));
    // The global batch (--batch × ranks) decides the data order: any number of ranks resumes it.
    mismatch("--batch × ranks", std::to_string(st.batch), std::to_string(opt_.batch * world()));
    mismatch("--grad-accum", std::to_string(st.grad_accum), std::to_string(opt_.grad_accum));

    at::NoGradGuard no_grad;
    if (opt_.method != Method::Full) {
        const fs::path f = dir / "adapter_model.safetensors";
        if (!fs::exists(f)) throw RunError("io", "--resume: " + f.string() + " does not exist");
        WeightReader r = WeightReader::open_file(f);
        for (auto& nt : model_->trainable()) {
            if (!r.contains(nt.name)) throw RunError("bad_model", "--resume: " + nt.name + " is missing from " + f.string());
            mem::Scope scope(Component::Activations);
            at::Tensor t = r.read(nt.name);
            if (t.sizes() != nt.tensor.sizes())
                throw RunError("bad_model", "--resume: " + nt.name + " has another shape in " + f.string());
            nt.tensor.copy_(t);
        }
    }
    const fs::path of = dir / "optimizer.safetensors";
    if (!fs::exists(of)) throw RunError("io", "--resume: " + of.string() + " does not exist");
    WeightReader r = WeightReader::open_file(of);
    for (auto& s : states_) {
        mem::Scope scope(Component::Activations);
        s.m.copy_(r.read(s.name + ".exp_avg"));
        s.v.copy_(r.read(s.name + ".exp_avg_sq"));
        if (s.master.defined()) {
            s.master.copy_(r.read(s.name + ".master"));
            s.param.copy_(s.master);
        }
    }
    if (r.contains("rng_state")) {
        at::Generator gen = at::detail::getDefaultCPUGenerator();
        gen.set_state(r.read("rng_state"));
    }
    step_ = st.step;
    cursor_ = st.micro_batches;
    losses_ = st.losses;
    log_info("resumed from " + dir.string() + " at step " + std::to_string(step_));
}

const Batch& Run::next_batch() {
    const std::int64_t epoch = cursor_ / batches_per_epoch_;
    if (epoch != cached_epoch_) {
        epoch_batches_ = make_batches(data_.train, opt_.seq, opt_.batch * world(), opt_.packing, chat_.pad, opt_.seed, epoch,
                                      true, true);
        cached_epoch_ = epoch;
    }
    const Batch& b = epoch_batches_[cursor_ % batches_per_epoch_];
    ++cursor_;
    return b;
}

double Run::train_step(std::int64_t step) {
    double loss_sum = 0;
    for (std::int64_t micro = 0; micro < opt_.grad_accum; ++micro) {
        const Batch& global = next_batch();
        Batch mine;
        const Batch& b = group_ ? (mine = dist::rows_of_rank(global, group_->rank(), world())) : global;
        mem::set_phase(mem::Phase::Forward);
        at::Tensor ids = to_tensor(b.input, b.rows, b.cols, device_);
        at::Tensor labels = to_tensor(b.labels, b.rows, b.cols, device_);
        at::Tensor loss = model_->loss(ids, labels, opt_.grad_checkpointing);
        double l = loss.item<double>();
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
        if (opt_.grad_accum > 1) loss = loss / static_cast<double>(opt_.grad_accum);
        if (scaler_.enabled) loss = loss * scaler_.scale;
        if (sync_) sync_->begin_backward(micro + 1 == opt_.grad_accum);
        if (!group_ || b.target_tokens > 0) torch::autograd::backward({loss});
        if (sync_) sync_->end_backward();
    }
    mem::set_phase(mem::Phase::Optimizer);
    {
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

double Run::evaluate() {
    if (eval_batches_.empty()) return std::nan("");
    mem::set_phase(mem::Phase::Eval);
    at::NoGradGuard no_grad;
    double sum = 0;
    std::int64_t n = 0;
    for (const auto& b : eval_batches_) {
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

fs::path Run::save(const fs::path& target, bool final) {
    at::NoGradGuard no_grad;
    mem::Scope scope(Component::Activations);
    std::error_code ec;
    fs::path dir = target;
    fs::create_directories(target.parent_path().empty() ? fs::path(".") : target.parent_path(), ec);
    try {
        // An intermediate checkpoint is built in a fresh, exclusively created folder and
        // renamed once complete.
        if (!final) dir = make_staging_dir(target);
    } catch (const IoError& e) {
        throw RunError("io", e.what());
    }
    fs::create_directories(dir, ec);
    if (ec) throw RunError("io", "cannot create " + dir.string() + ": " + ec.message());
    try {
        CheckpointManifest manifest(dir);   // the folder counts as incomplete until commit()
        std::vector<std::pair<std::string, at::Tensor>> weights;
        for (auto& nt : model_->trainable()) weights.push_back({nt.name, nt.tensor});
        const std::map<std::string, std::string> meta = {{"format", "pt"}, {"producer", "wingspan-train"}};
        if (opt_.method == Method::Full) {
            manifest.add("model.safetensors", save_safetensors(dir / "model.safetensors", weights, meta));
            manifest.add("config.json", write_file_atomic(dir / "config.json", hf_config_.dump(2) + "\n"));
        } else {
            manifest.add("adapter_model.safetensors", save_safetensors(dir / "adapter_model.safetensors", weights, meta));
            json targets = json::array();
            for (const auto& m : model_->target_modules()) targets.push_back(m);   // Phi-3: fused names
            const json ac = {{"peft_type", "LORA"},
                             {"task_type", "CAUSAL_LM"},
                             {"r", opt_.rank},
                             {"lora_alpha", opt_.alpha},
                             {"lora_dropout", opt_.dropout},
                             {"target_modules", targets},
                             {"bias", "none"},
                             {"base_model_name_or_path", opt_.model_dir},
                             {"inference_mode", false}};
            manifest.add("adapter_config.json", write_file_atomic(dir / "adapter_config.json", ac.dump(2) + "\n"));
        }
        std::vector<std::pair<std::string, at::Tensor>> optim;
        for (auto& s : states_) {
            optim.push_back({s.name + ".exp_avg", s.m});
            optim.push_back({s.name + ".exp_avg_sq", s.v});
            if (s.master.defined()) optim.push_back({s.name + ".master", s.master});
        }
        optim.push_back({"rng_state", at::detail::getDefaultCPUGenerator().get_state()});
        manifest.add("optimizer.safetensors", save_safetensors(dir / "optimizer.safetensors", optim, meta));
        const json st = {{"step", step_},
                         {"total_steps", total_steps_},
                         {"micro_batches", cursor_},
                         {"method", method_name(opt_.method)},
                         {"precision", precision_name(opt_.precision)},
                         {"rank", opt_.rank},
                         {"alpha", opt_.alpha},
                         {"seq", opt_.seq},
                         {"batch", opt_.batch * world()},
                         {"world_size", world()},
                         {"grad_accum", opt_.grad_accum},
                         {"seed", opt_.seed},
                         {"lr", lr_},
                         {"data", data_path_.string()},
                         {"losses", losses_}};
        manifest.add("trainer_state.json", write_file_atomic(dir / "trainer_state.json", st.dump(2) + "\n"));
        manifest.commit();
    } catch (const std::runtime_error& e) {   // IoError, InputError
        throw RunError("io", e.what());
    }
    if (!final) {
        fs::remove_all(target, ec);
        fs::rename(dir, target, ec);
        if (ec) throw RunError("io", "cannot rename " + dir.string() + " to " + target.string() + ": " + ec.message());
    }
    const fs::path abs = fs::absolute(target, ec);
    last_checkpoint_ = abs;
    emit(EventType::Checkpoint, {{"step", step_}, {"path", abs.string()}});
    return abs;
}

std::string Run::sample() {
    if (opt_.sample_tokens <= 0 || g_interrupted.load()) return "";
    mem::set_phase(mem::Phase::Eval);
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
    const auto out = model_->generate(prompt, opt_.sample_tokens, stop);
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
        try {
            d["sample"] = sample();
        } catch (const std::exception& e) {
            log_warning(std::string("no sample: ") + e.what());
        }
    }
    if (!losses_.empty()) d["final_loss"] = losses_.back();
    emit(EventType::Done, d);
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
    if (!g_interrupted.load()) return false;
    sampler_.stop();
    log_warning("interrupted during setup: no step was trained, nothing saved");
    emit_done("interrupted");
    return true;
}

at::Tensor Run::grad_for(std::size_t state) const {
    return sharded() ? sync_->grad_of(sync_->pieces()[state]) : states_[state].param.grad();
}

bool Run::stop_requested() {
    bool stop = g_interrupted.load();
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

void Run::train_loop() {
    const std::int64_t eval_every =
        opt_.eval_every >= 0 ? opt_.eval_every : std::max<std::int64_t>(1, total_steps_ / 5);
    while (step_ < total_steps_) {
        const std::int64_t step = step_ + 1;
        mem::set_step(step);
        const auto t0 = std::chrono::steady_clock::now();
        const double loss = train_step(step);
        dev::synchronize(device_);   // a GPU's queued work belongs to this step's time
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        step_ = step;
        losses_.push_back(loss);
        mem::set_phase(mem::Phase::Idle);
        const std::int64_t tokens = opt_.batch * world() * opt_.seq * opt_.grad_accum;
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
        emit(EventType::Step, fields);
        const bool stop = stop_requested();
        if (eval_every > 0 && step % eval_every == 0 && step < total_steps_ && !stop) {
            const double el = evaluate();
            if (std::isfinite(el)) emit(EventType::Eval, {{"step", step}, {"loss", el}});
        }
        if (stop) return;
        if (opt_.save_every > 0 && step % opt_.save_every == 0 && step < total_steps_ && !opt_.out_dir.empty())
            save_checkpoint(fs::path(opt_.out_dir) / ("checkpoint-" + std::to_string(step)), false);
    }
    const double el = evaluate();
    if (std::isfinite(el)) emit(EventType::Eval, {{"step", step_}, {"loss", el}});
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
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    // More threads than cores only makes them wait for each other (100000 stalled for minutes).
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set_threads(opt_.threads > 0 ? std::min(opt_.threads, cores) : cores);
    select_device();
    mem::set_phase(mem::Phase::Setup);
    // Before any work: an unwritable --out must not cost a whole training run.
    if (!opt_.out_dir.empty()) {
        try {
            require_writable_directory(opt_.out_dir);
        } catch (const IoError& e) {
            throw RunError("io", std::string("--out: ") + e.what());
        }
    }
    if (job_.world_size > 1 && !device_.is_cpu())
        throw RunError("device_unavailable", "data-parallel ranks train on the CPU (gloo) in this build: "
                                             "GPU ranks need a libtorch with NCCL (add --device cpu)");
    if (job_.world_size > 1) group_ = dist::Group::join(job_, std::chrono::seconds(opt_.dist_timeout_s));
    load_inputs();
    announce();
    if (opt_.threads > cores)
        log_warning("--threads " + std::to_string(opt_.threads) + " is more than this machine's " +
                    std::to_string(cores) + " cores: using " + std::to_string(cores));
    if (group_)
        log_info("rank " + std::to_string(group_->rank()) + " of " + std::to_string(world()) + " (" + group_->backend() +
                 ", " + to_string(setup_.sharding) + ", micro-batch " + std::to_string(opt_.batch) + " of a global " +
                 std::to_string(opt_.batch * world()) + ")");
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
    emit_done(interrupted ? "interrupted" : "completed");
    return 0;
}

}  // namespace

int run_train(const std::vector<std::string>& args, const std::string& argv0) {
    Options opt;
    bool help = false;
    dist::JobEnv job;
    try {
        try {
            job = dist::job_from_environment();
        } catch (const std::invalid_argument& e) {
            throw ArgError(std::string("torchrun environment: ") + e.what());
        }
        set_rank(job.rank, job.world_size);
        opt = parse_options(args, help);
        if (job.world_size > 1 && opt.nproc > 1)
            throw ArgError("--nproc starts its own ranks, but this process is already rank " + std::to_string(job.rank) +
                           " of " + std::to_string(job.world_size) + " (RANK/WORLD_SIZE): leave --nproc out");
    } catch (const ArgError& e) {
        emit_minimal_hello();
        emit(EventType::Error, {{"code", "bad_argument"}, {"message", valid_utf8(e.what())}});
        emit(EventType::Done, {{"reason", "error"}, {"peak_bytes", mem::peak()}, {"rss_peak_bytes", mem::read_rss().hwm}});
        std::cerr << "wingspan-train: " << e.what() << "\n" << usage();
        return 2;
    }
    if (help) {
        std::cerr << usage();
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
    const auto ids = tok->encode(text);
    std::cout << json(ids).dump() << std::endl;
    return 0;
}

}  // namespace wingspan::train
