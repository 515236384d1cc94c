// Run events: every line of a trainer's stdout into a RunRecord (never fatal: malformed lines
// are counted), then its summary and status, as `wingspan runs` shows them.
#include <sstream>

#include "fuzz_harness.hpp"
#include "wingspan/run_record.hpp"

namespace {
struct NeverThrown {};
}  // namespace

int main() {
    using namespace wingspan;
    return fuzz::run<NeverThrown>("run_events", WINGSPAN_FUZZ_CORPUS, [](const std::string& input) {
        RunRecord r(16);
        std::istringstream in(input);
        std::string line;
        while (std::getline(in, line)) r.ingest_line(line);
        r.finish(0, 0);
        (void)r.summary();
        (void)r.status_text();
    });
}
