// The matrix products one training step makes, shape by shape (issue 17): GFLOP/s of
// wingspan-train's bf16 product (kernels::mm_out on the bf16 path in use: bf16 operands widened
// for fp32 sgemm, or oneDNN's bf16 gemm on bf16 hardware; one rounding),
// of oneDNN's plain fp32 sgemm on fp32 copies of the same operands (the ceiling the bf16 path
// can reach on a CPU without bf16 hardware, and wingspan-train's fp32 product), of libtorch's fp32
// at::mm / at::bmm on the same copies (the system BLAS: Debian's OpenBLAS; what fp32 attention
// uses), and of libtorch's own bf16 at::mm, measured interleaved in the same run (best of the
// repeats, so load on shared cores hits all four).
//
// Shapes: a SmolLM2-135M-shaped model (hidden 576, 9/3 heads of 64, MLP 1536, vocabulary
// 49,152, tied head) at --seq x --batch tokens with LoRA rank --rank on all seven linears;
// "xN" is how many times one step (forward + backward, 30 layers) makes that product, or that
// batched call ("attn ... x12": one call of 12 per-head products through ops::matmul).
// Set WINGSPAN_GEMM_LOG=1 on wingspan-train to list the products a real step makes.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/device_ops.hpp"
#include "kernels/kernels_gemm.hpp"
#include "support/cpu_binding.hpp"
#include "wingspan/trainer_invocation.hpp"

using namespace wingspan::train;
using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
    std::string name;
    std::int64_t m, k, n;
    bool ta, tb;         // operand stored transposed (a weight's .t(), a gradient's x^T)
    std::int64_t count;  // products (batched calls, for batch > 1) of this shape per step
    std::int64_t batch = 1;   // > 1: one batched call of this many products (attention's heads)
};

std::vector<Shape> model_shapes(std::int64_t seq, std::int64_t batch, std::int64_t rank, bool full) {
    const std::int64_t T = seq * batch, h = 576, kv = 192, i = 1536, V = 49152, L = 30, D = 64, Hkv = 3, g = 3;
    std::vector<Shape> s = {
        // forward: x [T, in] @ W^T (W [out, in])
        {"fwd q,o", T, h, h, false, true, 2 * L},
        {"fwd k,v", T, h, kv, false, true, 2 * L},
        {"fwd gate,up", T, h, i, false, true, 2 * L},
        {"fwd down", T, i, h, false, true, L},
        {"fwd head", T, h, V, false, true, 1},
        // backward, input gradients: g [T, out] @ W
        {"dx q,o", T, h, h, false, false, 2 * L},
        {"dx k,v", T, kv, h, false, false, 2 * L},
        {"dx gate,up", T, i, h, false, false, 2 * L},
        {"dx down", T, h, i, false, false, L},
        {"dx head", T, V, h, false, false, 1},
        // attention (eager): one batched call per layer of batch x KV heads products,
        // [g*T, D] @ [D, T] and [g*T, T] @ [T, D], and their backward
        {"attn scores", g * seq, D, seq, false, true, L, batch * Hkv},
        {"attn probs@v", g * seq, seq, D, false, false, L, batch * Hkv},
        {"attn d probs", g * seq, D, seq, false, false, L, batch * Hkv},
        {"attn dv", seq, g * seq, D, true, false, L, batch * Hkv},
        {"attn dq", g * seq, seq, D, false, false, L, batch * Hkv},
        {"attn dk", D, g * seq, seq, true, false, L, batch * Hkv},
    };
    if (full) {
        // weight gradients: g^T [out, T] @ x [T, in]
        s.push_back({"dW q,o", h, T, h, true, false, 2 * L});
        s.push_back({"dW k,v", kv, T, h, true, false, 2 * L});
        s.push_back({"dW gate,up", i, T, h, true, false, 2 * L});
        s.push_back({"dW down", h, T, i, true, false, L});
        s.push_back({"dW head", V, T, h, true, false, 1});
    } else {
        // LoRA on all seven linears (in -> out: q,o,k,v,gate,up from 576, down from 1536): x @ A^T,
        // (x A^T) @ B^T, and their backward (B's gradient g^T @ h, A's dh^T @ x)
        struct Dims { std::int64_t in, out, n; };
        const Dims dims[] = {{h, h, 2 * L}, {h, kv, 2 * L}, {h, i, 2 * L}, {i, h, L}};
        for (const Dims& d : dims) {
            const std::string io = " " + std::to_string(d.in) + "->" + std::to_string(d.out);
            s.push_back({"lora x@A^T" + io, T, d.in, rank, false, true, d.n});
            s.push_back({"lora h@B^T" + io, T, rank, d.out, false, true, d.n});
            s.push_back({"lora g@B" + io, T, d.out, rank, false, false, d.n});
            s.push_back({"lora dB g^T@h" + io, d.out, T, rank, true, false, d.n});
            s.push_back({"lora dh@A" + io, T, rank, d.in, false, false, d.n});
            s.push_back({"lora dA dh^T@x" + io, rank, T, d.in, true, false, d.n});
        }
    }
    return s;
}

