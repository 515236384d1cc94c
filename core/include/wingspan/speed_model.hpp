#pragma once
// How fast a plan runs: the seconds of one training micro-step split into parts that can each
// be checked (matmuls at a shape-dependent kernel efficiency, memory-bound passes at the
// machine's bandwidth, per-kernel overheads), and serving's prefill and decode tokens/s.
// The few efficiency factors per device class are fitted to measured throughput by
// bench_throughput (bench/published/throughput.json); see bench/results/throughput.md.
#include <cstdint>
#include <string>

#include "architecture.hpp"
#include "profiles.hpp"
#include "setup.hpp"

namespace wingspan {

// The serving engine where its kernels change the arithmetic of prefill or decode. Generic: a
// serving engine the bench has no cases for (vLLM, ...), at the device class's factors.
enum class ServeEngine { Generic, LlamaCpp, Mlx, MlcLlm, Exllama };
// "llama.cpp", "mlx-lm" (and MLX-based servers), "mlc-llm", "exllama"; anything else is Generic.
ServeEngine serve_engine(const std::string& framework_id);

// The factors a device class (and framework) reaches; everything else is counted.
struct SpeedFactors {
    double matmul_efficiency = 0.5;     // fraction of the matmul rate (measured, else the datasheet's peak) a large GEMM reaches
    double rows_half = 256;             // GEMM rows (tokens per micro-batch) at which it reaches half
    double width_half = 256;            // GEMM inner width (hidden size) at which it reaches half
    double attention_efficiency = 1.0;  // attention kernels' rate as a fraction of the GEMMs' at the same shape
    double bandwidth_efficiency = 0.7;  // fraction of peak memory bandwidth a streaming kernel reaches
    double launch_s = 8e-6;             // seconds per kernel launch / op dispatch
    double elementwise_scale = 1.0;     // framework: fused kernels move fewer bytes
    double framework_speedup = 1.0;     // framework: a published whole-step speedup over the reference
    // Decoding in eager PyTorch (transformers' generate): the GPU waits on the host's dispatch of
    // every small op, so each costs eager_op_s; serving engines (llama.cpp, MLC, MLX, vLLM)
    // launch a few fused kernels per layer at launch_s.
    bool eager_decode = false;
    double eager_op_s = 40e-6;
    // The serving engine (serve_factors): its decode kernels reach their own share of the
    // bandwidth (bandwidth_efficiency) and cost their own per-layer dispatch (launch_s).
    ServeEngine engine = ServeEngine::Generic;
    // llama.cpp on a CUDA GPU with int8 tensor cores multiplies quantized weights in its MMQ
    // kernels at this fraction of the datasheet's dense int8 rate (tops_int8).
    double mmq_efficiency = 0.2;
    std::string source;                 // where the numbers come from
};

// The bundled factors for a machine's class (gpu / unified / cpu) and framework.
SpeedFactors speed_factors(const MachineProfile& machine, const FrameworkProfile& framework);

// The factors one serving engine reaches on a machine: the class's factors (speed_factors) with
// the engine's own decode bandwidth share and per-layer dispatch where the bench fitted them.
SpeedFactors serve_factors(const MachineProfile& machine, const FrameworkProfile& framework, ServeEngine engine);

// Seconds of one micro-step (one forward and backward of micro_batch × seq_len tokens; the
// optimizer step counted once per grad_accum micro-steps).
struct StepTime {
    double tokens = 0;            // tokens per micro-step
    double matmul_flops = 0;      // dense linear layers and head: forward, input and weight gradients, recompute
    double attention_flops = 0;   // causal QKᵀ and PV, forward, backward (2×), recompute
    double matmul_s = 0;          // max(FLOPs at peak × efficiency, weight bytes at bandwidth)
    double attention_s = 0;       // attention's FLOPs, plus eager attention's s² scores at bandwidth
    double adapter_s = 0;         // LoRA's rank-r products: bandwidth-bound (they read the layer input)
    double dequant_s = 0;         // NF4 → 16-bit per pass over the quantized weights
    double optimizer_s = 0;       // the optimizer step over all trainable state, per micro-step
    double elementwise_s = 0;     // norms, rotary, activations, residuals: bytes at bandwidth
    double logits_s = 0;          // the head's logits through the loss: bytes at bandwidth
    double overhead_s = 0;        // kernel launches / op dispatch
    double offload_s = 0;         // host <-> device transfers over the link (offloaded optimizer, Unsloth's checkpoints)
    double peak_tflops = 0;       // the precision's dense peak used
    double efficiency = 0;        // the matmul efficiency at this shape
    double total_s() const {
        return matmul_s + attention_s + adapter_s + dequant_s + optimizer_s + elementwise_s + logits_s + overhead_s +
               offload_s;
    }
    double tokens_per_s() const { return total_s() > 0 ? tokens / total_s() : 0; }
    std::string explain() const;  // one line per part, for --explain and the bench
};

StepTime training_step(const Architecture& arch, const TrainingSetup& setup, const MachineProfile& machine,
                       const FrameworkProfile& framework, const SpeedFactors& factors);

// Serving: prefill (compute-bound) and decode (bandwidth-bound: the bytes read per generated
// token ÷ bandwidth) for serve_batch sequences with seq_len tokens of context.
struct ServeSpeed {
    double weight_bytes = 0;              // read once per decode step
    double kv_bytes_per_step = 0;         // KV cache read per decode step (all sequences)
    double prefill_tokens_per_s = 0;
    double decode_tokens_per_s = 0;       // generated tokens per second over all sequences
};
// weight_bits > 0 overrides the stored bits per weight (a quantization format the setup has no
// name for, e.g. llama.cpp's Q4_K_M at 4.85 bits).
ServeSpeed serving_speed(const Architecture& arch, const TrainingSetup& setup, const MachineProfile& machine,
                         const SpeedFactors& factors, double weight_bits = 0);

// The spread of measured/predicted time on the held-back cases of bench_throughput: a predicted
// duration t is likely kTimeLow·t – kTimeHigh·t. The bench prints the held-back 10th–90th
// percentile (0.73–1.06 with the 49 cases of bench/results/throughput.md); these keep the
// wider range fitted to the first 26 cases, which contains it.
inline constexpr double kTimeLow = 0.45;
inline constexpr double kTimeHigh = 1.35;
std::string likely_span(double seconds);    // "1.8–3.2 h" (one unit for both ends)
std::string likely_range(double seconds);   // "2.4 h, likely 1.8–3.2 h"

}  // namespace wingspan
