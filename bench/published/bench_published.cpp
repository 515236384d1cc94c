// Predicts every published single-GPU peak-memory measurement in cases.json with the bundled
// profiles (the case's framework, model and full setup; no per-case constants) and writes a
// Markdown report: case, source, framework, predicted vs measured, error, median and worst.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/setup.hpp"
#include "bench_args.hpp"

using namespace wingspan;
using nlohmann::json;

namespace {

// The statistic a source published, from the planner's estimate: allocated tensors
// (max_memory_allocated / active), the caching allocator's reserve, or the whole device.
std::int64_t predicted_for(const MemoryEstimate& est, const FrameworkProfile& fw, const std::string& statistic) {
    if (statistic == "allocated" || statistic == "active") return est.peak_allocated_bytes;
    if (statistic == "reserved") return est.total_bytes - fw.context_bytes;
    if (statistic == "device") return est.total_bytes;
    throw InputError("unknown statistic '" + statistic + "' (allocated, active, reserved or device)");
}

// Weights, gradients and optimizer state of the configuration: no run of it can allocate less.
// A paged optimizer's state paged back for its step is on the device but outside PyTorch's
// allocator (bitsandbytes cudaMallocManaged): not part of an allocated figure's floor.
double static_bytes(const MemoryEstimate& est, const std::string& statistic) {
    double b = 0;
    for (const auto& t : est.terms)
        if (!t.on_host && t.formula.find("temporaries") == std::string::npos &&
            (statistic == "device" || t.formula.find("paged state of the tensor being stepped") == std::string::npos) &&
            (t.component == Component::FrozenWeights || t.component == Component::QuantConstants ||
             t.component == Component::Adapters || t.component == Component::TrainableWeights ||
             t.component == Component::MasterWeights || t.component == Component::OptimizerState ||
             (t.component == Component::Gradients && t.formula.find("tied") == std::string::npos)))
            b += double(t.bytes);
    return b;
}

// The profile as the case was measured: a case may name behaviour of an older release of a
// library the framework used then (with its source in "behaviour_note"), applied over the
// bundled profile file as a JSON merge patch; the bundled profile itself is never changed.
// A case measured with an earlier release of the framework itself names it ("framework_release",
// one of the profile's "releases"): the profile at that release, then the case's own behaviour.
FrameworkProfile as_measured(const FrameworkProfile& bundled, const json& c) {
    if (!c.contains("framework_behaviour")) return bundled;
    json profile = read_untrusted_json_file(bundled.file);
    if (!bundled.release.empty()) profile.merge_patch(profile.at("releases").at(bundled.release).at("behaviour"));
    profile.erase("releases");
    profile.merge_patch(c.at("framework_behaviour"));
    return parse_framework_profile(profile, bundled.file.string());
}

std::string release_summary(const ProfileLibrary& lib, const json& c) {
    for (const auto& r : lib.framework(c.at("framework").get<std::string>()).releases)
        if (r.name == c.value("framework_release", std::string())) return r.summary;
    return {};
}

std::string framework_id(const json& c) {
    return c.at("framework").get<std::string>() +
           (c.contains("framework_release") ? "@" + c.at("framework_release").get<std::string>() : std::string());
}

std::string gb(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
    return buf;
}

std::string kb_per_token(double bytes) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.1f kB per token", bytes / 1e3);
    return buf;
}

// One case's comparison: the published figure and the planner's; a published figure under `floor`
// was not measured under the case's configuration (0: no floor).
struct Comparison {
    double measured = 0, predicted = 0, floor = 0;
    std::string measured_text, predicted_text, note;
};

struct CaseInput {
    FrameworkProfile fw;
    const ModelProfile* model;
    TrainingSetup setup;
};

CaseInput case_input(const ProfileLibrary& lib, const json& c) {
    CaseInput in{as_measured(lib.framework(framework_id(c)), c), &lib.model(c.at("model").get<std::string>()),
                 TrainingSetup::from_json(c.at("setup"))};
    in.setup.validate(in.model->arch);
    return in;
}

MemoryEstimate estimate_at(const CaseInput& in, std::int64_t seq_len) {
    TrainingSetup s = in.setup;
    s.seq_len = seq_len;
    s.validate(in.model->arch);
    return estimate_memory(in.model->arch, s, in.fw);
}

