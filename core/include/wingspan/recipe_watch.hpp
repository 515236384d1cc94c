#pragma once
// A run of any command (a framework's recipe, a script) recorded in the run history like a
// wingspan-train run: its protocol lines go to the record and events.jsonl as they arrive,
// everything else it prints becomes `log` events, and the plan it was given (a recipe's
// predicted.json) stands in for the prediction until the command sends its own. The command
// line (`wingspan watch`) and the window (Run a recipe…) both feed one of these.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// Splits a stream into lines with a bounded buffer: a line longer than `max_line` bytes is
// passed on as its first `max_line` bytes (cut = true) and the rest of it goes to
// `overflow(data, size, line_ends)` as it arrives instead of being kept.
class LineFramer {
public:
    explicit LineFramer(std::size_t max_line = 1 << 20) : max_(max_line) {}
    template <typename Line, typename Overflow>
    void feed(const char* data, std::size_t n, Line&& line, Overflow&& overflow) {
        while (n > 0) {
            const char* nl = static_cast<const char*>(std::memchr(data, '\n', n));
            const std::size_t take = nl ? std::size_t(nl - data) : n;
            if (skipping_) {
                overflow(data, take, nl != nullptr);
            } else if (pending_.size() + take > max_) {
                const std::size_t room = max_ - pending_.size();
                pending_.append(data, room);
                line(pending_, true);
                pending_.clear();
                overflow(data + room, take - room, nl != nullptr);
                skipping_ = true;
            } else {
                pending_.append(data, take);
            }
            if (!nl) return;
            if (!skipping_) line(pending_, false);
            pending_.clear();
            skipping_ = false;
            data += take + 1;
            n -= take + 1;
        }
    }
    // What is left without a newline at the end of the stream.
    template <typename Line>
    void finish(Line&& line) {
        if (!pending_.empty() && !skipping_) line(pending_, false);
        pending_.clear();
    }

private:
    std::size_t max_;
    std::string pending_;
    bool skipping_ = false;   // inside a line already passed on cut
};

// The framework profile a watched run was predicted with (plan.json's external.profile), for
// `wingspan calibrate`; nothing for wingspan-train runs or folders that are not runs.
std::optional<std::string> watched_profile(const std::filesystem::path& run);

}  // namespace wingspan
