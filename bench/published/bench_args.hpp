#pragma once
// The command line the published-figure benches share: --cases FILE (the measured cases), --out FILE
// (the Markdown report) and, where a bench explains one case's terms, --explain CASE-ID; and the
// cases file read through core's bounded JSON reader.
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "wingspan/json_input.hpp"

namespace wingspan::bench {

struct BenchArgs {
    std::string cases, out, explain;
};

// `defaults` filled from argv; nullopt (the usage printed) for a flag the bench does not take.
inline std::optional<BenchArgs> parse_bench_args(int argc, char** argv, BenchArgs defaults, bool takes_explain,
                                                 const std::string& usage) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--cases") defaults.cases = argv[i + 1];
        else if (a == "--out") defaults.out = argv[i + 1];
        else if (a == "--explain" && takes_explain) defaults.explain = argv[i + 1];
        else {
            std::cerr << "usage: " << usage << "\n";
            return std::nullopt;
        }
    }
    return defaults;
}

// The cases file (up to 64 MiB); throws InputError naming the file.
inline nlohmann::json read_cases(const std::string& path) { return read_untrusted_json_file(path, 64u << 20); }

}  // namespace wingspan::bench
