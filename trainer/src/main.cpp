// wingspan-train: the native trainer. Everything lives in wingspan_trainer_lib.
#include <string>
#include <vector>

#include "memory.hpp"
#include "train.hpp"

int main(int argc, char** argv) {
    // Before any tensor exists, so every allocation is counted.
    wingspan::train::mem::install();
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args[0] == "tokenize") {
        args.erase(args.begin());
        return wingspan::train::run_tokenize(args);
    }
    return wingspan::train::run_train(args, argv[0]);
}
