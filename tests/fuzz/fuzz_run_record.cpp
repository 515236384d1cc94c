// Run records (issue 34): a run folder's plan.json, result.json and events.jsonl, as the
// window's history (RunStore::read_listing, never throws) and `wingspan runs` / `calibrate`
// (RunStore::load, InputError only) read them. The input is written to a real folder each time,
// so the bounded file readers are what is fuzzed, not a copy of them.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz_harness.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/run_record.hpp"

int main() {
    using namespace wingspan;
    namespace fs = std::filesystem;
    const fs::path run = fs::temp_directory_path() / ("wingspan-fuzz-run-" + std::to_string(::getpid())) /
                         "20250101-000000-fuzz";
    fs::create_directories(run);
    const int rc = fuzz::run<InputError>("run_record", WINGSPAN_FUZZ_CORPUS, [&](const std::string& input) {
        // Each file gets the input in turn; the others are well-formed, so each reader is reached.
        const size_t which = input.size() % 3;
        std::ofstream(run / "plan.json", std::ios::binary | std::ios::trunc) << (which == 0 ? input : "{}");
        std::ofstream(run / "result.json", std::ios::binary | std::ios::trunc)
            << (which == 1 ? input : R"({"status":"completed","exit_code":0})");
        std::ofstream(run / "events.jsonl", std::ios::binary | std::ios::trunc)
            << (which == 2 ? input : R"({"v":1,"event":"done","t":1,"reason":"completed"})");
        const RunListing l = RunStore::read_listing(run);
        if (l.result) (void)l.result->run_status();
        const RunRecord r = RunStore::load(run);
        (void)r.summary();
        (void)r.status_text();
    });
    std::error_code ec;
    fs::remove_all(run.parent_path(), ec);
    return rc;
}
