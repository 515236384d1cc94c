#pragma once
// `wingspan-train --nproc N ...`: starts N ranks of this same binary on this machine (one process
// each, with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT set as torchrun would), relays
// their protocol lines on its own stdout (each already carries its `rank`), forwards SIGTERM and
// SIGINT to every rank, and reports a rank that dies without its own error event.
#include <string>
#include <vector>

namespace wingspan::train {

// True when the command line asks for ranks (--nproc) and this process is not already one.
bool wants_launcher(const std::vector<std::string>& args);
// Returns the job's exit code: 0 when every rank ended with 0, else the first failure's
// (2 for bad arguments, 1 otherwise).
int run_launcher(const std::vector<std::string>& args, const std::string& argv0);

}  // namespace wingspan::train