// A published table whose rows (memory in `unit_bytes`, the largest context that fits in it) lie on
// one straight line is one measurement of fixed bytes plus bytes per token, not one per row: the
// case compares the line's `part` ("fixed" or "per_token") with the planner's own line at the rows'
// contexts. Rows off the line by more than their rounding are an error.
Comparison compare_line(const CaseInput& in, const json& c, const std::string& statistic) {
    const json& line = c.at("line");
    const double unit = line.at("unit_bytes").get<double>();
    const json& rows = line.at("rows");
    const std::string part = c.at("line_part").get<std::string>();
    const std::string id = c.at("id").get<std::string>();
    if (part != "fixed" && part != "per_token")
        throw InputError("case '" + id + "': line_part is '" + part + "' (fixed or per_token)");
    if (!rows.is_array() || rows.size() < 3 || !(unit > 0))
        throw InputError("case '" + id + "': a line needs unit_bytes > 0 and at least three [memory, context] rows");
    const double m0 = rows.front().at(0).get<double>(), c0 = rows.front().at(1).get<double>();
    const double m1 = rows.back().at(0).get<double>(), c1 = rows.back().at(1).get<double>();
    if (!(c1 > c0) || !(m1 > m0) || c0 < 1) throw InputError("case '" + id + "': rows must grow in memory and context");
    const double tokens_per_unit = (c1 - c0) / (m1 - m0);
    for (const auto& r : rows) {
        const double off = r.at(1).get<double>() - (c0 + (r.at(0).get<double>() - m0) * tokens_per_unit);
        if (std::fabs(off) > 1.0)
            throw InputError("case '" + id + "': the row " + r.dump() + " is " + std::to_string(std::lround(off)) +
                             " tokens off the line through the first and last rows: not one line");
    }
    // The planner's own line: least squares through its prediction at every row's context (its
    // peak moves between phases, so two points would not do).
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& r : rows) {
        const double x = r.at(1).get<double>();
        const double y = double(predicted_for(estimate_at(in, std::int64_t(x)), in.fw, statistic));
        sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double n = double(rows.size());
    const double per_token = (n * sxy - sx * sy) / (n * sxx - sx * sx), published_per_token = unit / tokens_per_unit;
    Comparison out;
    if (part == "per_token") {
        out.measured = published_per_token;
        out.predicted = per_token;
        out.measured_text = kb_per_token(out.measured);
        out.predicted_text = kb_per_token(out.predicted);
    } else {
        out.measured = m0 * unit - published_per_token * c0;
        out.predicted = (sy - per_token * sx) / n;
        out.measured_text = gb(out.measured) + " at no context";
        out.predicted_text = gb(out.predicted);
        out.floor = static_bytes(estimate_at(in, std::int64_t(c0)), statistic);
    }
    char note[400];
    std::snprintf(note, sizeof note,
                  "the line: %.2f tokens per unit of %.0f B, through rows %s and %s; the planner's: least squares through its %zu rows' contexts",
                  tokens_per_unit, unit, rows.front().dump().c_str(), rows.back().dump().c_str(), rows.size());
    out.note = note;
    return out;
}

Comparison compare_peak(const CaseInput& in, const json& c, const std::string& statistic) {
    const MemoryEstimate est = estimate_memory(in.model->arch, in.setup, in.fw);
    Comparison out;
    out.predicted = double(predicted_for(est, in.fw, statistic));
    out.measured = c.at("measured_bytes").get<double>();
    out.measured_text = c.value("measured_text", gb(out.measured));
    out.predicted_text = gb(out.predicted);
    out.floor = static_bytes(est, statistic);
    return out;
}

