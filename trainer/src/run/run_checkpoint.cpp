// Saving a run (rank 0's files, with a manifest written last) and resuming from a checkpoint.
#include "run/run.hpp"

#include <ATen/ATen.h>

#include <cstdio>
#include <map>
#include <string_view>

#include "run/checkpoint.hpp"
#include "support/emit.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/safe_file.hpp"

namespace wingspan::train::detail {

using protocol::EventType;

namespace {

// FNV-1a 64 of a text, as hex: a stable fingerprint (std::hash is not promised to be).
std::string fingerprint(std::string_view text) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

// How a setting reads in a mismatch message: as on the command line (strings bare, lists
// comma-separated), numbers as JSON writes them.
std::string shown(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_array()) return v.dump();
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + shown(x);
    return s;
}

}  // namespace

json Run::state_settings() const {
    json targets = json::array();
    for (LinearRole r : opt_.targets) targets.push_back(linear_role_name(r));
    return {{"method", std::string(to_string(opt_.method))},
            {"precision", std::string(to_string(opt_.precision))},
            {"rank", opt_.rank},
            {"alpha", opt_.alpha},
            {"dropout", opt_.dropout},
            {"targets", targets},
            {"seq", opt_.seq},
            {"batch", opt_.batch * world()},
            {"grad_accum", opt_.grad_accum},
            {"seed", opt_.seed},
            {"lr", lr_},
            {"weight_decay", opt_.weight_decay},
            {"max_grad_norm", opt_.max_grad_norm},
            {"min_lr_ratio", opt_.min_lr_ratio},
            {"packing", opt_.packing()},
            {"padding", to_string(opt_.padding)},
            {"model_config", fingerprint(hf_config_.dump())},
            {"tokenizer_vocab", tok_->vocab_size()},
            {"data_lines", data_.lines},
            {"data_tokens", data_.tokens},
            {"objective", to_string(opt_.objective)},
            {"beta", opt_.preference() ? json(opt_.beta_or_default()) : json(nullptr)}};
}

void Run::check_resume_settings() {
    const fs::path file = fs::path(opt_.resume_dir) / "trainer_state.json";
    const json saved = read_json_file(file, "bad_argument");
    try {
        (void)TrainerState::from_json(saved, file.string());   // the counters, validated
    } catch (const InputError& e) {
        throw RunError("bad_argument", std::string("--resume: ") + e.what());
    }
    // Every setting that shapes the saved state or the results from here on. A checkpoint
    // from before a setting was recorded lacks it and is not held to it.
    static const std::vector<std::pair<const char*, const char*>> kFlags = {
        {"method", "--method"}, {"precision", "--precision"}, {"rank", "--rank"}, {"alpha", "--alpha"},
        {"dropout", "--dropout"}, {"targets", "--targets"}, {"seq", "--seq"}, {"batch", "--batch × ranks"},
        {"grad_accum", "--grad-accum"}, {"seed", "--seed"}, {"lr", "--lr"}, {"weight_decay", "--weight-decay"},
        {"max_grad_norm", "--max-grad-norm"}, {"min_lr_ratio", "--min-lr-ratio"}, {"packing", "packing (--no-packing)"}, {"padding", "--padding"},
        {"model_config", "the model's config.json (fingerprint)"}, {"tokenizer_vocab", "a tokenizer of vocabulary size"},
        {"data_lines", "data lines"}, {"data_tokens", "data tokens"}, {"objective", "--objective"}, {"beta", "--beta"}};
    const json now = state_settings();
    for (const auto& [key, flag] : kFlags) {
        if (!saved.contains(key)) continue;
        const std::string k = key;
        const bool lora_only = k == "rank" || k == "alpha" || k == "dropout" || k == "targets";
        if (lora_only && opt_.method == Method::Full && saved.value("method", "") == "full") continue;
        const json& was = saved[key];
        const json& is = now[key];
        if (was != is) {   // numbers compare by value across integer and floating types
            std::string hint;
            if (k == "method")
                hint = " (a " + shown(was) + " checkpoint resumes only as --method " + shown(was) +
                       "; to go on from it another way, merge it first: wingspan-train merge)";
            throw RunError("bad_argument", "--resume: the checkpoint was made with " + std::string(flag) + " " +
                                               shown(was) + ", this run has " + shown(is) + hint);
        }
    }
}

void Run::resume() {
    if (opt_.resume_dir.empty()) return;
    const fs::path dir = opt_.resume_dir;
    check_resume_settings();   // again: this is the state the tensors are read into
    TrainerState st;
    try {
        st = TrainerState::from_json(read_json_file(dir / "trainer_state.json", "bad_argument"),
                                     (dir / "trainer_state.json").string());
    } catch (const InputError& e) {
        throw RunError("bad_argument", std::string("--resume: ") + e.what());
    }
    // A tensor is read only when the file holds it with this run's shape and type.
    auto read_as = [](const WeightReader& r, const fs::path& f, const std::string& name, const at::Tensor& like) {
        if (!r.contains(name)) throw RunError("bad_model", "--resume: " + name + " is missing from " + f.string());
        const auto& info = r.info(name);
        const std::vector<std::int64_t> want(like.sizes().begin(), like.sizes().end());
        if (info.shape != want)
            throw RunError("bad_model", "--resume: " + name + " in " + f.string() + " has shape " + json(info.shape).dump() +
                                            ", this run's is " + json(want).dump());
        mem::Scope scope(Component::Activations);
        at::Tensor t = r.read(name);
        if (t.scalar_type() != like.scalar_type()) t = t.to(like.scalar_type());
        return t;
    };

    at::NoGradGuard no_grad;
    if (opt_.method != Method::Full) {
        const fs::path f = dir / "adapter_model.safetensors";
        if (!fs::exists(f)) throw RunError("io", "--resume: " + f.string() + " does not exist");
        WeightReader r = WeightReader::open_file(f);
        for (auto& nt : model_->trainable()) nt.tensor.copy_(read_as(r, f, nt.name, nt.tensor));
    }
    const fs::path of = dir / "optimizer.safetensors";
    if (!fs::exists(of)) throw RunError("io", "--resume: " + of.string() + " does not exist");
    WeightReader r = WeightReader::open_file(of);
    for (auto& s : states_) {
        s.m.copy_(read_as(r, of, s.name + ".exp_avg", s.m));
        s.v.copy_(read_as(r, of, s.name + ".exp_avg_sq", s.v));
        if (s.master.defined()) {
            s.master.copy_(read_as(r, of, s.name + ".master", s.master));
            s.param.copy_(s.master);
        }
    }
    if (r.contains("rng_state")) {
        at::Generator gen = at::detail::getDefaultCPUGenerator();
        gen.set_state(read_as(r, of, "rng_state", gen.get_state()));
    }
    step_ = st.step;
    cursor_ = st.micro_batches;
    losses_ = st.losses;
    log_info("resumed from " + dir.string() + " at step " + std::to_string(step_));
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
        stops::fault_point("checkpoint");
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
        json st = state_settings();   // what --resume holds a later run to
        st.update({{"step", step_},
                   {"total_steps", total_steps_},
                   {"micro_batches", cursor_},
                   {"world_size", world()},
                   {"data", data_path_.string()},
                   {"losses", losses_}});
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

}  // namespace wingspan::train::detail
