#pragma once
// `wingspan plan --method serve --gguf FILE.gguf [--ctx N] [--kv-type f16|q8_0|q4_0]
//  [--n-gpu-layers N] [--ubatch N] [--parallel N] [--flash-attn on|off] [--machine ID] [--json]`
// and the same with `--model ID --quant q4_k_m|q8_0|…` instead of a file: serving memory as
// llama.cpp allocates it (core/src/serving/llama_cpp_terms.cpp), per machine the GPU/host verdict, the
// most GPU layers and the longest context that fit.
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "wingspan/profiles.hpp"

namespace wingspan::cli {

// True when a `plan` asks for llama.cpp serving: --gguf, a GGUF quantization name, or one of
// the llama.cpp flags.
bool wants_llama_cpp_serve(const std::vector<std::string>& args);

// A serve plan's flags (llama.cpp's and vLLM's commands): `--flag VALUE` or `--flag=VALUE`, the last
// value of each, every --machine, and --json. A flag outside `takes` is an InputError saying it does
// not apply to `plan_kind` (which names what the plan does take).
struct ServeArgs {
    std::map<std::string, std::string> values;
    std::vector<std::string> machines;
    bool json = false;
};
ServeArgs parse_serve_args(const std::vector<std::string>& args, const std::set<std::string>& takes,
                           const std::string& plan_kind);

int run_serve_gguf(const ProfileLibrary& lib, const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace wingspan::cli
