// How fast the planner answers: every bundled machine × 3 methods, and the solver for every
// machine. Target (issue 2): planning well under 1 ms, the solver for all machines under
// 10 ms. The reference, timed in the same run, is parsing one model's config.json.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "wingspan/profiles.hpp"
#include "wingspan/verdict.hpp"

using namespace wingspan;
using Clock = std::chrono::steady_clock;

template <typename F>
double median_us(int reps, F&& f) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto a = Clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main() {
    const ProfileLibrary lib = ProfileLibrary::load(ProfileLibrary::default_dir().empty()
                                                        ? WINGSPAN_BENCH_PROFILES_DIR
                                                        : WINGSPAN_BENCH_PROFILES_DIR);
    const ModelProfile& model = lib.model("llama-3.1-8b");
    std::ifstream in(model.file);
    std::stringstream text;
    text << in.rdbuf();
    const std::string config = text.str();

    volatile std::int64_t sink = 0;
    const double reference = median_us(200, [&] {
        sink = sink + nlohmann::json::parse(config)["config"]["hidden_size"].get<std::int64_t>();
    });
    const double plan_all = median_us(200, [&] {
        for (const auto& m : lib.machines())
            for (Method method : {Method::Full, Method::Lora, Method::Qlora}) {
                TrainingSetup s;
                s.method = method;
                sink = sink + evaluate(model.arch, s, m, lib.framework_for(m)).needed_bytes;
            }
    });
    const double solve_all = median_us(50, [&] {
        for (const auto& m : lib.machines()) {
            TrainingSetup s;
            s.method = Method::Qlora;
            sink = sink + solve(SolveFor::Batch, model.arch, s, m, lib.framework_for(m)).value;
        }
    });
    const double solve_seq = median_us(50, [&] {
        for (const auto& m : lib.machines()) {
            TrainingSetup s;
            s.method = Method::Lora;
            sink = sink + solve(SolveFor::Seq, model.arch, s, m, lib.framework_for(m)).value;
        }
    });
    const size_t n = lib.machines().size();
    std::printf("reference: parse one model profile (config.json)     %8.1f us\n", reference);
    std::printf("plan %2zu machines x 3 methods (%3zu plans)            %8.1f us  (%.1fx reference, target < 1000 us)\n", n,
                3 * n, plan_all, plan_all / reference);
    std::printf("solve largest batch on all %2zu machines                %8.1f us  (%.1fx reference, target < 10000 us)\n", n,
                solve_all, solve_all / reference);
    std::printf("solve largest sequence on all %2zu machines             %8.1f us  (%.1fx reference, target < 10000 us)\n", n,
                solve_seq, solve_seq / reference);
    return 0;
}
