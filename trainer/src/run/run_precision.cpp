// A run's precision: --precision auto's choice for the device that trains (precision_choice.hpp
// holds the rule), resolved before anything is sized by it.
#include <unistd.h>

#include "kernels/device.hpp"
#include "support/emit.hpp"
#include "kernels/kernels_gemm.hpp"
#include "run/run.hpp"
#include "wingspan/profiles.hpp"

namespace wingspan::train::detail {

namespace {

// The precision a checkpoint was trained in, or nothing when the file does not say (or cannot
// be read: --resume's own checks report that with their error).
std::optional<Precision> checkpoint_precision(const fs::path& dir) {
    try {
        const json state = read_json_file(dir / "trainer_state.json", "bad_argument");
        if (!state.is_object() || !state.contains("precision") || !state["precision"].is_string()) return std::nullopt;
        return parse_precision(state["precision"].get<std::string>());
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

void Run::choose_precision() {
    if (!opt_.precision_auto) {
        precision_ = asked_precision(opt_.precision);
        return;
    }
    if (!opt_.resume_dir.empty())
        if (const auto saved = checkpoint_precision(opt_.resume_dir)) {
            precision_ = resumed_precision(*saved, opt_.resume_dir);
            opt_.precision = precision_.precision;
            return;
        }
    const dev::DeviceInfo info = dev::info(device_);
    const DeviceKind kind = device_.is_cuda() ? DeviceKind::Cuda : device_.is_mps() ? DeviceKind::Mps : DeviceKind::Cpu;
    // On a CPU, what counts is the path bf16 products take in this process: the hardware one, or
    // the widened fp32 one that WINGSPAN_CPU_BF16=emulated (or a CPU without the instructions) gives.
    const bool fast = kind == DeviceKind::Cpu ? kernels::bf16_path() == kernels::Bf16Path::Hardware : info.bf16;
    precision_ = auto_precision(kind, fast, info.name);
    if (kind == DeviceKind::Cpu && !fast && *kernels::cpu_bf16_isa() != '\0')
        precision_.reason = info.name + " has " + std::string(kernels::cpu_bf16_isa()) +
                            ", but WINGSPAN_CPU_BF16=emulated widens bf16 products to fp32: fp32 is faster";
    opt_.precision = precision_.precision;
}

std::int64_t Run::memory_capacity() const {
    if (!device_.is_cpu()) return dev::info(device_).total_bytes;
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

// The planner's framework profile for the device that trains (libtorch-cpu, -cuda, -mps), or
// the user's calibration of it (Calibrate from my runs… / wingspan calibrate).
FrameworkProfile Run::framework_profile() const {
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
    return fw;
}

void Run::fit_precision_to_memory(const FrameworkProfile& fw) {
    if (!precision_.automatic || precision_.precision != Precision::Fp32) return;
    try {
        const TrainingSetup at_peak = setup_at_peak();   // the batch that sets the peak
        TrainingSetup mixed = at_peak;
        mixed.precision = Precision::Bf16Mixed;
        const MemoryEstimate fp32 = estimate_memory(arch_, at_peak, fw);
        const MemoryEstimate bf16 = estimate_memory(arch_, mixed, fw);
        // --memory-limit caps allocated tensors (the counting allocator refuses beyond it); without
        // it the process as a whole meets the device's memory.
        if (opt_.memory_limit > 0)
            precision_ = fit_precision(precision_, {fp32.peak_allocated_bytes, bf16.peak_allocated_bytes,
                                                    opt_.memory_limit, "allocated tensors", "--memory-limit"});
        else
            precision_ = fit_precision(precision_, {fp32.total_bytes, bf16.total_bytes, memory_capacity(),
                                                    "process", device_.is_cpu() ? "RAM" : "device memory"});
    } catch (const std::exception&) {
        return;   // no prediction: announce() reports why, the run keeps fp32
    }
    opt_.precision = precision_.precision;
    setup_.precision = precision_.precision;
}

}  // namespace wingspan::train::detail
