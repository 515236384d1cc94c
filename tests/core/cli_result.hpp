#pragma once
// Runs the `wingspan` command line in-process and keeps what it printed: shared by the suites
// that drive the CLI (test_cli, test_recipes).
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace wingspan::test {

struct CliResult {
    int code;
    std::string out, err;
};

inline CliResult run_cli(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int code = wingspan::cli::run(args, out, err);
    return {code, out.str(), err.str()};
}

}  // namespace wingspan::test
