// What one wingspan-train run trains and how it is launched: RunOptions to and from a run's
// plan.json, the plan's setup as the trainer runs it, its command line, where the trainer and
// the sample data are, and a process's resident bytes read from outside.
#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <optional>

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#ifdef __APPLE__
#include <libproc.h>
#include <sys/resource.h>
#endif
#include <unistd.h>

#include "wingspan/trainer_invocation.hpp"
#include "wingspan/user_dirs.hpp"
#include "wingspan/ui/run_session.hpp"

using nlohmann::json;

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The enum value named `name` (its to_string), if it is one of `values`; nothing otherwise.
template <typename E>
std::optional<E> named(const QString& name, std::initializer_list<E> values) {
    const std::string n = name.toStdString();
    for (const E v : values)
        if (n == to_string(v)) return v;
    return std::nullopt;
}

QString how_to_build() {
    return "Build it with `./dev.sh run` in the Wingspan source folder (it installs libtorch and builds "
           "both programs), or `cmake --build build --target wingspan-train`; set WINGSPAN_TRAINER to use "
           "one elsewhere.";
}

}  // namespace

// ------------------------------------------------------------------ options ----

json RunOptions::to_json() const {
    const char* source = model_source == ModelSource::Folder             ? "folder"
                         : model_source == ModelSource::PlanArchitecture ? "plan-architecture"
                         : model_source == ModelSource::Planned          ? "planned"
                                                                         : "built-in";
    json j = {{"model_source", source},
              {"model_dir", model_dir.toStdString()},
              {"model_label", model_label.toStdString()},
              {"data_file", data_file.toStdString()},
              {"method", to_string(method)},
              {"objective", to_string(objective)},
              {"rank", rank},
              {"alpha", alpha},
              {"precision", precision_auto ? "auto" : to_string(precision)},
              {"seq", seq},
              {"batch", batch},
              {"grad_accum", grad_accum},
              {"steps", steps},
              {"grad_checkpointing", grad_checkpointing},
              {"out_dir", out_dir.toStdString()},
              {"memory_limit", memory_limit},
              {"processes", processes},
              {"sharding", to_string(sharding)},
              {"threads", threads},
              {"machine_id", machine_id.toStdString()},
              {"machine_name", machine_name.toStdString()},
              {"machine_ceiling", machine_ceiling},
              {"device", device.toStdString()},
              {"device_label", device_label.toStdString()}};
    if (!model_config.is_null()) j["model_config"] = model_config;
    json extra = json::array();
    for (const QString& a : extra_args) extra.push_back(a.toStdString());
    j["extra_args"] = extra;
    return j;
}