// [rows, cols] (or [batch, rows, cols]), stored as given or as the transpose of a contiguous tensor.
at::Tensor operand(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool transposed, at::ScalarType dt) {
    if (batch > 1)
        return transposed ? at::randn({batch, cols, rows}).to(dt).transpose(1, 2) : at::randn({batch, rows, cols}).to(dt);
    return transposed ? at::randn({cols, rows}).to(dt).t() : at::randn({rows, cols}).to(dt);
}

// The same values in fp32, stored the same way.
at::Tensor fp32_copy(const at::Tensor& t, bool transposed) {
    return transposed ? t.transpose(-1, -2).to(at::kFloat).transpose(-1, -2) : t.to(at::kFloat);
}

double seconds(const std::function<void()>& f) {
    const auto t0 = Clock::now();
    f();
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

int usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--seq 256] [--batch 4] [--rank 8] [--method lora|full] [--threads 2]\n"
                 "          [--budget-s 0.4] [--only SUBSTRING] [--no-libtorch]\n"
                 "Prints GFLOP/s per product shape: wingspan bf16, oneDNN sgemm fp32 (ceiling), libtorch fp32\n"
                 "(the system BLAS), libtorch bf16.\n",
                 argv0);
    return 2;
}

const char* env_or_unset(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "(unset)";
}

}  // namespace

