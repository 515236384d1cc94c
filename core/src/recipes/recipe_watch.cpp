#include "wingspan/recipe_watch.hpp"

#include <csignal>
#include <fstream>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/protocol_events.hpp"
#include "wingspan/quoting.hpp"
#include "wingspan/units.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan {

namespace {

std::string label_for(const json& plan, const std::string& framework) {
    std::string label = framework;
    // Appended piece by piece: `"-" + string` trips GCC 12's false -Wrestrict (bug 105329).
    if (plan.is_object() && plan.contains("model") && plan["model"].is_object())
        label.append("-").append(plan["model"].value("id", std::string("model")));
    if (plan.is_object() && plan.contains("setup") && plan["setup"].is_object())
        label.append("-").append(plan["setup"].value("method", std::string()));
    return label;
}

}  // namespace

WatchedRun::WatchedRun(const RunStore& store, const json& plan, std::string framework, std::vector<std::string> command,
                       std::string label)
    : framework_(std::move(framework)) {
    // Everything that reads the plan happens before the run folder exists, so a plan that
    // cannot be used leaves no run behind (it would list as failed).
    std::string profile, name;
    std::vector<std::string> first_lines;
    // The command and folder as recorded: JSON holds only UTF-8, and a file name may be any bytes.
    std::vector<std::string> shown;
    for (const auto& arg : command) shown.push_back(quoting::one_line(arg));
    std::error_code ec;
    const std::string cwd = quoting::one_line(fs::current_path(ec).string());
    try {
        if (framework_.empty())
            framework_ = plan.is_object() && plan.contains("recipe") ? plan["recipe"].get<std::string>() : "external";
        profile = plan.is_object() ? plan.value("framework", std::string()) : std::string();
        name = label.empty() ? label_for(plan, framework_) : label;
        // Until (unless) the command says hello and predicted itself, the plan speaks for it, so
        // a command without the reporter still shows measured against predicted where it can.
        first_lines.push_back(protocol::encode(
            protocol::EventType::Hello, 0,
            {{"trainer", "wingspan watch"}, {"framework", framework_}, {"external", true}, {"command", shown},
             {"plan", plan.is_object() ? plan.value("setup", json::object()) : json::object()}}));
        if (plan.is_object() && plan.contains("components"))
            first_lines.push_back(protocol::encode(protocol::EventType::Predicted, 0,
                                                   {{"components", plan["components"]},
                                                    {"component_maxima", plan.value("component_maxima", plan["components"])},
                                                    {"peak_bytes", plan.value("peak_allocated_bytes", std::int64_t(0))},
                                                    {"total_bytes", plan.value("total_bytes", std::int64_t(0))},
                                                    {"framework", profile}}));
        RunRecord probe;
        for (const auto& line : first_lines) probe.ingest_line(line);
    } catch (const json::exception& e) {
        const std::string why = e.what();   // without the library's "[json.exception...] " tag
        throw InputError("the plan is not one `wingspan watch` can use (" + why.substr(why.find("] ") + 2) +
                         "); give a recipe's predicted.json or a plan saved by Wingspan");
    }
    const json saved = {{"format", "wingspan-run"},
                        {"version", 1},
                        {"planner", plan},
                        {"framework", framework_},
                        {"external", {{"framework", framework_}, {"profile", profile}, {"command", shown}, {"cwd", cwd}}}};
    folder_ = RunStore(store).create(saved, name);
    for (const auto& line : first_lines) append(line);
}

void WatchedRun::append(const std::string& line) {
    record_.ingest_line(line);
    // The command never depends on the recorder's disk: a line that cannot be stored is counted.
    try {
        RunStore::append_line(folder_, line);
    } catch (const std::exception& e) {
        ++lost_events_;
        if (recording_error_.empty()) recording_error_ = e.what();
    }
}

std::string WatchedRun::take_warning() {
    if (warned_ || recording_error_.empty()) return {};
    warned_ = true;
    return "cannot record the run in " + folder_.string() + " (" + recording_error_ +
           "); the command keeps running, and the events not recorded are counted";
}

void WatchedRun::log(const std::string& source, const std::string& text, double t) {
    append(protocol::encode(protocol::EventType::Log, t, {{"level", "info"}, {"source", source}, {"message", text}}));
}

bool WatchedRun::stdout_line(const std::string& raw, double t) {
    std::string line = raw;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) return false;
    // Protocol lines are JSON objects; a framework's own output never starts with {"v":.
    if (line.rfind("{\"v\":", 0) == 0) {
        const protocol::ParseResult parsed = protocol::parse_line(line);
        if (parsed.event) {
            append(line);
            return true;
        }
        if (malformed_events_++ == 0) first_malformed_error_ = parsed.error;
    }
    log("stdout", line, t);
    return false;
}

void WatchedRun::stderr_line(const std::string& raw, double t) {
    std::string line = raw;
    while (!line.empty() && line.back() == '\r') line.pop_back();
    // Progress bars redraw with carriage returns: keep the last state of the line.
    if (auto cr = line.find_last_of('\r'); cr != std::string::npos) line = line.substr(cr + 1);
    if (line.find_first_not_of(" \t") == std::string::npos) return;
    log("stderr", line, t);
}

std::string WatchedRun::over_long_line(const std::string& stream, std::string_view start, std::size_t max_line,
                                       double t) {
    const std::string kept = std::string(start) + " [cut: a line over " + format_bytes(double(max_line), ByteUnit::GiB, 0) + "]";
    log(stream, kept, t);
    append(line_too_long_event(t, stream, max_line, start));
    return kept;
}

bool WatchedRun::finish(int exit_code, int signal, bool stopped_by_user) {
    if (stopped_by_user && !record_.done()) {
        const std::int64_t steps = record_.steps().empty() ? 0 : record_.steps().back().step;
        append(protocol::encode(protocol::EventType::Done, 0, {{"reason", "interrupted"}, {"steps", steps}}));
    }
    const bool interrupted = stopped_by_user && protocol::as_done(*record_.done())->reason == "interrupted";
    // The framework may die of the signal it was sent (Python re-raises SIGINT): still a stop.
    if (interrupted && (signal == SIGINT || signal == SIGTERM || exit_code == 0 || exit_code == 128 + SIGINT ||
                        exit_code == 128 + SIGTERM))
        exit_code = 0, signal = 0;
    record_.finish(exit_code, signal);
    try {
        RunStore::write_result(folder_, record_);
    } catch (const std::exception& e) {
        recording_error_ = std::string("the result could not be written: ") + e.what();
        return false;
    }
    return true;
}

std::optional<std::string> watched_profile(const fs::path& run) {
    json j;
    try {
        j = read_untrusted_json_file(run / "plan.json");   // regular file, bounded size and depth
    } catch (const InputError&) {
        return std::nullopt;
    }
    if (!j.is_object() || !j.contains("external") || !j["external"].is_object()) return std::nullopt;
    const json& profile = j["external"].contains("profile") ? j["external"]["profile"] : json();
    if (!profile.is_string() || profile.get<std::string>().empty()) return std::nullopt;   // not ours: ignored
    return profile.get<std::string>();
}

}  // namespace wingspan
