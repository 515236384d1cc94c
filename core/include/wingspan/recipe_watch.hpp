#pragma once
// A run of any command (a framework's recipe, a script) recorded in the run history like a
// wingspan-train run: its protocol lines go to the record and events.jsonl as they arrive,
// everything else it prints becomes `log` events, and the plan it was given (a recipe's
// predicted.json) stands in for the prediction until the command sends its own. The command
// line (`wingspan watch`) and the window (Run a recipe…) both feed one of these.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "line_framer.hpp"
#include "run_record.hpp"

namespace wingspan {

// The recording never stops the command: when the run store's disk is full (or the folder
// gone), an event that cannot be stored is counted as lost and the run goes on; the result is
// written at the end if space allows, else finish() says why not.
class WatchedRun {
public:
    // `plan`: predicted.json (or any plan JSON with components), or null. `framework`: the
    // recipe framework ("hf-transformers", ...); empty: the plan's "recipe" field, else "external".
    // Throws InputError for a plan it cannot use, before any run folder is made.
    WatchedRun(const RunStore& store, const nlohmann::json& plan, std::string framework,
               std::vector<std::string> command, std::string label = {});

    const std::filesystem::path& folder() const { return folder_; }
    const std::string& framework() const { return framework_; }
    const RunRecord& record() const { return record_; }

    // One line of the command's stdout (protocol or not) / stderr, at `t` seconds since start.
    // stdout_line returns true for a protocol event (recorded as such); any other line is
    // recorded as a log line, and one that starts like an event ({"v":) but is not one is counted.
    bool stdout_line(const std::string& line, double t);
    void stderr_line(const std::string& line, double t);
    // A line of `stream` ("stdout", "stderr") longer than `max_line` bytes (LineFramer's over-long
    // line, `start` its first bytes): recorded as a log line cut at the bound, marked "[cut: a line
    // over 1 MiB]", and as an `error` event with code `line_too_long`. Returns the cut line as
    // shown (for an echo or a log view).
    std::string over_long_line(const std::string& stream, std::string_view start, std::size_t max_line, double t);
    // The command ended. A run the user stopped that said `done` with reason "interrupted"
    // counts as interrupted even when the framework died of the signal it was sent. Returns
    // false when result.json could not be written (recording_error() says why).
    bool finish(int exit_code, int signal, bool stopped_by_user);

    // Events that could not be stored, and the first reason; empty when none was lost.
    std::int64_t lost_events() const { return lost_events_; }
    const std::string& recording_error() const { return recording_error_; }
    // The first failure to store, once (a warning to print); empty otherwise.
    std::string take_warning();
    // Lines that started like a protocol event but were not one, and the parser's first reason.
    std::int64_t malformed_events() const { return malformed_events_; }
    const std::string& first_malformed_error() const { return first_malformed_error_; }

private:
    void append(const std::string& line);
    void log(const std::string& source, const std::string& text, double t);

    std::filesystem::path folder_;
    std::string framework_;
    RunRecord record_;
    std::int64_t lost_events_ = 0;
    std::string recording_error_;
    bool warned_ = false;
    std::int64_t malformed_events_ = 0;
    std::string first_malformed_error_;
};

// The framework profile a watched run was predicted with (plan.json's external.profile), for
// `wingspan calibrate`; nothing for wingspan-train runs or folders that are not runs.
std::optional<std::string> watched_profile(const std::filesystem::path& run);

}  // namespace wingspan