RunOptions RunOptions::from_json(const json& j) {
    RunOptions o;
    if (!j.is_object()) return o;
    auto str = [&](const char* k, const QString& d) {
        auto it = j.find(k);
        return it != j.end() && it->is_string() ? qs(it->get<std::string>()) : d;
    };
    // A run folder's plan.json is not trusted: only a whole number in range counts (a float
    // such as 1e300 converted to an integer would be undefined).
    auto num = [&](const char* k, std::int64_t d) -> std::int64_t {
        auto it = j.find(k);
        if (it == j.end() || !it->is_number_integer()) return d;
        if (it->is_number_unsigned() && it->get<std::uint64_t>() > std::uint64_t(INT64_MAX)) return d;
        return it->get<std::int64_t>();
    };
    const QString source = str("model_source", "built-in");
    o.model_source = source == "folder"              ? ModelSource::Folder
                     : source == "plan-architecture" ? ModelSource::PlanArchitecture
                     : source == "planned"           ? ModelSource::Planned
                                                     : ModelSource::BuiltIn;
    o.model_dir = str("model_dir", {});
    o.model_label = str("model_label", o.model_label);
    o.data_file = str("data_file", {});
    // A name this build does not know keeps the default (each field on its own).
    o.method = named(str("method", "lora"), {Method::Full, Method::Lora, Method::Qlora, Method::Serve}).value_or(o.method);
    o.objective = named(str("objective", "sft"), {Objective::Sft, Objective::Dpo, Objective::Orpo, Objective::Simpo,
                                                  Objective::Kto, Objective::Grpo})
                      .value_or(o.objective);
    const QString precision = str("precision", "fp32");
    o.precision_auto = precision == "auto";
    if (!o.precision_auto)
        o.precision = named(precision, {Precision::Fp32, Precision::Bf16Mixed, Precision::Bf16, Precision::Fp16Mixed})
                          .value_or(o.precision);
    o.sharding = named(str("sharding", "ddp"), {Sharding::None, Sharding::Ddp, Sharding::Zero1, Sharding::Zero2,
                                                Sharding::Zero3, Sharding::Fsdp})
                     .value_or(o.sharding);
    o.rank = num("rank", o.rank);
    if (auto it = j.find("alpha"); it != j.end() && it->is_number()) o.alpha = it->get<double>();
    o.seq = num("seq", o.seq);
    o.batch = num("batch", o.batch);
    o.grad_accum = num("grad_accum", o.grad_accum);
    o.steps = num("steps", o.steps);
    if (auto it = j.find("grad_checkpointing"); it != j.end() && it->is_boolean()) o.grad_checkpointing = it->get<bool>();
    o.out_dir = str("out_dir", {});
    o.memory_limit = num("memory_limit", 0);
    o.processes = std::clamp<std::int64_t>(num("processes", 1), 1, 256);
    o.threads = int(std::clamp<std::int64_t>(num("threads", 0), 0, 4096));
    o.machine_id = str("machine_id", {});
    o.machine_name = str("machine_name", {});
    o.machine_ceiling = num("machine_ceiling", 0);
    o.device = str("device", {});
    o.device_label = str("device_label", {});
    if (auto it = j.find("model_config"); it != j.end() && it->is_object()) o.model_config = *it;
    if (auto it = j.find("extra_args"); it != j.end() && it->is_array())
        for (const auto& a : *it)
            if (a.is_string()) o.extra_args << qs(a.get<std::string>());
    return o;
}

RunOptions run_options_for(const Plan& plan, const ProfileLibrary* lib) {
    RunOptions o;
    const TrainingSetup& s = plan.setup;
    o.method = s.method == Method::Serve ? Method::Lora : s.method;
    o.objective = s.objective.kind;
    o.rank = std::max<std::int64_t>(1, s.lora_rank);
    o.alpha = s.lora_alpha > 0 ? s.lora_alpha : 2.0 * double(o.rank);
    o.precision = s.precision == Precision::Fp16Mixed ? Precision::Bf16Mixed : s.precision;
    o.precision_auto = s.precision_auto;
    o.seq = std::max<std::int64_t>(8, s.seq_len);
    // A preference plan with prompt and completion lengths plans rows of their sum.
    if (o.objective != Objective::Sft && s.objective.prompt_len > 0 && s.objective.completion_len > 0)
        o.seq = std::max<std::int64_t>(8, s.objective.prompt_len + s.objective.completion_len);
    o.batch = std::max<std::int64_t>(1, s.trains() ? s.micro_batch : s.serve_batch);
    o.grad_accum = std::max<std::int64_t>(1, s.grad_accum);
    o.grad_checkpointing = s.grad_checkpointing;
    if (lib) {
        // The ceiling drawn: this machine when the plan lists it (that is where it runs),
        // else the plan's first machine.
        std::vector<std::string> ids = plan.machines;
        auto here = std::find(ids.begin(), ids.end(), kThisMachineId);
        if (here != ids.end()) std::rotate(ids.begin(), here, here + 1);
        for (const auto& id : ids) {
            const auto& machines = lib->machines();
            const auto m = std::find_if(machines.begin(), machines.end(), [&](const MachineProfile& p) { return p.id == id; });
            if (m == machines.end()) continue;   // a machine the plan names that this library lacks
            o.machine_id = qs(m->id);
            o.machine_name = qs(short_machine_name(*m));
            o.machine_ceiling = m->usable_bytes;
            break;
        }
    }
    return o;
}

