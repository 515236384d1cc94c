// The golden check's driver without Qt: runs `wingspan <args>` in-process (app/cli) for each line
// of stdin (arguments separated by spaces) and prints what dump.py prints for the real binary:
// the arguments, the exit status, then stdout and stderr, cases separated by "\n====\n".
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

int main() {
    bool first = true;
    for (std::string line; std::getline(std::cin, line);) {
        std::vector<std::string> args;
        std::istringstream words(line);
        for (std::string w; words >> w;) args.push_back(w);
        std::ostringstream out, err;
        const int code = wingspan::cli::run(args, out, err);
        if (!first) std::cout << "\n====\n";
        first = false;
        std::cout << line << "\n" << code << "\n" << out.str() << err.str();
    }
}