void explain(const CaseInput& in) {
    const MemoryEstimate est = estimate_memory(in.model->arch, in.setup, in.fw);
    for (const auto& t : est.terms)
        std::cout << component_name(t.component) << "  " << gb(double(t.bytes)) << "  " << t.formula << "\n";
    for (const auto& p : est.phases) {
        std::cout << "phase " << p.name << ": " << gb(double(p.total())) << " (";
        for (const auto& [comp, b] : p.bytes) std::cout << " " << component_name(comp) << " " << gb(double(b));
        std::cout << " )\n";
    }
    std::cout << "peak " << est.peak_phase << " allocated " << gb(double(est.peak_allocated_bytes)) << ", device "
              << gb(double(est.total_bytes)) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    const auto args = bench::parse_bench_args(argc, argv, {WINGSPAN_PUBLISHED_CASES, WINGSPAN_PUBLISHED_RESULT, ""}, true,
                                              "bench_published [--cases cases.json] [--out published.md] [--explain CASE-ID]");
    if (!args) return 2;
    const std::string &cases_path = args->cases, &out_path = args->out, &explain_id = args->explain;
    try {
        const ProfileLibrary lib = ProfileLibrary::load(ProfileLibrary::default_dir(argv[0]));
        const json doc = bench::read_cases(cases_path);
        std::ostringstream table;
        std::vector<double> errors;
        std::ostringstream excluded;
        table << "| Case | Framework profile | Statistic | Measured | Predicted | Error |\n|---|---|---|---|---|---|\n";
        std::ostringstream sources;
        for (const auto& c : doc.at("cases")) {
            const CaseInput in = case_input(lib, c);
            const std::string id = c.at("id").get<std::string>();
            if (!explain_id.empty()) {
                // One case's terms and phases, to read a miss against the framework's source.
                if (id != explain_id) continue;
                explain(in);
                return 0;
            }
            const std::string statistic = c.at("statistic").get<std::string>();
            const std::string kind = c.value("kind", std::string("peak"));
            if (kind != "peak" && kind != "line") throw InputError("case '" + id + "': kind is '" + kind + "' (peak or line)");
            const bool is_line = kind == "line";
            const Comparison cmp = is_line ? compare_line(in, c, statistic) : compare_peak(in, c, statistic);
            const double error = 100.0 * (cmp.predicted - cmp.measured) / cmp.measured;
            // A published figure below the weights, gradients and AdamW state its own configuration
            // needs was not measured under that configuration (another optimizer, offload, a
            // different statistic): listed, left out of the summary.
            const bool comparable = cmp.measured >= cmp.floor;
            if (comparable) errors.push_back(std::fabs(error));
            else
                excluded << "- **" << id << "**: published " << cmp.measured_text << " is below the " << gb(cmp.floor)
                         << " of weights, gradients and optimizer state of its configuration\n";
            char err[32];
            std::snprintf(err, sizeof err, "%+.1f %%", error);
            table << "| " << id << (comparable ? "" : " (not comparable)") << " | " << framework_id(c) << " | " << statistic
                  << " | " << cmp.measured_text << " | " << cmp.predicted_text << " | " << err << " |\n";
            sources << "- **" << id << "**: " << c.at("source").get<std::string>() << "; model `" << in.model->id
                    << "`; setup `" << in.setup.to_json().dump() << "`" << (cmp.note.empty() ? "" : "; " + cmp.note)
                    << (c.contains("statistic_note") ? "; " + c["statistic_note"].get<std::string>() : "")
                    << (c.contains("setup_note") ? "; " + c["setup_note"].get<std::string>() : "")
                    << (in.fw.release.empty() ? std::string()
                                              : "; framework release `" + in.fw.release + "`: " + release_summary(lib, c))
                    << (c.contains("framework_behaviour") ? "; behaviour as measured `" + c["framework_behaviour"].dump() + "`: " +
                                                                c.value("behaviour_note", std::string())
                                                          : std::string())
                    << "\n";
        }
        std::vector<double> sorted = errors;
        std::sort(sorted.begin(), sorted.end());
        const size_t n = sorted.size();
        const double median = n == 0 ? 0 : n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        const double worst = n == 0 ? 0 : sorted.back();
        size_t within5 = 0, within10 = 0, within20 = 0;
        for (double e : errors) {
            within5 += e <= 5;
            within10 += e <= 10;
            within20 += e <= 20;
        }
        std::ostringstream md;
        char summary[256];
        std::snprintf(summary, sizeof summary,
                      "%zu comparable cases (of %zu): median |error| %.1f %%, worst %.1f %%; within 5 %%: %zu, within 10 %%: %zu, within 20 %%: %zu.",
                      n, doc.at("cases").size(), median, worst, within5, within10, within20);
        md << "# Published single-GPU peak memory vs the planner\n\n"
           << "Written by `build/bin/bench_published` (bench/published/bench_published.cpp) from "
           << "bench/published/cases.json with the bundled profiles: each case's framework profile, "
           << "bundled model and full configuration, no per-case constants. A case measured with an earlier release of the framework "
           << "names it (`framework_release`: one of the profile's `releases`, shown as `framework@release`); one measured with an "
           << "older release of a library than the bundled profile describes names that behaviour (its `framework_behaviour`). "
           << "Both are listed below with their sources. A case of kind `line` is a published table whose rows lie on one "
           << "straight line (memory against the largest context that fits): it compares that line's fixed bytes or bytes per "
           << "token with the planner's line at the same contexts. "
           << "Error = (predicted − measured) / measured.\n\n"
           << summary << "\n\n" << table.str();
        if (!excluded.str().empty())
            md << "\n## Left out of the summary\n\n" << excluded.str();
        md << "\n## Sources and configurations\n\n" << sources.str();
        std::ofstream(out_path) << md.str();
        std::cout << summary << "\nwritten to " << out_path << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_published: " << e.what() << "\n";
        return 2;
    }
}
