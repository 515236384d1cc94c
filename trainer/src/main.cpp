// wingspan-train: the native trainer. Everything lives in wingspan_trainer_lib.
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gguf/export_gguf.hpp"
#include "run/generate.hpp"
#include "distributed/launcher.hpp"
#include "memory/memory.hpp"
#include "run/merge.hpp"
#include "support/stop_signals.hpp"
#include "run/train.hpp"
#include "wingspan/trainer_invocation.hpp"

namespace {
// Runs before any library's constructor (ELF .preinit_array, executables only), so every thread
// libtorch, OpenMP or OpenBLAS starts inherits the blocked stop signals (stop_signals.hpp).
void block_stop_signals_first(int, char**, char**) { wingspan::train::stops::block_stop_signals(); }
__attribute__((section(".preinit_array"), used)) void (*const g_block_stop_signals)(int, char**, char**) =
    &block_stop_signals_first;
}  // namespace

int main(int argc, char** argv) {
    // libgomp reads its wait policy before main(): set wingspan's (trainer_invocation.hpp) once
    // and start again.
    if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv(wingspan::kOmpSpinVariable) && !std::getenv("WINGSPAN_NO_REEXEC")) {
        setenv(wingspan::kOmpSpinVariable, wingspan::kOmpSpinCount, 1);
        setenv("WINGSPAN_NO_REEXEC", "1", 1);
        execv("/proc/self/exe", argv);   // returns only on failure: carry on as we are
    }
    // glibc returns freed heap tops to the kernel and maps large blocks afresh, so every step
    // pays page faults for the same activation sizes again. Keep freed memory for reuse, as a
    // caching allocator would: no block is mapped on its own (a mapped block is unmapped on free,
    // and the mmap threshold tops out at 32 MiB, below a step's logits), and the heap's top is
    // kept. Measured on a 135M-class LoRA step (seq 256 × batch 4, 2 threads, this EPYC): about
    // 100,000 page faults a step before, none after the first, the step 5-7 % faster; the process
    // holds its largest heap until it exits (peak RSS +5 %, in the libtorch-cpu profile's
    // allocator_slack). MALLOC_* variables still win.
    if (!std::getenv("MALLOC_MMAP_MAX_")) mallopt(M_MMAP_MAX, 0);
    if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 1 << 30);
    // Before any tensor exists, so every allocation is counted.
    wingspan::train::mem::install();
    std::vector<std::string> args(argv + 1, argv + argc);
    // Training and the rank launcher stop gracefully (they start their own listener); every other
    // command ends at the first stop signal.
    const bool trains = args.empty() || (args[0] != "devices" && args[0] != "tokenize" && args[0] != "merge" &&
                                         args[0] != "generate" &&
                                         args[0] != "export");
    if (!trains) wingspan::train::stops::start_listener(false);
    if (!args.empty() && args[0] == "devices") return wingspan::train::run_devices();
    if (!args.empty() && args[0] == "tokenize") {
        args.erase(args.begin());
        return wingspan::train::run_tokenize(args);
    }
    if (!args.empty() && args[0] == "merge") return wingspan::train::run_merge({args.begin() + 1, args.end()});
    if (!args.empty() && args[0] == "generate") return wingspan::train::run_generate({args.begin() + 1, args.end()});
    if (!args.empty() && args[0] == "export") return wingspan::train::run_export({args.begin() + 1, args.end()});
    if (wingspan::train::wants_launcher(args)) return wingspan::train::run_launcher(args, argv[0]);
    return wingspan::train::run_train(args, argv[0]);
}
