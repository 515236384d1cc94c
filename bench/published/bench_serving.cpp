// Predicts serving memory that llama.cpp printed in public threads (serving.json) with
// core/src/serving/llama_cpp_terms.cpp and writes a Markdown report: each printed figure, ours, the
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
#include "wingspan/quant_formats.hpp"
#include "wingspan/vllm_serve.hpp"
#include "bench_args.hpp"

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

struct Tally {
    std::ostringstream rows;
    int figures = 0, within2 = 0, within5 = 0;
    double worst = 0;
    void add(const std::string& id, const std::string& key, double printed, double ours) {
        const double err = ours / printed - 1;
        ++figures;
        within2 += std::abs(err) <= 0.02;
        within5 += std::abs(err) <= 0.05;
        worst = std::max(worst, std::abs(err));
        char line[512];
        std::snprintf(line, sizeof line, "| %s | %s | %.2f | %.2f | %+.1f %% |\n", id.c_str(), key.c_str(), printed, ours, 100 * err);
        rows << line;
    }
    std::string summary(size_t cases) const {
        char s[256];
        std::snprintf(s, sizeof s, "%d figures from %zu cases: within 2 %%: %d, within 5 %%: %d, worst %.1f %%.\n\n", figures, cases,
                      within2, within5, 100 * worst);
        return s;
    }
};

// vLLM start-up logs (serving.json "vllm_cases") against core/src/serving/vllm_serve.cpp.
void vllm_cases(const ProfileLibrary& lib, const vllm::Profile& profile, const json& cases, Tally& t) {
    constexpr double gib = 1024.0 * 1024 * 1024;
    for (const auto& c : cases) {
        const std::string id = c.at("id");
        const Architecture arch = lib.model(c.at("model").get<std::string>()).arch;
        vllm::Options o;
        o.max_model_len = c.at("max_model_len");
        o.gpu_memory_utilization = c.value("gpu_memory_utilization", 0.0);
        o.quantization = parse_quantization(c.value("quant", std::string("none")));
        o.quant_group_size = c.value("group_size", kDefaultQuantGroup);
        const auto total = static_cast<std::uint64_t>(c.value("gpu_total_gib", 0.0) * gib);
        const vllm::Plan p = vllm::plan(arch, profile, o, total);
        for (const auto& [key, printed] : c.at("printed").items()) {
            double ours = 0;
            if (key == "weights_gib") ours = double(p.weights) / gib;
            else if (key == "activation_gib") ours = double(p.activation_peak) / gib;
            else if (key == "kv_gib") ours = double(p.kv_available) / gib;
            else if (key == "gpu_blocks") ours = double(p.num_blocks);
            else if (key == "concurrency") ours = p.max_concurrency;
            else if (key == "kv_tokens_from_printed_kv") {
                const double kv = c.contains("printed_kv_gib") ? c.at("printed_kv_gib").get<double>() : c.at("printed").at("kv_gib").get<double>();
                ours = double(vllm::blocks_for(static_cast<std::int64_t>(kv * gib), p.block_bytes) * p.block_size);
            } else throw std::runtime_error("unknown printed vLLM figure " + key);
            t.add(id, key, printed.get<double>(), ours);
        }
    }
}

