#pragma once
// A run of any command (a framework's recipe, a script) recorded in the run history like a
// wingspan-train run: its protocol lines go to the record and events.jsonl as they arrive,
// everything else it prints becomes `log` events, and the plan it was given (a recipe's
// predicted.json) stands in for the prediction until the command sends its own. The command
// line (`wingspan watch`) and the window (Run a recipe…) both feed one of these.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_record.hpp"

namespace wingspan {

class WatchedRun {
public:
    // `plan`: predicted.json (or any plan JSON with components), or null. `framework`: the
    // recipe framework ("hf-transformers", ...); empty: the plan's "recipe" field, else "external".
    WatchedRun(const RunStore& store, const nlohmann::json& plan, std::string framework,
               std::vector<std::string> command, std::string label = {});

    const std::filesystem::path& folder() const { return folder_; }
    const std::string& framework() const { return framework_; }
    const RunRecord& record() const { return record_; }

    // One line of the command's stdout (protocol or not) / stderr, at `t` seconds since start.
    void stdout_line(const std::string& line, double t);
    void stderr_line(const std::string& line, double t);
    // The command ended. A run the user stopped that said `done` with reason "interrupted"
    // counts as interrupted even when the framework died of the signal it was sent.
    void finish(int exit_code, int signal, bool stopped_by_user);

private:
    void append(const std::string& line);
    void log(const std::string& source, const std::string& text, double t);

    std::filesystem::path folder_;
    std::string framework_;
    RunRecord record_;
};

// The framework profile a watched run was predicted with (plan.json's external.profile), for
// `wingspan calibrate`; nothing for wingspan-train runs or folders that are not runs.
std::optional<std::string> watched_profile(const std::filesystem::path& run);

}  // namespace wingspan
