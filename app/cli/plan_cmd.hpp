#pragma once
// `wingspan plan`: what the flags plan, computed once as a PlanReport and then printed as text,
// as JSON (--json) or as the tensor inventory (--rows). `recipe` and `explain-oom` take the same
// report directly, so all three accept exactly the same plans.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data_cmd.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/plan_flags.hpp"
#include "wingspan/verdict.hpp"

namespace wingspan::cli {

struct PlanReport {
    ResolvedModel model;
    ChosenFields chosen;
    // The framework of the totals: the one asked for, else the one machine's, else the CUDA default.
    const FrameworkProfile* framework = nullptr;
    TrainingSetup setup;              // with that framework's defaults and the precision in force
    std::string precision_reason;     // why that precision, when auto chose it
    PlanData data;                    // --data's batches, if given
    MemoryEstimate estimate;          // at the data's peak batch
    double tokens = 0;                // training tokens the run computes on
    std::vector<MachineVerdict> verdicts;
    std::vector<double> machine_tokens;   // per verdict: its framework's tokens
    bool serving() const { return !setup.trains(); }
};

// InputError for flags that make no plan (an unknown model, rank above the hidden size, ...).
PlanReport make_plan_report(const ProfileLibrary& lib, const PlanFlags& flags, std::ostream& err);
// plan --json's object.
nlohmann::json plan_report_json(const PlanReport& report);
// The plan flags in `args` (a command's own flags removed), for the commands that plan in-process.
PlanFlags plan_flags_of(const std::vector<std::string>& args);

int cmd_plan(const ProfileLibrary& lib, const PlanFlags& flags, std::ostream& out, std::ostream& err);

// `s` padded to `width` code points (so "×" and "–" line up), on the left when `right`.
std::string pad(const std::string& s, size_t width, bool right = false);

}  // namespace wingspan::cli
