#include "wingspan/run_record.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/protocol_events.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/user_dirs.hpp"
#include "wingspan/memory_model.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan {

double ComponentComparison::error_percent() const {
    if (measured == 0) return predicted == 0 ? 0.0 : 100.0;
    return 100.0 * double(predicted - measured) / double(measured);
}

double RunSummary::peak_error_percent() const {
    return measured_peak ? 100.0 * double(predicted_peak - measured_peak) / double(measured_peak) : 0.0;
}

double RunSummary::total_error_percent() const {
    return measured_rss_peak ? 100.0 * double(predicted_total - measured_rss_peak) / double(measured_rss_peak) : 0.0;
}

const char* to_string(RunStatus s) {
    switch (s) {
        case RunStatus::Running: return "running";
        case RunStatus::Completed: return "completed";
        case RunStatus::Interrupted: return "interrupted";
        case RunStatus::Failed: return "failed";
    }
    return "failed";
}

RunRecord::RunRecord(size_t max_memory_samples) : max_samples_(std::max<size_t>(16, max_memory_samples)) {}

std::optional<protocol::Event> RunRecord::ingest_line(const std::string& line) {
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) return std::nullopt;
    auto parsed = protocol::parse_line(line);
    if (!parsed.event) {
        ++malformed_;
        add_log("ignored: " + parsed.error);
        return std::nullopt;
    }
    ingest(*parsed.event);
    return parsed.event;
}

void RunRecord::add_memory(MemorySample s) {
    memory_.push_back(std::move(s));
    if (memory_.size() <= max_samples_) return;
    // Halve the history: of each neighbouring pair keep the sample with more bytes, so the
    // chart keeps its peaks however long the run.
    std::vector<MemorySample> merged;
    merged.reserve(memory_.size() / 2 + 1);
    for (size_t i = 0; i + 1 < memory_.size(); i += 2)
        merged.push_back(memory_[i].allocated_bytes >= memory_[i + 1].allocated_bytes ? memory_[i] : memory_[i + 1]);
    if (memory_.size() % 2) merged.push_back(memory_.back());
    memory_ = std::move(merged);
}

void RunRecord::add_step(StepSample s) {
    ++step_events_;
    steps_.push_back(s);
    if (steps_.size() <= max_samples_) return;
    // Keep the later step of each pair: the loss curve keeps its shape and the last step
    // (progress, ETA) is always the newest.
    std::vector<StepSample> thinned;
    thinned.reserve(steps_.size() / 2 + 1);
    for (size_t i = 1; i < steps_.size(); i += 2) thinned.push_back(steps_[i]);
    if (steps_.size() % 2) thinned.push_back(steps_.back());
    steps_ = std::move(thinned);
}

void RunRecord::add_log(std::string line, bool always) {
    // An error usually ends the run, so it is kept past the cap — within a small reserve, so a
    // trainer that floods errors stays bounded too.
    const size_t cap = always ? kMaxLogLines + 64 : kMaxLogLines;
    if (logs_.size() >= cap) {
        ++dropped_logs_;
        return;
    }
    logs_.push_back(std::move(line));
}

void RunRecord::add_checkpoint(std::string path) {
    // A long run saves thousands: the newest are kept (halving at twice the cap keeps this
    // linear), so the record and its result.json stay small.
    ++checkpoint_events_;
    checkpoints_.push_back(std::move(path));
    if (checkpoints_.size() >= 2 * kMaxCheckpoints)
        checkpoints_.erase(checkpoints_.begin(), checkpoints_.end() - kMaxCheckpoints);
}

