#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace wingspan::cli {

// Exit codes: 0 success, 2 bad input (the message says what and how to fix it), 1 failure.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// True when argv names a command-line subcommand (as opposed to starting the window).
bool is_cli_command(const std::string& first_arg);

// Runs `wingspan <command> args...`; args excludes the program name. `executable` locates
// the bundled profiles.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const std::string& executable = {});

}  // namespace wingspan::cli
