#include "wingspan/profiles.hpp"
#include "wingspan/user_dirs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/nvml.hpp"
#include "wingspan/units.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan {

namespace {

json read_json_file(const fs::path& file) {
    std::string text;
    try {
        text = read_regular_file(file);
    } catch (const InputError& e) {
        throw ProfileError(file.string(), "(file)", e.what());
    }
    std::string why;
    auto j = try_parse_untrusted_json(text, &why);
    if (!j) throw ProfileError(file.string(), "(JSON)", why);
    return std::move(*j);
}


std::vector<fs::path> json_files(const fs::path& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                               prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

template <typename T>
const T& find_by_id(const std::vector<T>& items, const std::string& id, const char* what) {
    for (const auto& item : items)
        if (item.id == id) return item;
    std::vector<std::string> ids;
    for (const auto& item : items) ids.push_back(item.id);
    auto near = closest_names(id, ids);
    std::string hint;
    for (const auto& c : near) hint += (hint.empty() ? "" : ", ") + c;
    throw InputError(std::string("unknown ") + what + " '" + id + "'" +
                     (hint.empty() ? "" : " (closest: " + hint + ")") + "; `wingspan " + what +
                     "s` lists them");
}

}  // namespace

std::vector<std::string> closest_names(const std::string& wanted, const std::vector<std::string>& known,
                                       size_t count) {
    std::vector<std::pair<size_t, std::string>> scored;
    for (const auto& k : known) {
        size_t d = edit_distance(wanted, k);
        // A name that contains what was typed is a better guess than its edit distance says.
        if (k.find(wanted) != std::string::npos || wanted.find(k) != std::string::npos) d = d / 2;
        scored.emplace_back(d, k);
    }
    std::sort(scored.begin(), scored.end());
    std::vector<std::string> out;
    for (size_t i = 0; i < scored.size() && out.size() < count; ++i) out.push_back(scored[i].second);
    return out;
}


ProfileLibrary ProfileLibrary::load(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw InputError("profiles folder '" + dir.string() + "' does not exist (set WINGSPAN_PROFILES)");
    ProfileLibrary lib;
    for (const auto& f : json_files(dir / "frameworks"))
        lib.frameworks_.push_back(parse_framework_profile(read_json_file(f), f.string()));
    for (const auto& f : json_files(dir / "models")) lib.add_model(parse_model_profile(read_json_file(f), f.string()));
    for (const auto& f : json_files(dir / "machines"))
        lib.add_machine(parse_machine_profile(read_json_file(f), f.string()));
    for (const auto& f : json_files(dir / "scenarios")) {
        json s = read_json_file(f);
        if (!s.is_object() || !s.contains("id") || !s["id"].is_string())
            throw ProfileError(f.string(), "id", "expected a scenario object with a string id");
        lib.scenarios_[s["id"].get<std::string>()] = s;
    }
    for (const auto& m : lib.machines_) {
        bool known = false;
        for (const auto& fw : lib.frameworks_)
            known |= fw.id == m.default_framework ||
                     std::find(fw.aliases.begin(), fw.aliases.end(), m.default_framework) != fw.aliases.end();
        if (!known && !lib.frameworks_.empty())
            throw ProfileError(m.file.string(), "default_framework",
                               "names '" + m.default_framework + "', which is not in frameworks/");
    }
    return lib;
}

fs::path ProfileLibrary::default_dir(const fs::path& executable) {
    if (const char* env = std::getenv("WINGSPAN_PROFILES"); env && *env) return env;
    std::error_code ec;
    for (const fs::path& candidate : bundled_data_dirs(executable, "profiles", "profiles"))
        if (fs::is_directory(candidate / "machines", ec)) return fs::weakly_canonical(candidate, ec);
    return "profiles";   // the current folder's: a checkout's root
}

fs::path ProfileLibrary::user_dir() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return fs::path(xdg) / "wingspan";
    if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".config" / "wingspan";
    return fs::temp_directory_path() / "wingspan-config";
}

