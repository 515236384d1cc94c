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
            const FrameworkProfile fw = as_measured(lib.framework(framework_id(c)), c);
            const ModelProfile& model = lib.model(c.at("model").get<std::string>());
            const TrainingSetup setup = TrainingSetup::from_json(c.at("setup"));
            setup.validate(model.arch);
            const MemoryEstimate est = estimate_memory(model.arch, setup, fw);
            if (!explain_id.empty()) {
                // One case's terms and phases, to read a miss against the framework's source.
                if (c.at("id").get<std::string>() != explain_id) continue;
                for (const auto& t : est.terms)
                    std::cout << component_name(t.component) << "  " << gb(double(t.bytes)) << "  " << t.formula << "\n";
                for (const auto& p : est.phases) {
                    std::cout << "phase " << p.name << ": " << gb(double(p.total())) << " (";
                    for (const auto& [comp, b] : p.bytes) std::cout << " " << component_name(comp) << " " << gb(double(b));
                    std::cout << " )\n";
                }
                std::cout << "peak " << est.peak_phase << " allocated " << gb(double(est.peak_allocated_bytes))
                          << ", device " << gb(double(est.total_bytes)) << "\n";
                return 0;
            }
            const std::string statistic = c.at("statistic").get<std::string>();
            const double predicted = double(predicted_for(est, fw, statistic));
            const double measured = c.at("measured_bytes").get<double>();
            const double error = 100.0 * (predicted - measured) / measured;
            // A published figure below the weights, gradients and AdamW state its own configuration
            // needs was not measured under that configuration (another optimizer, offload, a
            // different statistic): listed, left out of the summary.
            const double floor = static_bytes(est, statistic);
            const bool comparable = measured >= floor;
            if (comparable) errors.push_back(std::fabs(error));
            else
                excluded << "- **" << c.at("id").get<std::string>() << "**: published " << c.value("measured_text", gb(measured))
                         << " is below the " << gb(floor) << " of weights, gradients and optimizer state of its configuration\n";
            char err[32];
            std::snprintf(err, sizeof err, "%+.1f %%", error);
            table << "| " << c.at("id").get<std::string>() << (comparable ? "" : " (not comparable)") << " | " << framework_id(c)
                  << " | " << statistic << " | " << c.value("measured_text", gb(measured)) << " | " << gb(predicted)
                  << " | " << err << " |\n";
            sources << "- **" << c.at("id").get<std::string>() << "**: " << c.at("source").get<std::string>()
                    << "; model `" << model.id << "`; setup `" << setup.to_json().dump() << "`"
                    << (c.contains("statistic_note") ? "; " + c["statistic_note"].get<std::string>() : "")
                    << (c.contains("setup_note") ? "; " + c["setup_note"].get<std::string>() : "")
                    << (fw.release.empty() ? std::string()
                                           : "; framework release `" + fw.release + "`: " + release_summary(lib, c))
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
           << "Both are listed below with their sources. "
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
