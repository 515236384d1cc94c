// Saving a run (rank 0's files, with a manifest written last) and resuming from a checkpoint.
#include "run.hpp"

#include <ATen/ATen.h>

#include <map>

#include "checkpoint.hpp"
#include "emit.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/safe_file.hpp"

namespace wingspan::train::detail {

using protocol::EventType;

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

}  // namespace wingspan::train::detail
