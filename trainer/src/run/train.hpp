#pragma once
// The two entry points of wingspan-train (main() only dispatches).
#include <string>
#include <vector>

namespace wingspan::train {

// `wingspan-train [flags]`: a training run speaking the run protocol on stdout. Returns the
// process exit code (0 completed or interrupted, 2 bad arguments, 1 any other error).
int run_train(const std::vector<std::string>& args, const std::string& argv0);
// `wingspan-train tokenize [--tokenizer FILE]`: stdin text -> one JSON array of ids.
int run_tokenize(const std::vector<std::string>& args);
// `wingspan-train devices`: one JSON object listing the devices it can train on (device.hpp).
int run_devices();

}  // namespace wingspan::train