void RunRecord::ingest(const protocol::Event& e) {
    using protocol::EventType;
    switch (e.type) {
        case EventType::Hello:
            hello_ = e.body;
            if (auto h = protocol::as_hello(e); !h->plan.is_null()) plan_ = h->plan;
            break;
        case EventType::Predicted: {
            protocol::PredictedEvent p = *protocol::as_predicted(e);
            predicted_ = std::move(p.components);
            predicted_maxima_ = std::move(p.component_maxima);
            predicted_peak_ = p.peak_bytes;
            predicted_total_ = p.total_bytes;
            predicted_tokens_per_s_ = p.tokens_per_s;
            predicted_step_time_s_ = p.step_time_s;
            predicted_speed_scale_ = p.speed_scale;
            break;
        }
        case EventType::Memory: {
            ++memory_events_;
            protocol::MemoryEvent m = *protocol::as_memory(e);
            measured_peak_ = std::max({measured_peak_, m.peak_bytes, m.allocated_bytes});
            rss_peak_ = std::max({rss_peak_, m.rss_bytes, m.rss_peak_bytes});
            for (const auto& [c, b] : m.components) measured_maxima_[c] = std::max(measured_maxima_[c], b);
            add_memory(MemorySample{std::move(m), e.t});
            break;
        }
        case EventType::Step: {
            add_step(StepSample{*protocol::as_step(e), e.t});
            break;
        }
        case EventType::Eval: {
            const protocol::EvalEvent ev = *protocol::as_eval(e);
            evals_.emplace_back(ev.step, ev.loss);
            break;
        }
        case EventType::Checkpoint: add_checkpoint(protocol::as_checkpoint(e)->path); break;
        case EventType::Log: {
            const protocol::LogEvent l = *protocol::as_log(e);
            add_log(l.level + ": " + l.message);
            break;
        }
        case EventType::Error: {
            const protocol::ErrorEvent err = *protocol::as_error(e);
            last_error_ = e;
            add_log("error: " + err.code + ": " + err.message, /*always=*/true);
            break;
        }
        case EventType::Done: {
            const protocol::DoneEvent d = *protocol::as_done(e);
            done_ = e;
            measured_peak_ = std::max(measured_peak_, d.peak_bytes);
            rss_peak_ = std::max(rss_peak_, d.rss_peak_bytes);
            if (!d.checkpoint.empty() && std::find(checkpoints_.begin(), checkpoints_.end(), d.checkpoint) == checkpoints_.end())
                add_checkpoint(d.checkpoint);
            break;
        }
    }
}

