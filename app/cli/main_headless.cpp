#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::cerr << "wingspan: this build has no window (built with WINGSPAN_BUILD_GUI=OFF); "
                     "`wingspan --help` lists the commands\n";
        return wingspan::cli::kExitBadInput;
    }
    return wingspan::cli::run(args, std::cout, std::cerr, argv[0]);
}