std::vector<std::string> ProfileLibrary::load_user_profiles(const fs::path& dir) {
    // One bad file of the user's (an interrupted save, a hand edit) is skipped and named, so
    // it never breaks every command.
    std::vector<std::string> skipped;
    auto each = [&](const char* kind, const auto& add) {
        for (const auto& f : json_files(dir / kind)) {
            try {
                add(f);
            } catch (const InputError& e) {
                skipped.push_back(std::string(e.what()) + " (skipped)");
            } catch (const json::exception& e) {
                skipped.push_back(f.string() + ": " + e.what() + " (skipped)");
            }
        }
    };
    each("machines", [&](const fs::path& f) {
        MachineProfile m = parse_machine_profile(read_json_file(f), f.string());
        m.user_defined = true;
        add_machine(std::move(m));
    });
    each("models", [&](const fs::path& f) { add_model(parse_model_profile(read_json_file(f), f.string())); });
    each("frameworks", [&](const fs::path& f) { add_framework(parse_framework_profile(read_json_file(f), f.string())); });
    return skipped;
}

const ModelProfile& ProfileLibrary::model(const std::string& id) const { return find_by_id(models_, id, "model"); }
const MachineProfile& ProfileLibrary::machine(const std::string& id) const {
    return find_by_id(machines_, id, "machine");
}
const MachineProfile* ProfileLibrary::find_machine(const std::string& id) const noexcept {
    for (const auto& m : machines_)
        if (m.id == id) return &m;
    return nullptr;
}
const FrameworkProfile* ProfileLibrary::find_framework(const std::string& id) const noexcept {
    if (const auto at = id.find('@'); at != std::string::npos) {   // "unsloth@2025.1": an earlier release
        const FrameworkProfile* base = find_framework(id.substr(0, at));
        if (!base) return nullptr;
        for (const auto& r : base->releases)
            if (r.name == id.substr(at + 1)) return r.profile.get();
        return nullptr;
    }
    for (const auto& f : frameworks_)
        if (f.id == id) return &f;
    for (const auto& f : frameworks_)   // an alias, where no framework has it as its id
        if (std::find(f.aliases.begin(), f.aliases.end(), id) != f.aliases.end()) return &f;
    return nullptr;
}
const FrameworkProfile& ProfileLibrary::framework(const std::string& id) const {
    if (const FrameworkProfile* f = find_framework(id)) return *f;
    if (const auto at = id.find('@'); at != std::string::npos) {
        const FrameworkProfile& base = framework(id.substr(0, at));   // throws for an unknown framework
        std::string known;
        for (const auto& r : base.releases) known += (known.empty() ? "" : ", ") + r.name;
        throw InputError("unknown release '" + id.substr(at + 1) + "' of framework '" + base.id + "' (" +
                         (known.empty() ? std::string("it names no earlier release") : "its releases: " + known) + ")");
    }
    return find_by_id(frameworks_, id, "framework");   // throws, naming the closest ids
}

std::string ProfileLibrary::default_framework_id(MachineKind kind) {
    return kind == MachineKind::Gpu ? "hf-transformers" : kind == MachineKind::Unified ? "mlx-lm" : "libtorch-cpu";
}

namespace {
constexpr std::string_view kCalibratedSuffix = "-calibrated";
// The calibrated copy of framework `base_id` (calibrated_framework_id), or nullptr.
const FrameworkProfile* calibrated_framework(const std::vector<FrameworkProfile>& frameworks, const std::string& base_id) {
    const std::string calibrated = calibrated_framework_id(base_id);
    for (const auto& f : frameworks)
        if (f.id == calibrated) return &f;
    return nullptr;
}

// The framework a calibrated profile's id calibrates ("libtorch-cpu-calibrated" -> "libtorch-cpu"),
// or "" for an id that names no calibration.
std::string calibration_base(const std::string& id) {
    if (id.size() <= kCalibratedSuffix.size() || !id.ends_with(kCalibratedSuffix)) return "";
    return id.substr(0, id.size() - kCalibratedSuffix.size());
}
}  // namespace

