// A run's inputs: the model folder (config, tokenizer, chat format, weights), the data set read
// within its RAM budget, and the micro-batch that sets the peak.
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

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;
using detail::RunError;

namespace {

// The RAM the data set's examples may hold: WINGSPAN_DATA_RAM_BYTES when set, else half of what the
// machine had available at the start (MemAvailable), leaving the rest to the model, the optimizer
// and libtorch; 0 (no limit) where neither is known.
std::int64_t data_ram_budget() {
    if (const char* env = std::getenv("WINGSPAN_DATA_RAM_BYTES"); env && *env) {
        char* end = nullptr;
        const long long v = std::strtoll(env, &end, 10);
        if (end && *end == 0 && v > 0) return v;
        throw RunError("bad_argument", std::string("WINGSPAN_DATA_RAM_BYTES must be a positive byte count, not \"") +
                                           valid_utf8(env) + "\"");
    }
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::int64_t kib = 0;
    while (in >> key >> kib) {
        if (key == "MemAvailable:") return kib * 1024 / 2;
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return 0;
}

}  // namespace

namespace detail {

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
        arch_ = Architecture::from_hf_config(hf_config_);   // what the planner reads: one parser
        cfg_ = ModelConfig::from_architecture(arch_, hf_config_);
    } catch (const InputError& e) {
        throw RunError("bad_model", e.what());
    }
    if (tok_->vocab_size() > cfg_.vocab)
        throw RunError("bad_model", "the tokenizer has " + std::to_string(tok_->vocab_size()) +
                                        " tokens but the model's vocab_size is " + std::to_string(cfg_.vocab));
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
    setup_.optimizer_in_backward = opt_.optimizer_in_backward;
    setup_.loss_chunk_tokens = 0;
    setup_.lora_rank = opt_.rank;
    setup_.lora_alpha = opt_.alpha;
    setup_.lora_dropout = opt_.dropout;
    setup_.lora_targets = opt_.targets;
    setup_.quantization = opt_.method == Method::Qlora ? Quantization::Nf4DoubleQuant : Quantization::None;
    setup_.devices = world();
    setup_.sharding = world() > 1 ? opt_.sharding : Sharding::None;
    setup_.objective.kind = opt_.objective;   // the reference as TRL takes it: adapter-off for LoRA, else a copy
    check_preference_setup();
    if (opt_.method != Method::Full && opt_.rank > std::min(cfg_.hidden, cfg_.intermediate))
        throw RunError("bad_argument", "--rank " + std::to_string(opt_.rank) + " is larger than the model's width");

    // Data.
    data_path_ = opt_.data_file.empty()
                     ? default_sample_data(argv0_, opt_.preference() ? "preference.jsonl" : "chat.jsonl")
                     : fs::path(opt_.data_file);
    try {
        chat_ = chat_format_for_model(*tok_, opt_.model_dir, opt_.chat_format);
    } catch (const DataError& e) {
        throw RunError("bad_data", e.what());
    } catch (const InputError& e) {   // an unknown --chat-format, or a template file that is not a file
        throw RunError(opt_.chat_format.empty() ? "bad_model" : "bad_argument", e.what());
    }
    try {
        if (opt_.preference()) {
            load_preference_data();
        } else {
            data_ = load_jsonl(data_path_, *tok_, chat_, opt_.eval_fraction, opt_.seed, data_ram_budget());
            // Each rank takes its rows of the global batch (rank r: rows r·batch ... (r+1)·batch - 1).
            epoch_batches_ = EpochBatches(data_.train, opt_.seq, opt_.batch * world(), opt_.padding, chat_.pad, opt_.seed, 0,
                                          true, true);
            if (!data_.eval.empty()) {
                try {
                    eval_batches_ = EpochBatches(data_.eval, opt_.seq, opt_.batch, opt_.padding, chat_.pad, opt_.seed, 0,
                                                 false, false);
                } catch (const DataError&) {
                    eval_batches_.clear();   // too little held-out text for one row: no eval
                }
                if (static_cast<std::int64_t>(eval_batches_.size()) > opt_.eval_batches)
                    eval_batches_.truncate(static_cast<size_t>(opt_.eval_batches));
            }
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
    find_peak_batch();
    warmup_ = opt_.warmup_steps >= 0 ? opt_.warmup_steps : total_steps_ / 10;
    const bool pretrained = weights_.has_value();
    lr_ = opt_.lr ? *opt_.lr
                  : opt_.method == Method::Full ? (pretrained ? 2e-5 : 1e-3) : (pretrained ? 2e-4 : 3e-3);
}

void Run::find_peak_batch() {
    peak_batch_ = PeakBatch{opt_.batch, opt_.seq, false, -1, -1};
    if (opt_.preference() || opt_.padding != Padding::Dynamic || data_.train.empty()) return;
    std::vector<std::int64_t> lengths;
    lengths.reserve(data_.train.size());
    for (const Example& e : data_.train) lengths.push_back(static_cast<std::int64_t>(e.ids.size()));
    Batching b = epoch_batches_.batching();
    b.micro_batch = opt_.batch;
    b.devices = world();
    b.order = Batching::Order{opt_.seed, total_steps_ * opt_.grad_accum};   // every micro-batch next_batch() hands out
    try {
        peak_batch_ = peak_batch(lengths, b);
    } catch (const InputError& e) {
        log_warning(std::string("the peak batch was not found (") + e.what() + "); predicting at --seq");
    }
}

}  // namespace detail

}  // namespace wingspan::train
