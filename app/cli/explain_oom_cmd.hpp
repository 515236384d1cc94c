#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "wingspan/profiles.hpp"

namespace wingspan::cli {

// What cli.cpp has resolved from the command line for `explain-oom`.
struct ExplainOomRequest {
    bool with_plan = false;                 // a model was given (--model, --hf, --from, ...)
    std::vector<std::string> plan_args;     // the flags, for `plan --json`
    const MachineProfile* machine = nullptr;   // --machine: lends dtype support and speed
    bool framework_given = false;
    bool json = false;
};

// Reads the message from `in`; exit 2 with "not an OOM message I know" for other text.
int run_explain_oom(const ProfileLibrary& lib, const ExplainOomRequest& request, std::istream& in, std::ostream& out,
                    std::ostream& err);

}  // namespace wingspan::cli