namespace {
// The median of a step field over the run's steps, the first (warm-up: allocation, oneDNN's
// first-call setup) left out when there are more; 0 without a positive value.
double median_of_steps(const std::vector<StepSample>& steps, double StepSample::*field) {
    std::vector<double> v;
    for (size_t i = steps.size() > 1 ? 1 : 0; i < steps.size(); ++i)
        if (steps[i].*field > 0 && std::isfinite(steps[i].*field)) v.push_back(steps[i].*field);
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
}  // namespace

double RunRecord::measured_tokens_per_s() const { return median_of_steps(steps_, &StepSample::tokens_per_s); }
double RunRecord::measured_step_time_s() const { return median_of_steps(steps_, &StepSample::step_time_s); }

void RunRecord::finish(int exit_code, int signal) {
    exit_code_ = exit_code;
    exit_signal_ = signal;
    const std::string reason = done_ ? protocol::as_done(*done_)->reason : "";
    if (signal == 0 && exit_code == 0 && reason == "completed")
        status_ = RunStatus::Completed;
    else if (reason == "interrupted" && exit_code == 0)
        status_ = RunStatus::Interrupted;
    else
        status_ = RunStatus::Failed;
}

std::string RunRecord::status_text() const {
    std::string s = to_string(status_);
    if (status_ == RunStatus::Failed) {
        if (exit_signal_) {
            const char* name = strsignal(exit_signal_);
            s += ": killed by signal " + std::to_string(exit_signal_) + (name ? std::string(" (") + name + ")" : "");
        } else {
            s += ": exit code " + std::to_string(exit_code_);
        }
        if (const auto err = last_error_ ? protocol::as_error(*last_error_) : std::nullopt) s += " — " + err->code + ": " + err->message;
        else if (!done_) s += " — no `done` event";
    }
    return s;
}

RunSummary RunRecord::summary() const {
    RunSummary s;
    // A framework that reports totals only (a watched recipe) is compared on totals only.
    if (!measured_maxima_.empty())
    for (Component c : kAllComponents) {
        if (c == Component::FrameworkOverhead) continue;
        const auto p = predicted_maxima_.find(c);
        const auto m = measured_maxima_.find(c);
        const std::int64_t pv = p == predicted_maxima_.end() ? 0 : p->second;
        const std::int64_t mv = m == measured_maxima_.end() ? 0 : m->second;
        if (pv == 0 && mv == 0) continue;
        s.components.push_back({c, pv, mv});
    }
    s.predicted_peak = predicted_peak_;
    s.measured_peak = measured_peak_;
    s.predicted_total = predicted_total_;
    s.measured_rss_peak = rss_peak_;
    return s;
}

// ---- the run history ----

RunStore::RunStore(fs::path root) : root_(std::move(root)) {}

fs::path RunStore::default_root() {
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return fs::path(xdg) / "wingspan" / "runs";
    // Never a folder other users share (/tmp): with no home at all the store has no root, lists
    // nothing and refuses to create a run (create()).
    const fs::path home = home_directory();
    return home.empty() ? fs::path() : home / ".local/share/wingspan/runs";
}

fs::path RunStore::create(const json& plan, const std::string& label) {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    localtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    std::string safe;
    for (char c : label) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '-';
    if (root_.empty())
        throw IoError("no folder for the run history: neither XDG_DATA_HOME nor HOME is set, and this user has no "
                      "home folder in the password database (set HOME or XDG_DATA_HOME)");
    std::error_code ec;
    fs::create_directories(root_, ec);
    if (ec) throw IoError("cannot create the run history folder " + root_.string() + ": " + ec.message());
    // mkdir fails when the folder exists, so of several processes starting runs in the same
    // second each gets its own folder.
    fs::path dir = root_ / (std::string(stamp) + "-" + safe);
    for (int i = 2; !create_directory_exclusively(dir); ++i)
        dir = root_ / (std::string(stamp) + "-" + safe + "-" + std::to_string(i));
    write_file_atomically(dir / "plan.json", plan.dump(2) + "\n");
    return dir;
}

std::string RunStore::label_of(const fs::path& run) {
    const std::string name = run.filename().string();
    constexpr size_t kStamp = 16;   // "20261202-153231-"
    if (name.size() <= kStamp || name[8] != '-' || name[15] != '-') return name;
    for (size_t i = 0; i < 15; ++i)
        if (i != 8 && !std::isdigit(static_cast<unsigned char>(name[i]))) return name;
    return name.substr(kStamp);
}

void RunStore::append_line(const fs::path& run, const std::string& line) {
    wingspan::append_line(run / "events.jsonl", line);   // one O_APPEND write per line
}

void RunStore::write_result(const fs::path& run, const RunRecord& r) {
    const RunSummary s = r.summary();
    json comps = json::array();
    for (const auto& c : s.components)
        comps.push_back({{"component", component_name(c.component)},
                         {"predicted", c.predicted},
                         {"measured", c.measured},
                         {"error_percent", c.error_percent()}});
    // A record stays far below kMaxRunResultBytes whatever the run did: the newest checkpoints
    // only (events.jsonl lists them all) and a bounded status text.
    const auto& all = r.checkpoints();
    const std::vector<std::string> newest_checkpoints(
        all.end() - std::ptrdiff_t(std::min<size_t>(all.size(), kMaxResultCheckpoints)), all.end());
    std::string status_text = r.status_text();
    if (status_text.size() > 4096) status_text = status_text.substr(0, 4096) + "…";
    const json result = {{"status", to_string(r.status())},
                         {"status_text", status_text},
                         {"exit_code", r.exit_code()},
                         {"signal", r.exit_signal()},
                         {"predicted_peak_bytes", s.predicted_peak},
                         {"measured_peak_bytes", s.measured_peak},
                         {"predicted_total_bytes", s.predicted_total},
                         {"measured_rss_peak_bytes", s.measured_rss_peak},
                         {"reached_peak", r.reached_peak()},
                         {"components", comps},
                         {"checkpoints", newest_checkpoints},
                         {"checkpoints_total", r.checkpoint_events()},
                         {"malformed_lines", r.malformed_lines()}};
    write_file_atomically(run / "result.json", result.dump(2) + "\n");
}

std::vector<fs::path> RunStore::list() const {
    // Never throws for the file system: an unreadable root lists nothing, a folder that vanishes
    // or cannot be examined is not a run (the increment's error_code form: a range-for would throw).
    std::vector<fs::path> runs;
    std::error_code ec;
    if (!fs::is_directory(root_, ec)) return runs;
    for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code ec2;
        if (it->is_directory(ec2) && fs::exists(fs::symlink_status(it->path() / "plan.json", ec2)))
            runs.push_back(it->path());
    }
    std::sort(runs.rbegin(), runs.rend());
    return runs;
}

