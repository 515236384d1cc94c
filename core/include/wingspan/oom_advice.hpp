#pragma once
// What an out-of-memory message means for a plan: where in the step the plan crosses the
// device's ceiling, which component was growing there, which of the plan's tensors is the size
// of the failing request, and the nearest settings that fit (each checked by the verdict).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "memory_model.hpp"
#include "oom_message.hpp"
#include "profiles.hpp"
#include "setup.hpp"

namespace wingspan {

// One change to the plan: the command-line flag and its value, and whether the planner says the
// changed plan fits on the device of the message (its capacity less other processes).
struct OomAdvice {
    std::string flag;          // "--batch"
    std::string value;         // "2"
    bool fits = false;
    std::int64_t needed_bytes = 0;   // the changed plan's device total
    std::string why;           // "largest micro batch that fits"
    // Applies on top of the entries before it marked so (when no single change fits, the advice
    // is a chain of changes, each checked with all the earlier ones).
    bool with_previous = false;
};

struct OomDiagnosis {
    OomReport report;
    std::int64_t ceiling_bytes = 0;        // capacity less other processes: what the plan may use
    std::int64_t plan_bytes = 0;           // the plan's device total at its peak
    std::string failing_phase;             // first phase whose total crosses the ceiling ("" if none)
    std::optional<Component> growing;      // the component growing most in that phase
    std::string matching_tensor;           // the plan's tensor closest to the request ("" if none within 2x)
    std::vector<std::string> findings;     // sentences for the user, in order
    std::vector<OomAdvice> advice;
    nlohmann::json to_json() const;        // report fields + {findings, advice:[{flag, value, fits}]}
};

// The machine the message describes: its capacity as the memory, less what other processes
// (CUDA) or other allocations (MPS) hold as usable. `like` (a --machine) lends speed and dtype
// support; without it the device supports bf16.
MachineProfile machine_from_oom(const OomReport& report, const MachineProfile* like = nullptr);

// A plan's diagnosis; `setup` already has the framework's defaults applied.
OomDiagnosis diagnose_oom(const OomReport& report, const Architecture& arch, const TrainingSetup& setup,
                          const FrameworkProfile& framework, const MachineProfile* like = nullptr);

// Figures-only findings (how full, fragmentation, other processes) when there is no plan.
std::vector<std::string> oom_findings(const OomReport& report);

}  // namespace wingspan
