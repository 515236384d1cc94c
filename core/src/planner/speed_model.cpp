#include "wingspan/speed_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "wingspan/memory_model.hpp"
#include "wingspan/quant_formats.hpp"
#include "wingspan/model_attention.hpp"

namespace wingspan {

namespace {

// A GPU without a measured matmul rate reaches this fraction of its datasheet's 16-bit peak: the
// median of measured/datasheet over the bundled GPUs that have one (A100 SXM 0.85, A100 40GB 0.79,
// A100 PCIe 0.81, H100 and H200 0.80, T4 0.64, RTX 4090 1.01, RTX 3090 1.08; profiles/machines).
constexpr double kUnmeasuredMatmulFraction = 0.80;

// The dense matmul rate one precision's products run at. On a GPU, 16-bit products count against
// the measured large-matmul rate (tflops_matmul_measured) when the profile has one: datacenter
// cards never reach their datasheet peak, GeForce cards boost past it.
double peak_tflops(const MachineProfile& m, Precision p) {
    double peak = 0;
    switch (p) {
        case Precision::Fp32: peak = m.tflops_fp32; break;
        case Precision::Fp16Mixed: peak = m.tflops_fp16; break;
        case Precision::Bf16Mixed:
        case Precision::Bf16: peak = m.tflops_bf16 > 0 ? m.tflops_bf16 : m.tflops_fp16; break;
    }
    if (peak <= 0) peak = std::max({m.tflops_fp32, m.tflops_fp16, m.tflops_bf16});
    if (m.kind == MachineKind::Gpu && p != Precision::Fp32)
        peak = m.tflops_matmul_measured > 0 ? m.tflops_matmul_measured : peak * kUnmeasuredMatmulFraction;
    return peak;
}

// x / (x + half): how far a GEMM dimension fills the machine (1 when x ≫ half).
double fill(double x, double half) { return half > 0 ? x / (x + half) : 1.0; }

struct Shape {
    double linear = 0;     // parameters of the layers' linear maps a token passes (MoE: active experts)
    double head = 0;       // vocab × hidden: a matmul even when tied
    double elementwise = 0;// elements one token moves through per layer in norms, rotary, SwiGLU, residuals
};

Shape shape_of(const Architecture& a) {
    Shape s;
    const double embedding = double(a.vocab) * double(a.hidden) +
                             (a.learned_positions ? double(a.max_positions) * double(a.hidden) : 0.0);
    s.head = double(a.vocab) * double(a.hidden);
    const double head_params = a.tied_embeddings ? 0.0 : s.head;
    s.linear = std::max(0.0, double(a.active_parameter_count()) - embedding - head_params);
    const double inter = a.is_moe() ? double(a.expert_intermediate * a.experts_per_token +
                                             a.shared_expert_intermediate)
                                    : double(a.intermediate);
    // Forward, per token and layer: two norms (read h, write h, plus the residual add: 3h each),
    // rotary on q and k, the gate's activation and product (read 2i, write i), two residual adds.
    s.elementwise = 8.0 * double(a.hidden) + 2.0 * double(a.q_dim() + a.kv_dim()) + 3.0 * inter;
    return s;
}

// Bytes per stored frozen weight read by a GEMM (quantized weights are dequantized first).
double weight_bytes(Precision p) { return double(dtype_bytes(p)); }

}  // namespace

SpeedFactors speed_factors(const MachineProfile& m, const FrameworkProfile& f) {
    SpeedFactors s;
    // Fitted by bench_throughput to the non-held-back cases of throughput.json (bench/results/
    // throughput.md), rounded; where the cases do not constrain a factor it is a prior, said so.
    switch (m.kind) {
        case MachineKind::Gpu:
            // CUDA GPUs: matmul rate, shape fill and attention fitted to the training cases (llm-foundry
            // MPT pretraining on A100 40/80 GB and H100, nanoGPT on the RTX 4090 and A100, MLX's CUDA
            // LoRA on an A100) and llama.cpp's prompt cases (the rows at half: its 512-row batches);
            // bandwidth and eager-op costs to the training steps' memory-bound parts and to decoding
            // in eager PyTorch (L4, A100); the serving engines' decode has its own (serve_factors).
            // The matmul efficiency is a fraction of the measured matmul rate (tflops_matmul_measured),
            // not of the datasheet peak.
            s.matmul_efficiency = 0.95;
            s.rows_half = 304;
            s.width_half = 209;
            s.attention_efficiency = 0.45;
            s.bandwidth_efficiency = 0.72;
            s.launch_s = 1.7e-6;
            s.eager_op_s = 24e-6;
            s.source = "bench_throughput fit (gpu: training, prefill and decode cases)";
            break;
        case MachineKind::Unified:
            // Apple GPUs through MLX / Metal (and llama.cpp's Metal backend): fitted to prefill and
            // decode on the M1 Ultra, M2 Ultra, M3 Ultra and M4 Pro; no Apple training case with its
            // setup was found (the one logged, mlx-examples PR #1078, is excluded: see throughput.json).
            s.matmul_efficiency = 0.80;
            s.rows_half = 32;
            s.width_half = 609;
            s.bandwidth_efficiency = 0.90;
            s.launch_s = 36e-6;
            s.eager_op_s = 40e-6;
            s.source = "bench_throughput fit (unified: prefill and decode cases)";
            break;
        case MachineKind::Cpu:
            // wingspan-train's own kernels (oneDNN sgemm / bf16 gemm): fitted to its measured
            // steps on this machine with every build stopped (2026-12-06, peak: the sgemm rate of a
            // 512×1536×1536 product, bandwidth: a 256 MiB copy, both measured in the same rounds;
            // bench/results/throughput-cpu.md), SmolLM2-360M held back. The fit puts no penalty on
            // narrow products (width at half 1): the tiny built-in model's matrices stay in cache
            // and run faster than that product, which one efficiency cannot follow. Element-wise
            // ops run at about a quarter of the copy bandwidth: eager libtorch makes one pass per
            // op, each through a fresh buffer; the fused optimizer step streams at the full rate
            // (training_step).
            s.matmul_efficiency = 0.773;
            s.rows_half = 1;
            s.width_half = 2;
            s.attention_efficiency = 0.707;
            s.bandwidth_efficiency = 0.154;
            s.launch_s = 9.1e-6;
            s.eager_op_s = 40e-6;
            s.source = "bench_throughput fit (cpu: wingspan-train runs)";
            break;
    }
    // Unsloth's own published comparison (unslothai/unsloth README, "Detailed Benchmarking
    // Tables" / unsloth.ai/docs/basics/unsloth-benchmarks: Llama 3.1 8B and 3.3 70B QLoRA on an
    // 80 GB card, Alpaca, batch 2, rank 32, all linear layers: "2x" the speed of Hugging Face +
    // Flash Attention 2): its fused Triton kernels and manual backward, applied as one factor
    // to the whole step — no Unsloth training run is among the measured cases.
    if (f.id == "unsloth") s.framework_speedup = 2.0;
    // This machine's calibration (`wingspan calibrate`: measured ÷ predicted tokens/s of its runs).
    if (f.speed_scale > 0) s.framework_speedup *= f.speed_scale;
    // Serving is assumed to run in a serving engine (vLLM, llama.cpp, MLX): a few fused kernels
    // per layer. Decoding op by op in eager PyTorch (transformers' generate) is the bench's
    // eager_generate cases.
    s.eager_decode = false;
    return s;
}

StepTime training_step(const Architecture& arch, const TrainingSetup& setup, const MachineProfile& m,
                       const FrameworkProfile& f, const SpeedFactors& k) {
    StepTime t;
    const Shape sh = shape_of(arch);
    const ParameterCounts pc = count_parameters(arch, setup);
    const double T = double(std::max<std::int64_t>(1, setup.micro_batch)) * double(std::max<std::int64_t>(1, setup.seq_len));
    t.tokens = T;
    const bool full = setup.method == Method::Full;
    const bool ckpt = setup.grad_checkpointing;
    const double bw = std::max(1e-3, m.bandwidth_gb_s) * 1e9 * k.bandwidth_efficiency;
    const double act = double(compute_dtype_bytes(setup.precision));

    // Passes over the layers: forward, the input-gradient pass of backward (every layer, frozen
    // or not), the weight-gradient pass (trained weights only), the recompute under checkpointing.
    const double fwd_passes = 1.0 + (ckpt ? 1.0 : 0.0);
    const double input_grad = 1.0, weight_grad = full ? 1.0 : 0.0;
    const double layer_passes = fwd_passes + input_grad + weight_grad;
    // The head runs once forward and is not recomputed.
    t.matmul_flops = 2.0 * T * (sh.linear * layer_passes + sh.head * (1.0 + input_grad + weight_grad));
    t.peak_tflops = peak_tflops(m, setup.precision);
    t.efficiency = k.matmul_efficiency * fill(T, k.rows_half) * fill(double(arch.hidden), k.width_half);
    const bool quantized = setup.effective_quantization() != Quantization::None;
    double compute_s = t.matmul_flops / (t.peak_tflops * 1e12 * std::max(1e-6, t.efficiency));
    if (quantized && f.qlora_upcast_non_quantized && m.tflops_fp32 > 0 && t.peak_tflops > m.tflops_fp32) {
        // peft's prepare_model_for_kbit_training leaves the head in fp32: its products run at
        // the fp32 rate (PyTorch's default keeps TF32 off for matmuls).
        const double head_flops = 2.0 * T * sh.head * (1.0 + input_grad);
        compute_s += head_flops / (std::max(1e-6, t.efficiency) * 1e12) * (1.0 / m.tflops_fp32 - 1.0 / t.peak_tflops);
    }
    const double weights_read = (sh.linear * (quantized ? 2.0 : weight_bytes(setup.precision))) *
                                (fwd_passes + input_grad + weight_grad);
    t.matmul_s = std::max(compute_s, weights_read / bw);

    // Causal attention: QKᵀ and PV over half the s × s scores, backward twice the forward. Fused
    // kernels (FlashAttention, and SDPA, which dispatches to it) recompute the scores in backward:
    // 5 products against the forward's 2 (FlashAttention-2 paper, Dao 2023, §3.1.2 backward pass;
    // llm-foundry's benchmarking README counts the same extra recompute). They run below the
    // GEMMs' rate (attention_efficiency, fitted).
    const double s = double(setup.seq_len);
    const bool eager = model_attention(arch, setup.attention) == Attention::Eager;
    const double attention_backward = eager ? 2.0 : 2.5;
    t.attention_flops = 2.0 * double(arch.layers) * s * double(arch.q_dim()) * T * (fwd_passes + attention_backward);
    t.attention_s = t.attention_flops /
                    (t.peak_tflops * 1e12 *
                     std::max(1e-6, t.efficiency * k.attention_efficiency * m.flash_attention_relative));
    if (eager) {
        // Materialised scores: written 16-bit, softmax in fp32 and back, read by PV; the
        // backward reads and writes them twice over (about 24 B per score in all).
        const double scores = double(arch.layers) * double(arch.heads) * s * s * double(setup.micro_batch);
        t.attention_s += scores * 24.0 * fwd_passes / bw;
    }

    // LoRA: x·A then ·B per adapted linear. Σ(in + out) over adapted maps = adapter params / rank.
    if (pc.adapter > 0 && setup.lora_rank > 0) {
        const double io = double(pc.adapter) / double(setup.lora_rank);
        // Forward reads x (in) and adds into the output (out); backward reads the output
        // gradient and x again for A's and B's gradients and writes x's gradient.
        t.adapter_s = T * io * act * (fwd_passes + 3.0) / bw;
    }
    // NF4: every pass dequantizes each quantized weight to a 16-bit copy the GEMM then reads
    // (bitsandbytes dequantize_4bit: 0.5 B of codes and the absmax read, 2 B written, 2 B read
    // back by the product: ~4.5 B per weight and pass).
    if (quantized && setup.trains())
        t.dequant_s = double(pc.quantized) * 4.5 * (fwd_passes + input_grad) / bw;

    // The optimizer: AdamW reads weight, gradient and two moments and writes three (fp32: 28 B
    // per trainable); 8-bit moments: 16 B; SGD: 12 B. Once per grad_accum micro-steps.
    double opt_bytes = 28;
    if (setup.optimizer == Optimizer::AdamW8bit || setup.optimizer == Optimizer::PagedAdamW8bit) opt_bytes = 16;
    if (setup.optimizer == Optimizer::Sgd) opt_bytes = 12;
    // On a CPU a fused step (wingspan-train's AdamW, trainer/src/optim/optimizer.cpp; torch's
    // fused=True) is one in-place streaming pass over buffers allocated once: it runs at the
    // machine's copy bandwidth, while the eager element-wise ops below each write a fresh buffer
    // (first-touch page faults, cold caches) and run at bandwidth_efficiency of it. A GPU's caching
    // allocator makes no such difference: there both run at bandwidth_efficiency.
    const bool streaming_step = m.kind == MachineKind::Cpu && f.optimizer_step == "fused";
    const double opt_bw = streaming_step ? std::max(1e-3, m.bandwidth_gb_s) * 1e9 : bw;
    t.optimizer_s = double(pc.trainable) * opt_bytes / opt_bw / double(std::max<std::int64_t>(1, setup.grad_accum));

    // Elementwise ops: forward once per forward pass, backward about twice the forward's bytes.
    t.elementwise_s = k.elementwise_scale * T * double(arch.layers) * sh.elementwise * act * (fwd_passes + 2.0) / bw;

    // Logits: written 16-bit, upcast to fp32, log-softmax, gradient: ~26 B per logit; a fused
    // or chunked loss never writes the fp32 copies (~8 B).
    const bool fused = f.loss_fused || f.fused_loss || f.id == "unsloth";
    t.logits_s = T * double(arch.vocab) * (fused ? 8.0 : 26.0) / bw;

    // Transfers over the host link (PCIe; unified memory: the memory bus). An offloaded optimizer
    // (ZeRO-Offload) sends every gradient down (fp32) and gets the updated 16-bit weights back once
    // per optimizer step. Unsloth's offloaded checkpoints move each layer's input down in forward and
    // back in backward, overlapped with the layers' work: only the excess counts.
    if (m.link_gb_s > 0 && m.kind == MachineKind::Gpu) {
        const double link = m.link_gb_s * 1e9;
        if (setup.offload)
            t.offload_s += double(pc.trainable) * (4.0 + 2.0) / link / double(std::max<std::int64_t>(1, setup.grad_accum));
        if (f.checkpoint_offload && ckpt) {
            const double moved = 2.0 * T * double(arch.hidden) * act * double(arch.layers);
            t.offload_s += std::max(0.0, moved / link - t.matmul_s);
        }
    }

    // Dispatch: about 30 ops per layer forward (+6 per adapted linear), backward twice that.
    const double adapted = pc.adapter > 0 ? double(arch.layers) * 7.0 : 0.0;
    const double ops = (30.0 * double(arch.layers) + 6.0 * adapted) * (fwd_passes + 2.0) + 50.0;
    const double dispatch = ops * k.launch_s;
    // A GPU runs ahead of its host: dispatch costs only where it outlasts the device's work. A
    // CPU both dispatches and computes: it adds.
    t.overhead_s = m.kind == MachineKind::Cpu ? dispatch : std::max(0.0, dispatch - t.total_s());
    if (k.framework_speedup > 0 && k.framework_speedup != 1.0) {
        const double scale = 1.0 / k.framework_speedup;
        for (double* part : {&t.matmul_s, &t.attention_s, &t.adapter_s, &t.dequant_s, &t.optimizer_s, &t.elementwise_s,
                             &t.logits_s, &t.overhead_s, &t.offload_s})
            *part *= scale;
    }
    return t;
}

std::string StepTime::explain() const {
    std::ostringstream o;
    char buf[160];
    auto line = [&](const char* what, double sec) {
        std::snprintf(buf, sizeof buf, "  %-12s %9.4f s  (%4.1f %%)\n", what, sec, total_s() > 0 ? 100 * sec / total_s() : 0);
        o << buf;
    };
    std::snprintf(buf, sizeof buf, "%.0f tokens per micro-step; %.3g matmul FLOPs at %.1f TFLOPS × %.2f efficiency\n",
                  tokens, matmul_flops, peak_tflops, efficiency);
    o << buf;
    line("matmuls", matmul_s);
    line("attention", attention_s);
    line("adapters", adapter_s);
    line("dequant", dequant_s);
    line("optimizer", optimizer_s);
    line("elementwise", elementwise_s);
    line("logits", logits_s);
    line("overhead", overhead_s);
    line("offload", offload_s);
    std::snprintf(buf, sizeof buf, "  total        %9.4f s  -> %.1f tokens/s\n", total_s(), tokens_per_s());
    o << buf;
    return o.str();
}

ServeEngine serve_engine(const std::string& id) {
    if (id == "llama.cpp") return ServeEngine::LlamaCpp;
    if (id == "mlx-lm" || id == "mlx") return ServeEngine::Mlx;
    if (id == "mlc-llm") return ServeEngine::MlcLlm;
    if (id == "exllama") return ServeEngine::Exllama;
    return ServeEngine::Generic;
}

SpeedFactors serve_factors(const MachineProfile& m, const FrameworkProfile& f, ServeEngine engine) {
    SpeedFactors s = speed_factors(m, f);
    s.engine = engine;
    // Each engine's decode kernels stream the weights at their own share of the bandwidth and
    // cost their own dispatch per layer and token: fitted by bench_throughput to the engine's
    // fitting (not held-back) decode cases in throughput.json; the rest keep the class's values.
    //   MLC (2023, TVM-compiled q4f16_1 GEMV): RTX 4090 7B, RTX 3090 Ti 7B and 13B.
    //   Exllama v1 (GPTQ 4-bit): RTX 4090 13B, RTX 3090 Ti 7B (two cases: the 3090 Ti runs its
    //   dequantizing kernel well below the bandwidth, which one share per engine cannot follow).
    //   llama.cpp CUDA (MMVQ): RTX 4090 Q6_K, RTX 3080 Q4_K_M.
    //   MLX (quantized qmv / bf16 gemv): M2 Ultra 70B bf16, M3 Ultra 8B 4-bit.
    //   llama.cpp Metal: M1 Ultra TinyLlama Q4_K_M (the class's values are that case's fit).
    const bool gpu = m.kind == MachineKind::Gpu, apple = m.kind == MachineKind::Unified;
    if (gpu && engine == ServeEngine::MlcLlm) s.bandwidth_efficiency = 0.85, s.launch_s = 9.0e-6;
    if (gpu && engine == ServeEngine::Exllama) s.bandwidth_efficiency = 0.95, s.launch_s = 40e-6;
    if (gpu && engine == ServeEngine::LlamaCpp) s.bandwidth_efficiency = 0.605, s.launch_s = 1.3e-6;
    if (apple && engine == ServeEngine::Mlx) s.bandwidth_efficiency = 0.85, s.launch_s = 18e-6;
    if (apple && engine == ServeEngine::LlamaCpp) s.bandwidth_efficiency = 0.825, s.launch_s = 36e-6;
    // llama.cpp's quantized prompt products on an NVIDIA GPU with int8 tensor cores (Turing and
    // later) always take the MMQ kernels (ggml/src/ggml-cuda/mmq.cu, ggml_cuda_should_use_mmq:
    // "if (turing_mma_available(cc)) return true;", llama.cpp commit 027ef87; int8 mma since PR
    // #7676 / #7860, June 2024): the activations are quantized to q8_1 and multiplied with the
    // weights' int8 codes on the int8 tensor cores, the block scales applied after. The kernels
    // reach a fraction of the dense int8 rate nobody publishes: fitted to the fitting cases of
    // llama.cpp prompt processing on CUDA (RTX 3090 Q6_K, PR #7860; RTX 2080 Ti Q4_K_M).
    s.mmq_efficiency = 0.30;
    return s;
}

ServeSpeed serving_speed(const Architecture& arch, const TrainingSetup& setup, const MachineProfile& m,
                         const SpeedFactors& k, double weight_bits) {
    ServeSpeed out;
    const Shape sh = shape_of(arch);
    double bits = weight_bits;
    if (bits <= 0) {
        switch (setup.effective_quantization()) {
            case Quantization::None: bits = 8.0 * dtype_bytes(setup.precision); break;
            case Quantization::Nf4: bits = 4.5; break;             // 4-bit codes + fp32 absmax per 64
            case Quantization::Nf4DoubleQuant: bits = 4.127; break; // absmax in 8 bits + fp32 per 256 blocks
            case Quantization::Int8: bits = 8.5; break;            // LLM.int8: codes + row scales, outliers
            case Quantization::Awq: case Quantization::Gptq: case Quantization::GptqInt8:
            case Quantization::Fp8: case Quantization::Fp8Channel: case Quantization::Fp8Block: {
                // The checkpoint's codes and constants, per weight of a hidden × hidden linear.
                const QuantLayout l = checkpoint_layout(setup.effective_quantization(), arch.hidden, arch.hidden,
                                                        setup.quant_group_size);
                bits = 8.0 * double(l.packed_bytes + l.constant_bytes) / double(std::max<std::int64_t>(1, l.elements));
                break;
            }
        }
    }
    const double embedding_read = double(arch.hidden) * 2.0;       // one row per token
    out.weight_bytes = (sh.linear + sh.head) * bits / 8.0 + embedding_read;
    const double b = double(std::max<std::int64_t>(1, setup.serve_batch));
    const double ctx = double(std::max<std::int64_t>(1, setup.seq_len));
    const double kv_per_token = 2.0 * double(arch.layers) * double(arch.kv_dim()) * 2.0;   // K and V, 16-bit
    out.kv_bytes_per_step = b * ctx * kv_per_token;
    const double bw = std::max(1e-3, m.bandwidth_gb_s) * 1e9 * k.bandwidth_efficiency;
    // Per layer: an engine launches a handful of fused kernels; eager PyTorch dispatches about 25
    // ops (norms, rotary, attention, SwiGLU, residuals) plus ~5 per bitsandbytes 4-bit linear
    // (dequantize, gemv, reshapes) for the 7 linears.
    const bool quantized = bits < 8.0 * dtype_bytes(setup.precision) - 0.5;
    const double launches = k.eager_decode ? double(arch.layers) * (25.0 + (quantized ? 35.0 : 7.0)) * k.eager_op_s
                                           : 4.0 * double(arch.layers) * k.launch_s;
    // A decode step's products are matrix-vector (b rows): bandwidth-bound unless b is large, so
    // their FLOPs are counted at the large-GEMM efficiency (no small-row penalty).
    const double decode_compute = 2.0 * b * (sh.linear + sh.head) / (peak_tflops(m, setup.precision) * 1e12 *
                                                                       k.matmul_efficiency);
    const double step = std::max((out.weight_bytes + out.kv_bytes_per_step) / bw, decode_compute) + launches;
    out.decode_tokens_per_s = b / step;
    // Prefill: the whole prompt, compute-bound; causal attention over the prompt. llama.cpp cuts
    // it into physical batches of n_ubatch = 512 tokens (common/common.h, "physical batch size
    // for prompt processing"; llama-bench's default too): its GEMMs have at most 512 rows.
    const double T = b * ctx;
    const double rows = k.engine == ServeEngine::LlamaCpp ? std::min(T, 512.0) : T;
    const double linear_flops = 2.0 * T * (sh.linear + sh.head);
    const double attention_flops = 2.0 * double(arch.layers) * ctx * double(arch.q_dim()) * T;
    const double fills = fill(rows, k.rows_half) * fill(double(arch.hidden), k.width_half);
    const double fp16_rate = peak_tflops(m, setup.precision) * 1e12 * k.matmul_efficiency * fills;
    double compute = (linear_flops + attention_flops) / fp16_rate;
    if (k.engine == ServeEngine::LlamaCpp && m.kind == MachineKind::Gpu && quantized && m.tops_int8 > 0)
        compute = linear_flops / (m.tops_int8 * 1e12 * k.mmq_efficiency * fills) + attention_flops / fp16_rate;
    const double prefill = std::max(compute, out.weight_bytes / bw) + launches;
    out.prefill_tokens_per_s = T / prefill;
    return out;
}

namespace {
struct TimeUnit {
    double seconds;
    const char* name;
    int digits;
};
// The unit a duration reads best in, as the CLI's and the window's durations use.
TimeUnit unit_for(double seconds) {
    if (seconds >= 3 * 86400) return {86400, "days", 1};
    if (seconds >= 7200) return {3600, "h", 1};
    if (seconds >= 120) return {60, "min", 0};
    return {1, "s", 0};
}
}  // namespace

std::string likely_span(double seconds) {
    if (!std::isfinite(seconds) || seconds <= 0) return "—";
    const TimeUnit u = unit_for(seconds);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f–%.*f %s", u.digits, kTimeLow * seconds / u.seconds, u.digits,
                  kTimeHigh * seconds / u.seconds, u.name);
    return buf;
}

std::string likely_range(double seconds) {
    if (!std::isfinite(seconds) || seconds <= 0) return "—";
    const TimeUnit u = unit_for(seconds);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f %s, likely ", u.digits, seconds / u.seconds, u.name);
    return buf + likely_span(seconds);
}

}  // namespace wingspan