RunRecord RunStore::load(const fs::path& run) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(run / "plan.json", ec)))
        throw InputError("'" + run.string() + "' is not a Wingspan run folder (no plan.json)");
    (void)read_plan(run);   // a plan.json that is a pipe, a device or not JSON makes the record unreadable
    RunRecord r;
    const LineReadStats events = for_each_event_line(run, [&](std::string_view line) { r.ingest_line(std::string(line)); });
    if (events.long_lines > 0) {
        r.count_malformed(std::int64_t(events.long_lines));
        r.add_read_note("events.jsonl: " + std::to_string(events.long_lines) + " lines longer than " +
                        std::to_string(kMaxRunEventLineBytes) + " bytes were skipped");
    }
    if (events.truncated)
        r.add_read_note("events.jsonl is " + std::to_string(events.file_bytes) + " bytes; only the first " +
                        std::to_string(kMaxRunEventsBytes) + " were read");
    const std::optional<RunResultFile> result = read_result(run);
    if (!result) {
        r.finish(-1, 0);   // it crashed together with its launcher
        return r;
    }
    if (!result->note.empty()) r.add_read_note(result->note);
    r.finish(result->exit_code, result->signal);
    return r;
}

// ---- calibration ----

namespace {
// This machine's speed: the median of measured ÷ predicted tokens/s, each prediction taken back
// to scale 1 (a run predicted with an earlier calibration carries its scale in `predicted`). The
// median, not the mean: a run slowed by a busy machine should not drag the scale down.
void fit_speed_scale(const FrameworkProfile& base, const std::vector<RunRecord>& runs, Calibration& cal) {
    std::vector<double> ratios;
    std::vector<std::pair<double, double>> points;   // (unscaled prediction, measured)
    for (const auto& r : runs) {
        const double predicted = r.predicted_tokens_per_s(), measured = r.measured_tokens_per_s();
        if (predicted <= 0 || measured <= 0) continue;
        const double unscaled = predicted / r.predicted_speed_scale();
        points.emplace_back(unscaled, measured);
        ratios.push_back(measured / unscaled);
    }
    cal.speed_runs = points.size();
    if (points.empty()) return;
    std::sort(ratios.begin(), ratios.end());
    const size_t n = ratios.size();
    const double scale = n % 2 ? ratios[n / 2] : std::sqrt(ratios[n / 2 - 1] * ratios[n / 2]);
    cal.profile.speed_scale = std::clamp(scale, 0.01, 100.0);
    cal.profile.sources["speed_scale"] =
        "calibrated: median of measured / predicted tokens/s over " + std::to_string(n) + " runs on this machine";
    double before = 0, after = 0;
    for (const auto& [unscaled, measured] : points) {
        before += std::fabs(unscaled * base.speed_scale - measured) / measured;
        after += std::fabs(unscaled * cal.profile.speed_scale - measured) / measured;
    }
    cal.speed_error_before_percent = 100.0 * before / double(n);
    cal.speed_error_after_percent = 100.0 * after / double(n);
}
}  // namespace