std::vector<const FrameworkProfile*> ProfileLibrary::frameworks_for(const MachineProfile& m) const {
    const std::string kind = m.kind == MachineKind::Gpu ? "gpu" : m.kind == MachineKind::Unified ? "unified" : "cpu";
    std::vector<const FrameworkProfile*> out;
    // framework_for(m) without its error: a default framework the profiles lack is simply not first.
    const FrameworkProfile* preferred =
        m.id == kThisMachineId ? calibrated_framework(frameworks_, m.default_framework) : nullptr;
    if (!preferred) preferred = find_framework(m.default_framework);
    if (preferred) out.push_back(preferred);
    for (const auto& f : frameworks_) {
        if (&f == preferred) continue;
        if (!calibration_base(f.id).empty()) continue;
        if (std::find(f.devices.begin(), f.devices.end(), kind) != f.devices.end()) out.push_back(&f);
    }
    return out;
}

const json& ProfileLibrary::scenario(const std::string& id) const {
    auto it = scenarios_.find(id);
    if (it != scenarios_.end()) return it->second;
    std::vector<std::string> ids;
    for (const auto& [k, v] : scenarios_) ids.push_back(k);
    std::string hint;
    for (const auto& c : closest_names(id, ids)) hint += (hint.empty() ? "" : ", ") + c;
    throw InputError("unknown scenario '" + id + "'" + (hint.empty() ? "" : " (closest: " + hint + ")"));
}

std::string calibrated_framework_id(const std::string& base_id) { return base_id + std::string(kCalibratedSuffix); }

const FrameworkProfile& ProfileLibrary::calibrated_or_bundled(const std::string& id) const {
    if (const FrameworkProfile* calibrated = calibrated_framework(frameworks_, id)) return *calibrated;
    return framework(id);
}

const FrameworkProfile& ProfileLibrary::framework_for(const MachineProfile& m) const {
    return m.id == kThisMachineId ? calibrated_or_bundled(m.default_framework) : framework(m.default_framework);
}

std::vector<const ModelProfile*> ProfileLibrary::family(const std::string& name) const {
    std::vector<const ModelProfile*> out;
    for (const auto& m : models_)
        if (m.family == name) out.push_back(&m);
    std::sort(out.begin(), out.end(), [](const ModelProfile* a, const ModelProfile* b) {
        return a->arch.parameter_count() < b->arch.parameter_count();
    });
    return out;
}

const ModelProfile& ProfileLibrary::nearest_model(std::int64_t params, const std::string& family) const {
    const ModelProfile* best = nullptr;
    double best_distance = 0;
    for (const auto& m : models_) {
        if (!family.empty() && m.family != family) continue;
        if (m.arch.is_moe()) continue;
        const double d = std::fabs(std::log(double(m.arch.parameter_count()) / double(params)));
        if (!best || d < best_distance) {
            best = &m;
            best_distance = d;
        }
    }
    if (!best) throw InputError("no bundled model" + (family.empty() ? std::string() : " in family '" + family + "'"));
    return *best;
}

namespace {
// Profiles are keyed by id: a later one (the user's) replaces a bundled one.
template <typename T>
void upsert(std::vector<T>& items, T item) {
    for (auto& existing : items)
        if (existing.id == item.id) {
            existing = std::move(item);
            return;
        }
    items.push_back(std::move(item));
}
}  // namespace

void ProfileLibrary::add_model(ModelProfile m) { upsert(models_, std::move(m)); }
void ProfileLibrary::add_machine(MachineProfile m) { upsert(machines_, std::move(m)); }
void ProfileLibrary::add_framework(FrameworkProfile f) {
    // A calibration measures this machine's overheads (the process baseline and the allocator's
    // slack), not how the framework keeps its tensors. Laid over the framework's current profile,
    // it keeps every behaviour a later version learns (a saved copy of the whole profile would
    // freeze the memory terms of the version that calibrated it).
    if (const std::string base_id = calibration_base(f.id); !base_id.empty()) {
        const auto base = std::find_if(frameworks_.begin(), frameworks_.end(), [&](const auto& g) { return g.id == base_id; });
        if (base != frameworks_.end()) {
            FrameworkProfile over = *base;
            over.id = f.id;
            over.name = f.name;
            over.file = f.file;
            over.context_bytes = f.context_bytes;
            over.allocator_slack = f.allocator_slack;
            for (const char* key : {"context_bytes", "allocator_slack"})
                if (auto it = f.sources.find(key); it != f.sources.end()) over.sources[key] = it->second;
            f = std::move(over);
        }
    }
    upsert(frameworks_, std::move(f));
}