// Published pre-quantized checkpoints (serving.json "checkpoint_cases"): the bytes of every tensor
// the checkpoint stores (a safetensors index's metadata.total_size, or the files the Hub lists)
// against quant_formats.hpp's layouts, through vLLM's loader (vllm::weight_bytes, one GPU).
void checkpoint_cases(const ProfileLibrary& lib, const json& cases, Tally& t) {
    for (const auto& c : cases) {
        vllm::Options o;
        o.quantization = parse_quantization(c.at("quant").get<std::string>());
        o.quant_group_size = c.value("group_size", kDefaultQuantGroup);
        const Architecture arch = lib.model(c.at("model").get<std::string>()).arch;
        const double ours = double(vllm::weight_bytes(arch, o));
        for (const auto& [key, printed] : c.at("printed").items()) {
            if (key == "total_bytes") t.add(c.at("id").get<std::string>(), key, printed.get<double>() / 1e9, ours / 1e9);
            else if (key == "weights_gib") t.add(c.at("id").get<std::string>(), key, printed.get<double>(), ours / (1024.0 * 1024 * 1024));
            else throw std::runtime_error("unknown checkpoint figure " + key);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const auto args = bench::parse_bench_args(argc, argv, {WINGSPAN_SERVING_CASES, WINGSPAN_SERVING_RESULT, ""}, false,
                                              "bench_serving [--cases serving.json] [--out serving.md]");
    if (!args) return 2;
    const std::string &cases_path = args->cases, &out_path = args->out;
    try {
        const ProfileLibrary lib = ProfileLibrary::load(ProfileLibrary::default_dir(argv[0]));
        const json all = bench::read_cases(cases_path);
        const json cases = all.at("cases");
        Tally llama, vl, ckpt;
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
                llama.add(c.at("id").get<std::string>(), key, value, ours);
            }
        }
        const json vcases = all.value("vllm_cases", json::array());
        vllm_cases(lib, vllm::load_profile(ProfileLibrary::default_dir(argv[0])), vcases, vl);
        const json ccases = all.value("checkpoint_cases", json::array());
        checkpoint_cases(lib, ccases, ckpt);
        std::ostringstream md;
        md << "# Published llama.cpp serving figures vs the planner\n\n"
           << "Written by `build/bin/bench_serving` (bench/published/bench_serving.cpp) from bench/published/serving.json: "
              "each figure as llama.cpp printed it (weights: `model size` in GiB; KV: `KV self size` in MiB; compute: "
              "`CUDA0 compute buffer size` in MiB; host_compute: `CUDA_Host compute buffer size` in MiB), predicted by core/src/serving/llama_cpp_terms.cpp from the bundled profile and "
              "quantization or the shape the log prints, with the graph of the llama.cpp release that printed it "
              "(core/src/serving/llama_cpp_graph.cpp). Sources (URLs) are in serving.json. Error = (predicted - printed) / "
              "printed.\n\n";
        md << llama.summary(cases.size()) << "| Case | Figure | Printed | Predicted | Error |\n|---|---|---|---|---|\n" << llama.rows.str();
        md << "\n## vLLM start-up logs\n\nPredicted by core/src/serving/vllm_serve.cpp with profiles/serving/vllm.json from the model "
              "profile, the GPU total and the settings the log prints (serving.json \"vllm_cases\"); weights and KV in GiB, "
              "blocks and tokens counted, concurrency in sequences of max_model_len tokens. kv_tokens_from_printed_kv: the "
              "block math alone, from the KV bytes the log printed (rounded to 0.01 GiB there).\n\n"
           << vl.summary(vcases.size()) << "| Case | Figure | Printed | Predicted | Error |\n|---|---|---|---|---|\n" << vl.rows.str();
        md << "\n## Pre-quantized checkpoints (AWQ, GPTQ, fp8)\n\nEvery tensor a published checkpoint stores (serving.json "
              "\"checkpoint_cases\": a safetensors index's total_size in GB = 10^9 bytes, or a vLLM log's weights in GiB) "
              "against core/include/wingspan/quant_formats.hpp's layouts through vLLM's loader (core/src/serving/vllm_serve.cpp "
              "weight_bytes) from the bundled model profile; target within 2 %.\n\n"
           << ckpt.summary(ccases.size()) << "| Case | Figure | Published | Predicted | Error |\n|---|---|---|---|---|\n"
           << ckpt.rows.str();
        std::cout << md.str();
        std::ofstream(out_path) << md.str();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_serving: " << e.what() << "\n";
        return 1;
    }
}