int main(int argc, char** argv) {
    // Measure under wingspan-train's OpenMP wait (trainer_invocation.hpp; main.cpp re-executes
    // itself so libgomp reads it).
    if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv(wingspan::kOmpSpinVariable)) {
        setenv(wingspan::kOmpSpinVariable, wingspan::kOmpSpinCount, 1);
        execv("/proc/self/exe", argv);
    }
    std::int64_t seq = 256, batch = 4, rank = 8;
    int threads = 2;
    double budget = 0.4;
    bool full = false, with_libtorch = true;
    std::string only;
    for (int a = 1; a < argc; ++a) {
        const std::string f = argv[a];
        auto value = [&]() -> const char* {
            if (a + 1 >= argc) std::exit(usage(argv[0]));
            return argv[++a];
        };
        if (f == "--seq") seq = std::atoll(value());
        else if (f == "--batch") batch = std::atoll(value());
        else if (f == "--rank") rank = std::atoll(value());
        else if (f == "--threads") threads = std::atoi(value());
        else if (f == "--budget-s") budget = std::atof(value());
        else if (f == "--only") only = value();
        else if (f == "--method") {
            const std::string m = value();
            if (m != "lora" && m != "full") return usage(argv[0]);
            full = m == "full";
        } else if (f == "--no-libtorch") with_libtorch = false;
        else return usage(argv[0]);
    }
    if (seq <= 0 || batch <= 0 || rank <= 0 || threads <= 0) return usage(argv[0]);
    if (!kernels::fast_gemm_available()) {
        std::fprintf(stderr, "oneDNN's sgemm is not in this libtorch: nothing to measure\n");
        return 1;
    }
    at::set_num_threads(threads);
    // As the trainer does (train.cpp): without it both pool threads often share one core and a
    // shape's rate halves from one run to the next.
    (void)cpu::bind_compute_threads(threads);
    at::manual_seed(1);
    if (const std::string why = kernels::bf16_path_error(); !why.empty()) {
        std::fprintf(stderr, "%s\n", why.c_str());
        return 2;
    }
    std::printf("%sOMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s, threads %d, seq %lld x batch %lld, %s%s; bf16 instructions: %s, bf16 path: %s "
                "(WINGSPAN_CPU_BF16=hardware|emulated picks one)\n",
                at::get_parallel_info().c_str(), env_or_unset("OMP_WAIT_POLICY"), env_or_unset(wingspan::kOmpSpinVariable), threads, static_cast<long long>(seq),
                static_cast<long long>(batch), full ? "full" : "lora rank ", full ? "" : std::to_string(rank).c_str(),
                kernels::cpu_bf16_isa(), kernels::to_string(kernels::bf16_path()));
    std::printf("CPU binding: %s\n", cpu::binding_summary().c_str());
    std::printf("%-26s %6s %6s %6s %2s %5s | %9s %9s %9s %9s | %7s %7s | %s\n", "product", "M", "K", "N", "op", "xN",
                "wingspan", "sgemm", "blas fp32", "torch", "w/sgemm", "w/torch", "GFLOP/s, best of repeats");
    double total_w = 0, total_s = 0, total_t = 0, total_b = 0, flops_all = 0;
    for (const Shape& s : model_shapes(seq, batch, rank, full)) {
        if (!only.empty() && s.name.find(only) == std::string::npos) continue;
        const at::Tensor a = operand(s.batch, s.m, s.k, s.ta, at::kBFloat16);
        const at::Tensor b = operand(s.batch, s.k, s.n, s.tb, at::kBFloat16);
        const at::Tensor af = fp32_copy(a, s.ta), bf = fp32_copy(b, s.tb);
        at::Tensor out = at::empty({s.m, s.n}, at::kBFloat16), outf = at::empty({s.batch, s.m, s.n});
        const double flops = 2.0 * s.batch * s.m * s.k * s.n;
        // A batched call goes through ops::matmul, as the model's attention does.
        const std::function<void()> run_t = [&] { (void)(s.batch > 1 ? at::bmm(a, b) : at::mm(a, b)); };
        const std::function<void()> run_b = [&] { (void)(s.batch > 1 ? at::bmm(af, bf) : at::mm(af, bf)); };
        const std::function<void()> run_s = [&] {
            for (std::int64_t i = 0; i < s.batch; ++i) {
                at::Tensor o = outf[i];
                kernels::mm_out(o, s.batch > 1 ? af[i] : af, s.batch > 1 ? bf[i] : bf);
            }
        };
        const std::function<void()> run_w = s.batch > 1 ? std::function<void()>([&] { (void)ops::matmul(a, b); })
                                                        : std::function<void()>([&] { kernels::mm_out(out, a, b); });
        double bw = 1e30, bs = 1e30, bt = 1e30, bb = 1e30;
        run_w(), run_s();
        if (with_libtorch) run_b();
        // oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA) has no bf16 matmul for libtorch 1.13: column left out.
        bool torch_bf16 = with_libtorch;
        try {
            if (torch_bf16) run_t();
        } catch (const std::exception&) {
            torch_bf16 = false;
        }
        double spent = 0;
        for (int rep = 0; rep < 3 || (spent < budget && rep < 200); ++rep) {
            const double w = seconds(run_w), f = seconds(run_s), t = torch_bf16 ? seconds(run_t) : 0,
                         o = with_libtorch ? seconds(run_b) : 0;
            bw = std::min(bw, w), bs = std::min(bs, f);
            if (torch_bf16) bt = std::min(bt, t);
            if (with_libtorch) bb = std::min(bb, o);
            spent += w + f + t + o;
        }
        const double gw = flops / bw / 1e9, gs = flops / bs / 1e9, gt = torch_bf16 ? flops / bt / 1e9 : 0,
                     gb = with_libtorch ? flops / bb / 1e9 : 0;
        const char op[3] = {s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', 0};
        const std::string name = s.batch > 1 ? s.name + " x" + std::to_string(s.batch) : s.name;
        std::printf("%-26s %6lld %6lld %6lld %2s %5lld | %9.1f %9.1f %9.1f %9.1f | %7.2f %7.2f |\n", name.c_str(),
                    static_cast<long long>(s.m), static_cast<long long>(s.k), static_cast<long long>(s.n), op,
                    static_cast<long long>(s.count), gw, gs, gb, gt, gw / gs, torch_bf16 ? gw / gt : 0.0);
        std::fflush(stdout);
        total_w += s.count * bw, total_s += s.count * bs, total_t += s.count * bt, total_b += s.count * bb;
        flops_all += s.count * flops;
    }
    std::printf("one step's products: wingspan %.2f s (%.1f GFLOP/s), sgemm fp32 %.2f s (%.1f), libtorch fp32 %s, "
                "libtorch bf16 %s; wingspan / sgemm time x%.2f\n",
                total_w, flops_all / total_w / 1e9, total_s, flops_all / total_s / 1e9,
                with_libtorch ? (std::to_string(total_b).substr(0, 5) + " s").c_str() : "not run",
                with_libtorch ? (std::to_string(total_t).substr(0, 5) + " s").c_str() : "not run", total_w / total_s);
    return 0;
}