std::string cpuinfo_bf16_isa(const std::string& cpuinfo) {
    std::istringstream in(cpuinfo);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("flags", 0) != 0) continue;
        std::istringstream words(line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
        bool amx = false, avx512 = false;
        for (std::string w; words >> w;) {
            amx = amx || w == "amx_bf16";
            avx512 = avx512 || w == "avx512_bf16";
        }
        return amx ? "amx_bf16" : avx512 ? "avx512_bf16" : "";
    }
    return "";
}

MachineProfile detect_this_machine() {
    MachineProfile m;
    m.id = kThisMachineId;
    m.kind = MachineKind::Cpu;
    std::int64_t total = 0;
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::int64_t value;
    std::string unit;
    while (meminfo >> key >> value >> unit) {
        if (key == "MemTotal:") total = value * 1024;
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (total <= 0) total = std::int64_t(8) * 1024 * 1024 * 1024;
    m.memory_bytes = total;
    // From the total only, so the figure is the same on every launch (MemAvailable moves with
    // whatever else runs): the system and a desktop keep an eighth of RAM, 1 to 8 GiB.
    const std::int64_t reserve = std::clamp<std::int64_t>(total / 8, std::int64_t(1) << 30, std::int64_t(8) << 30);
    m.usable_bytes = std::max<std::int64_t>(total / 2, total - reserve);
    m.host_memory_bytes = total;
    m.name = "This machine (" + std::to_string(cores) + " cores, " + format_bytes(double(total), ByteUnit::GiB) + " RAM)";
    // wingspan-train multiplies bf16 on this CPU's bf16 instructions where it has them (oneDNN's
    // bf16 gemm, twice the fp32 FMA rate per cycle), else widened to fp32 (trainer/src/kernels/kernels_gemm.hpp).
    std::string cpuinfo;
    if (std::ifstream f("/proc/cpuinfo"); f) cpuinfo.assign(std::istreambuf_iterator<char>(f), {});
    // fp32 FLOPs per cycle per core at ~2.5 GHz: 16 with AVX2 FMA, 32 with AVX-512 (measured here:
    // oneDNN's sgemm reaches 181-191 GFLOP/s on this 2-core AVX-512 VM, bench/published/throughput.json).
    const bool avx512 = cpuinfo.find(" avx512f") != std::string::npos;
    m.tflops_fp32 = cores * 2.5e9 * (avx512 ? 32 : 16) / 1e12;
    const std::string isa = cpuinfo_bf16_isa(cpuinfo);
    m.bf16 = !isa.empty();
    m.tflops_bf16 = m.bf16 ? 2 * m.tflops_fp32 : 0;
    m.bandwidth_gb_s = 20;
    m.default_framework = "libtorch-cpu";
    m.sources = {{"memory_bytes", "/proc/meminfo MemTotal"},
                 {"usable_bytes", "/proc/meminfo MemTotal minus an eighth (1-8 GiB) for the system and desktop; not MemAvailable, which differs on each launch"},
                 {"tflops_fp32", avx512 ? "estimate: cores × 2.5 GHz × 32 FLOP/cycle (AVX-512 FMA)"
                                        : "estimate: cores × 2.5 GHz × 16 FLOP/cycle (AVX2 FMA)"},
                 {"bf16", isa.empty() ? "/proc/cpuinfo: no avx512_bf16 or amx_bf16 flag (bf16 runs widened to fp32)"
                                      : "/proc/cpuinfo flag " + isa + ": bf16 products in hardware"},
                 {"bandwidth_gb_s", "estimate: dual-channel DDR4"}};
    nvml::apply_detected_gpu(m);   // an NVIDIA GPU's memory is the ceiling, where NVML finds one
    return m;
}

std::int64_t FrameworkProfile::dequantized_weight_bytes(std::int64_t weights, int e) const {
    if (quant_matmul_reads_packed) return 0;
    // Unfused dequantization (torchao's NF4Tensor, Lightning's fp16 bitsandbytes state) holds more
    // than one copy per weight at once, unless torch.compile's generated kernel fuses the chain.
    if (quant_dequantize_bytes > 0 && !traits.compile.enabled)
        return static_cast<std::int64_t>(std::llround(double(weights) * quant_dequantize_bytes));
    return weights * e;
}

}  // namespace wingspan