QStringList trainer_arguments(const RunOptions& o, const QString& model_dir, const QString& data_file,
                              const QString& out_dir) {
    TrainerInvocation t;   // wingspan-train's own defaults for everything the window does not set
    t.model_dir = model_dir.toStdString();
    t.data_file = data_file.toStdString();
    t.method = o.method == Method::Serve ? Method::Lora : o.method;
    t.objective = o.objective;
    t.rank = o.rank;
    t.alpha = o.alpha;
    t.precision_auto = o.precision_auto;
    t.precision = o.precision == Precision::Fp16Mixed ? Precision::Bf16Mixed : o.precision;
    t.seq = o.seq;
    t.batch = o.batch;
    t.grad_accum = o.grad_accum;
    t.steps = std::max<std::int64_t>(1, o.steps);
    t.grad_checkpointing = o.grad_checkpointing;
    t.out_dir = out_dir.toStdString();
    t.memory_limit = o.memory_limit;
    t.threads = o.threads;
    if (!o.device.isEmpty()) t.device = o.device.toStdString();
    if (o.processes > 1) {
        // The launcher starts the ranks and relays their lines; SIGTERM to it reaches them all.
        t.nproc = static_cast<int>(o.processes);
        t.sharding = o.sharding == Sharding::None ? Sharding::Ddp : o.sharding;
    }
    QStringList a;
    for (const std::string& arg : t.to_args()) a << QString::fromStdString(arg);
    a << o.extra_args;
    return a;
}

TrainerLocation check_trainer(const QString& path) {
    TrainerLocation t;
    t.path = path;
    const QFileInfo fi(path);
    if (path.isEmpty() || !fi.exists())
        t.problem = "wingspan-train was not found" + (path.isEmpty() ? QString() : " at " + path) + ". " + how_to_build();
    else if (fi.isDir() || !fi.isExecutable())
        t.problem = path + " is not an executable program (chmod +x it, or rebuild). " + how_to_build();
    return t;
}

TrainerLocation find_trainer(const QString& executable) {
    const QString env = qEnvironmentVariable("WINGSPAN_TRAINER");
    if (!env.isEmpty()) return check_trainer(env);
    QString beside;
    if (!executable.isEmpty()) {
        beside = QFileInfo(executable).absoluteDir().filePath("wingspan-train");
        if (QFileInfo::exists(beside)) return check_trainer(beside);
    }
    const QString on_path = QStandardPaths::findExecutable("wingspan-train");
    if (!on_path.isEmpty()) return check_trainer(on_path);
    TrainerLocation t = check_trainer(beside);
    if (beside.isEmpty()) t.problem = "wingspan-train was not found on $PATH. " + how_to_build();
    return t;
}

QString find_sample_data(const QString& executable) {
    const QString env = qEnvironmentVariable("WINGSPAN_SAMPLE_DATA");
    if (!env.isEmpty()) return env;
    for (const auto& dir : bundled_data_dirs(executable.toStdString(), "sample-data", "resources/sample-data")) {
        const QString c = QString::fromStdString((dir / "chat.jsonl").string());
        if (QFileInfo::exists(c)) return QFileInfo(c).canonicalFilePath();
    }
    return {};
}

std::int64_t process_rss_bytes(qint64 pid) {
    if (pid <= 0) return -1;
#if defined(__linux__)
    FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/statm").c_str(), "r");
    if (!f) return -1;
    long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%lld %lld", &size, &resident);
    std::fclose(f);
    if (n != 2) return -1;
    return std::int64_t(resident) * std::int64_t(sysconf(_SC_PAGESIZE));
#elif defined(__APPLE__)
    rusage_info_v2 ri{};
    if (proc_pid_rusage(int(pid), RUSAGE_INFO_V2, reinterpret_cast<rusage_info_t*>(&ri)) != 0) return -1;
    return std::int64_t(ri.ri_resident_size);
#else
    return -1;
#endif
}

}  // namespace wingspan::ui
