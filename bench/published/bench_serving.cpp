// Predicts serving memory that llama.cpp printed in public threads (serving.json) with
// core/src/llama_cpp_terms.cpp and writes a Markdown report: each printed figure, ours, the
// error, and how many are within 5 %.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "wingspan/llama_cpp_terms.hpp"
#include "wingspan/profiles.hpp"

using namespace wingspan;
using nlohmann::json;
namespace lc = wingspan::llama_cpp;

namespace {

lc::ServeModel model_of(const ProfileLibrary& lib, const json& c) {
    if (c.contains("model")) return lc::model_from_architecture(lib.model(c.at("model").get<std::string>()).arch, c.at("quant"));
    const json& s = c.at("shape");
    lc::ServeModel m;
    m.architecture = "llama";
    m.layers = s.at("layers");
    m.embedding = s.at("embedding");
    m.heads = s.at("heads");
    m.kv_heads = s.at("kv_heads");
    m.key_length = m.value_length = s.at("key_length");
    m.feed_forward = s.at("feed_forward");
    m.vocab = s.at("vocab");
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    std::string cases_path = WINGSPAN_SERVING_CASES, out_path = WINGSPAN_SERVING_RESULT;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--cases") cases_path = argv[i + 1];
        else if (a == "--out") out_path = argv[i + 1];
        else {
            std::cerr << "usage: bench_serving [--cases serving.json] [--out serving.md]\n";
            return 2;
        }
    }
    try {
        const ProfileLibrary lib = ProfileLibrary::load(ProfileLibrary::default_dir(argv[0]));
        std::ifstream in(cases_path);
        const json cases = json::parse(in).at("cases");
        std::ostringstream rows;
        int figures = 0, within5 = 0;
        double worst = 0;
        for (const auto& c : cases) {
            const lc::ServeModel m = model_of(lib, c);
            lc::ServeOptions o;
            o.n_ctx = c.at("n_ctx");
            o.n_ubatch = c.value("n_ubatch", 512);
            o.n_parallel = c.value("n_parallel", 1);
            o.flash_attn = c.value("flash_attn", false);
            // The llama.cpp release that printed the log builds its graph one way or the other
            // (ServeOptions::graph): "legacy-2024" for logs that say llama_new_context_with_model.
            const std::string era = c.value("llama_cpp_graph", std::string("current"));
            if (era != "current" && era != "legacy-2024") throw std::runtime_error("llama_cpp_graph: current or legacy-2024, got " + era);
            o.graph = era == "current" ? lc::GraphEra::Current : lc::GraphEra::Legacy2024;
            const lc::ServePlan p = lc::plan(m, o);   // every layer and the output offloaded (-ngl 999)
            for (const auto& [key, printed] : c.at("printed").items()) {
                const double value = printed.get<double>();
                const double mib = 1024.0 * 1024;
                double ours = 0;
                if (key == "weights_gib") ours = double(m.weight_bytes()) / (mib * 1024);
                else if (key == "kv_mib") ours = double(p.kv.total()) / mib;
                else if (key == "compute_mib") ours = double(p.compute_gpu) / mib;
                else if (key == "host_compute_mib") ours = double(p.compute_host) / mib;
                else throw std::runtime_error("unknown printed figure " + key);
                const double err = ours / value - 1;
                ++figures;
                within5 += std::abs(err) <= 0.05;
                worst = std::max(worst, std::abs(err));
                char line[512];
                std::snprintf(line, sizeof line, "| %s | %s | %.2f | %.2f | %+.1f %% |\n", c.at("id").get<std::string>().c_str(),
                              key.c_str(), value, ours, 100 * err);
                rows << line;
            }
        }
        std::ostringstream md;
        md << "# Published llama.cpp serving figures vs the planner\n\n"
           << "Written by `build/bin/bench_serving` (bench/published/bench_serving.cpp) from bench/published/serving.json: "
              "each figure as llama.cpp printed it (weights: `model size` in GiB; KV: `KV self size` in MiB; compute: "
              "`CUDA0 compute buffer size` in MiB; host_compute: `CUDA_Host compute buffer size` in MiB), predicted by core/src/llama_cpp_terms.cpp from the bundled profile and "
              "quantization or the shape the log prints, with the graph of the llama.cpp release that printed it "
              "(core/src/llama_cpp_graph.cpp). Sources (URLs) are in serving.json. Error = (predicted - printed) / "
              "printed.\n\n";
        char summary[256];
        std::snprintf(summary, sizeof summary, "%d figures from %zu cases: within 5 %%: %d, worst %.1f %%.\n\n", figures,
                      cases.size(), within5, 100 * worst);
        md << summary << "| Case | Figure | Printed | Predicted | Error |\n|---|---|---|---|---|\n" << rows.str();
        std::cout << md.str();
        std::ofstream(out_path) << md.str();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_serving: " << e.what() << "\n";
        return 1;
    }
}
