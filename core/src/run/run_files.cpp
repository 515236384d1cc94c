// Reading a run folder we may not have written whole: every file is opened without blocking,
// must be a regular file, is read up to its cap and has its types checked, so a malformed,
// oversized or special-file record is named as unreadable and never stops a listing.
#include <climits>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/run_record.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan {

namespace {

// Keeps the top-level numbers and strings of a JSON object and skips everything nested, so a
// result.json of any shape costs no more memory than its text.
class TopLevelFields : public nlohmann::json_sax<json> {
public:
    std::map<std::string, json> fields;
    bool object = false;
    std::string error;

    bool null() override { return scalar(nullptr); }
    bool boolean(bool v) override { return scalar(v); }
    bool number_integer(number_integer_t v) override { return scalar(v); }
    bool number_unsigned(number_unsigned_t v) override { return scalar(v); }
    bool number_float(number_float_t v, const string_t&) override { return scalar(v); }
    bool string(string_t& v) override { return scalar(v.size() > kMaxText ? v.substr(0, kMaxText) + "…" : v); }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        if (depth_ == 0) object = true;
        else mark_nested();
        ++depth_;
        return true;
    }
    bool key(string_t& k) override {
        if (depth_ == 1) key_ = k;
        return true;
    }
    bool end_object() override { return --depth_, true; }
    bool start_array(std::size_t) override {
        if (depth_ >= 1) mark_nested();
        ++depth_;
        return true;
    }
    bool end_array() override { return --depth_, true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        error = e.what();
        return false;
    }

private:
    static constexpr size_t kMaxText = 4096;
    bool scalar(json v) {
        if (depth_ == 1) fields[key_] = std::move(v);
        return true;
    }
    // A nested value is kept as an empty one of its kind, so its type can still be checked.
    void mark_nested() {
        if (depth_ == 1) fields[key_] = json::object();
    }
    int depth_ = 0;
    std::string key_;
};

std::string run_name(const fs::path& run) { return "run " + run.string(); }

}  // namespace

RunStatus RunResultFile::run_status() const {
    return status == "completed" ? RunStatus::Completed : status == "interrupted" ? RunStatus::Interrupted : RunStatus::Failed;
}

json RunStore::read_plan(const fs::path& run) {
    const fs::path file = run / "plan.json";
    std::string text;
    try {
        text = read_regular_file(file, kMaxRunPlanBytes);
    } catch (const InputError& e) {
        throw InputError(run_name(run) + ": " + e.what());
    }
    std::string why;
    auto plan = try_parse_untrusted_json(text, &why);
    if (!plan) throw InputError(run_name(run) + ": plan.json is " + why);
    return std::move(*plan);
}

std::optional<RunResultFile> RunStore::read_result(const fs::path& run) {
    const fs::path file = run / "result.json";
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(file, ec))) return std::nullopt;
    RunResultFile r;
    std::string text;
    try {
        text = read_regular_file(file, kMaxRunResultScanBytes);
    } catch (const InputError& e) {
        throw InputError(run_name(run) + ": " + e.what());
    }
    if (text.size() > kMaxRunResultBytes)
        r.note = "result.json is " + std::to_string(text.size()) + " bytes, more than a record's " +
                 std::to_string(kMaxRunResultBytes) + "; its top-level fields were read";
    TopLevelFields sax;
    const bool ok = json::sax_parse(text, &sax);
    if (!ok) throw InputError(run_name(run) + ": result.json is not valid JSON (" + sax.error + ")");
    if (!sax.object) throw InputError(run_name(run) + ": result.json is not a JSON object");
    auto bad = [&](const char* name, const char* what) {
        return InputError(run_name(run) + ": result.json: \"" + name + "\" must be " + what);
    };
    auto text_field = [&](const char* name, std::string& out) {
        auto it = sax.fields.find(name);
        if (it == sax.fields.end()) return;
        if (!it->second.is_string()) throw bad(name, "a string");
        out = it->second.get<std::string>();
    };
    auto int_field = [&](const char* name, std::int64_t lo, std::int64_t hi) -> std::optional<std::int64_t> {
        auto it = sax.fields.find(name);
        if (it == sax.fields.end()) return std::nullopt;
        const json& v = it->second;
        const bool in_range = v.is_number_integer() &&
                              (v.is_number_unsigned() ? v.get<std::uint64_t>() <= std::uint64_t(hi)
                                                      : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi);
        if (!in_range) throw bad(name, lo < 0 ? "an integer" : "a whole number of bytes");
        return v.get<std::int64_t>();
    };
    text_field("status", r.status);
    if (r.status != "completed" && r.status != "interrupted" && r.status != "failed" && r.status != "running")
        throw bad("status", "completed, interrupted or failed");
    r.status_text = r.status;
    text_field("status_text", r.status_text);
    r.exit_code = int(int_field("exit_code", INT32_MIN, INT32_MAX).value_or(1));
    r.signal = int(int_field("signal", 0, 255).value_or(0));
    r.predicted_peak = int_field("predicted_peak_bytes", 0, INT64_MAX).value_or(0);
    r.measured_peak = int_field("measured_peak_bytes", 0, INT64_MAX).value_or(0);
    r.predicted_total = int_field("predicted_total_bytes", 0, INT64_MAX).value_or(0);
    r.measured_rss_peak = int_field("measured_rss_peak_bytes", 0, INT64_MAX).value_or(0);
    if (auto it = sax.fields.find("reached_peak"); it != sax.fields.end()) {
        if (!it->second.is_boolean()) throw bad("reached_peak", "true or false");
        r.reached_peak = it->second.get<bool>();
    }
    return r;
}

LineReadStats RunStore::for_each_event_line(const fs::path& run, const std::function<void(std::string_view)>& line) {
    try {
        return for_each_line_of_regular_file(run / "events.jsonl", kMaxRunEventsBytes, kMaxRunEventLineBytes, line,
                                             /*missing_is_empty=*/true);
    } catch (const InputError& e) {
        throw InputError(run_name(run) + ": " + e.what());
    }
}

RunListing RunStore::read_listing(const fs::path& run) {
    RunListing l;
    l.folder = run;
    auto note = [&](const std::string& why) { l.problem += (l.problem.empty() ? "" : "; ") + why; };
    // Each part on its own: a bad result.json still shows the plan's settings, and the other way round.
    try {
        l.plan = read_plan(run);
    } catch (const std::exception& e) {
        note(e.what());
    }
    try {
        l.result = read_result(run);
    } catch (const std::exception& e) {
        note(e.what());
    }
    try {   // not read here, but a pipe or device in its place would stop whoever opens the run
        require_regular_file(run / "events.jsonl");
    } catch (const std::exception& e) {
        note(run_name(run) + ": " + e.what());
    }
    return l;
}

}  // namespace wingspan
