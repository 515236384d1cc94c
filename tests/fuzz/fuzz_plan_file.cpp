// Plan files (*.wingspan.json): read as `export --plan` and the window do (read_plan_file:
// a regular file, bounded size, depth and list lengths), then evaluated against the bundled
// profiles and tabled like an export (issue 34: a long list must be refused, not quadratic).
// The same JSON as a run's saved options (RunOptions::from_json: never throws).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fuzz_harness.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/ui/chart.hpp"
#include "wingspan/ui/export.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/ui/run_panel.hpp"

int main() {
    using namespace wingspan;
    namespace fs = std::filesystem;
    const ProfileLibrary lib = ProfileLibrary::load(WINGSPAN_FUZZ_PROFILES);
    const fs::path file = fs::temp_directory_path() / ("wingspan-fuzz-plan-" + std::to_string(::getpid()) + ".json");
    const int rc = fuzz::run<InputError>("plan_file", WINGSPAN_FUZZ_CORPUS, [&](const std::string& input) {
        if (auto j = try_parse_untrusted_json(input); j && j->is_object()) {
            (void)ui::RunOptions::from_json(*j);
            if (auto o = j->find("options"); o != j->end()) (void)ui::RunOptions::from_json(*o);
        }
        std::ofstream(file, std::ios::binary | std::ios::trunc) << input;
        const Plan p = read_plan_file(file.string());
        // What a plan file reads back as, it writes and reads back unchanged: a plan the window
        // saves reopens as the same plan.
        const nlohmann::json written = p.to_json();
        if (Plan::from_json(written).to_json() != written) {
            std::fprintf(stderr, "a plan did not read back as written: %s\n", written.dump().c_str());
            std::abort();
        }
        const Evaluation eval = evaluate_plan(lib, p);
        if (!eval.ok()) return;
        (void)ui::chart_table(ui::machines_chart(eval, ByteUnit::GB)).to_csv();
    });
    std::error_code ec;
    fs::remove(file, ec);
    return rc;
}