Calibration calibrate(const FrameworkProfile& base, const std::vector<RunRecord>& runs) {
    Calibration cal;
    cal.profile = base;
    // The planner's total is context + workspace + predicted peak + slack × base, so with
    // y = RSS − (peak − base) the fit is a line y = (context + workspace) + (1 + slack) · base.
    // The planner's own peak is used (not the measured one): the calibrated profile corrects
    // what the planner will say.
    struct Point {
        double base, y, rss, peak;
    };
    std::vector<Point> points;
    double before = 0;
    for (const auto& r : runs) {
        if (r.measured_peak() <= 0 || r.measured_rss_peak() <= 0 || r.predicted_total() <= 0) continue;
        const double peak = double(r.predicted_peak());
        const double base_bytes = double(slack_base_bytes(base, r.predicted()));
        const double rss = double(r.measured_rss_peak());
        points.push_back({base_bytes, rss - (peak - base_bytes), rss, peak});
        before += std::fabs(double(r.predicted_total()) - rss) / rss;
    }
    cal.runs = points.size();
    if (points.empty()) throw InputError("calibration needs at least one finished run with memory measurements");
    before /= double(points.size());
    double slope = 1.0 + base.allocator_slack, intercept = double(base.context_bytes + base.workspace_bytes);
    if (points.size() >= 2) {
        // Least squares of the relative error (weights 1/RSS²): the error reported and felt is
        // relative, and plain least squares would let the largest run decide for all of them.
        double sw = 0, mx = 0, my = 0;
        for (const Point& p : points) {
            const double w = 1.0 / (p.rss * p.rss);
            sw += w, mx += w * p.base, my += w * p.y;
        }
        mx /= sw;
        my /= sw;
        double sxx = 0, sxy = 0;
        for (const Point& p : points) {
            const double w = 1.0 / (p.rss * p.rss);
            sxx += w * (p.base - mx) * (p.base - mx), sxy += w * (p.base - mx) * (p.y - my);
        }
        if (sxx > 0) {
            slope = std::clamp(sxy / sxx, 1.0, 2.0);   // slack is never negative
            intercept = my - slope * mx;
        }
    } else {
        intercept = points[0].y - slope * points[0].base;
    }
    cal.profile.allocator_slack = slope - 1.0;
    cal.profile.context_bytes = std::max<std::int64_t>(0, std::llround(intercept) - base.workspace_bytes);
    cal.profile.id = calibrated_framework_id(base.id);
    cal.profile.name = base.name + " (calibrated from " + std::to_string(points.size()) + " runs)";
    cal.profile.sources["context_bytes"] = "calibrated: least squares of the relative error over measured RSS peaks";
    cal.profile.sources["allocator_slack"] = "calibrated: least squares of the relative error over measured RSS peaks";
    // The error after is the planner's: the new overheads on top of its predicted peak.
    double after = 0;
    for (const Point& p : points) {
        const double predicted = double(cal.profile.context_bytes + cal.profile.workspace_bytes) + p.peak +
                                 cal.profile.allocator_slack * p.base;
        after += std::fabs(predicted - p.rss) / p.rss;
    }
    cal.error_before_percent = 100.0 * before;
    cal.error_after_percent = 100.0 * after / double(points.size());
    fit_speed_scale(base, runs, cal);
    return cal;
}

json framework_profile_to_json(const FrameworkProfile& f) {
    json j = {{"id", f.id},
            {"name", f.name},
            {"context_bytes", f.context_bytes},
            {"workspace_bytes", f.workspace_bytes},
            {"allocator_slack", f.allocator_slack},
            {"allocator_slack_of", f.allocator_slack_of},
            {"activation_factor", f.activation_factor},
            {"mfu", f.mfu},
            {"quantized_speed_factor", f.quantized_speed_factor},
            {"speed_scale", f.speed_scale},
            {"working_set_fraction", f.working_set_fraction},
            {"optimizer_step", f.optimizer_step},
            {"fused_loss", f.fused_loss},
            {"grouped_eager_attention", f.grouped_eager_attention},
            {"softmax_fp32", f.softmax_fp32},
            {"norm_saves_square", f.norm_saves_square},
            {"loss_in_place", f.loss_in_place},
            {"tied_grad_in_place", f.tied_grad_in_place},
            {"bf16_collectives_in_fp32", f.bf16_collectives_in_fp32},
            {"zero1_wire_buffer", f.zero1_wire_buffer},
            {"checkpoint_state_bytes", f.checkpoint_state_bytes},
            {"technique_lead", f.technique_lead},
            {"sources", f.sources}};
    for (const auto& [k, v] : f.behaviour.items()) j[k] = v;   // dtypes, loss, quantization, ...
    return j;
}

}  // namespace wingspan
