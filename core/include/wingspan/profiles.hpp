#pragma once
// Bundled and user data: models (real configs), machines (with sources), frameworks.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "architecture.hpp"
#include "framework_behaviour.hpp"

namespace wingspan {

struct ModelProfile {
    std::string id;            // "llama-3.1-8b"
    std::string name;          // "Llama 3.1 8B"
    std::string hf_repo;       // "meta-llama/Llama-3.1-8B"
    std::string family;        // "llama-3", "qwen2.5", ... (the size slider walks one family)
    Architecture arch;
    std::filesystem::path file;
};

enum class MachineKind { Gpu, Unified, Cpu };

struct MachineProfile {
    std::string id;                        // "rtx-4090"
    std::string name;                      // "NVIDIA GeForce RTX 4090"
    MachineKind kind = MachineKind::Gpu;
    std::int64_t memory_bytes = 0;         // device memory (or unified pool / RAM)
    std::int64_t usable_bytes = 0;         // what a training process can really use
    std::int64_t host_memory_bytes = 0;    // system RAM beside a GPU (offload target)
    double bandwidth_gb_s = 0;
    double link_gb_s = 0;                  // host <-> device link per direction (PCIe); unified: the memory bus
    double tflops_bf16 = 0;                // dense, fp32 accumulate
    double tflops_fp16 = 0;
    double tflops_fp32 = 0;
    // Measured: the TFLOPS a large 16-bit torch.matmul reaches (0 = not measured). Datacenter
    // cards reach 80-87 % of their datasheet peak, GeForce cards about all of it (their clocks
    // boost past the datasheet's); the speed model counts matmuls against this when known.
    double tflops_matmul_measured = 0;
    // Dense int8 tensor-core TOPS (int32 accumulate) from the datasheet, 0 = not listed: llama.cpp's
    // quantized prompt kernels (MMQ) multiply int8 codes at this rate (speed_model.cpp).
    double tops_int8 = 0;
    // FlashAttention-2's share of this chip's peak relative to its share on an A100 (1 = as on the
    // A100s the attention efficiency is fitted to): FA2 is written for Ampere's mma.sync and
    // reaches a smaller share of Hopper's peak.
    double flash_attention_relative = 1.0;
    bool bf16 = true;
    double power_w = 0;
    std::optional<double> price_per_hour;  // USD, rental, where known
    std::string default_framework;         // framework profile id
    std::map<std::string, std::string> sources;  // field -> where the number comes from
    std::filesystem::path file;
    bool user_defined = false;
};

struct FrameworkProfile;

// An earlier release of a framework whose behaviour differs from the profile's (the current one):
// profile key "releases" (profiles/frameworks/README.md).
struct FrameworkRelease {
    std::string name;                      // "2025.1"
    std::string summary;                   // the versions and the source that shows the difference
    nlohmann::json behaviour;              // the sections that differ, a JSON merge patch
    std::shared_ptr<const FrameworkProfile> profile;   // the profile at that release, parsed once
};

struct FrameworkProfile {
    std::string id;                        // "pytorch-cuda"
    std::string name;
    std::int64_t context_bytes = 0;        // runtime context / process baseline, never "allocated"
    std::int64_t workspace_bytes = 0;      // cuBLAS / kernel workspaces
    // Arrays the GPU's queued command buffers keep alive after their last use, counted as live
    // (MLX: up to 11 committed buffers, each holding the ~50 MiB of arrays it touched); 0 none.
    std::int64_t queued_bytes = 0;
    // Serving: the KV cache grows in blocks of this many positions (mlx-lm's KVCache: 256); 0 exact.
    std::int64_t kv_cache_step = 0;
    double allocator_slack = 0.0;          // held-minus-allocated as a fraction of allocator_slack_of
    // What the slack is a fraction of: "peak" (all allocated bytes at the peak) or "transient"
    // (only the activations and logits at the peak: the bytes freed and allocated again every
    // step, which fragment a heap that keeps what it freed, as glibc's does on CPU).
    std::string allocator_slack_of = "peak";
    double activation_factor = 1.0;        // relative to the reference implementation
    double mfu = 0.3;                      // fraction of dense peak FLOPs achieved in training
    double quantized_speed_factor = 0.7;   // QLoRA throughput relative to 16-bit LoRA
    // Measured ÷ predicted tokens/s of finished runs on this machine (`wingspan calibrate`); the
    // speed model scales its step time by 1 / speed_scale. 1 for bundled profiles.
    double speed_scale = 1.0;
    double working_set_fraction = 1.0;     // unified memory: share the GPU may use
    std::string optimizer_step = "foreach";// "foreach" | "per_tensor" | "fused": step temporaries
    bool fused_loss = false;               // chunked cross-entropy that never holds full logits
    // How the implementation differs from the reference (HF transformers) in what it keeps for
    // backward; the defaults are the reference. Each is documented in the profile's sources.
    bool grouped_eager_attention = false;  // eager attention shares K/V across a group of query
                                           // heads instead of repeating them (keeps kv_dim, not q_dim)
    bool softmax_fp32 = true;              // eager softmax in fp32 beside its 16-bit copy (else in
                                           // the compute dtype only)
    bool norm_saves_square = false;        // RMSNorm's mean keeps its input x² (fp32) for backward
    bool loss_in_place = false;            // head + cross-entropy keep only fp32 probabilities and
                                           // turn them into the logits gradient in place
    bool tied_grad_in_place = false;       // a tied embedding adds its rows into the head's
                                           // gradient (no second vocab × hidden gradient)
    bool bf16_collectives_in_fp32 = false; // the collectives take no bf16: bf16 gradients are reduced
                                           // in fp32 buffers (DDP, ZeRO-2, ZeRO-1's wire buffer)
    bool zero1_wire_buffer = false;        // ZeRO-1 reduces each gradient through one buffer the size
                                           // of the largest, held throughout (wingspan-train)
    std::int64_t checkpoint_state_bytes = 0;
    // RAM the training process holds per token and per example of its data set (wingspan-train keeps
    // token ids and loss flags in memory; frameworks reading memory-mapped Arrow files hold ~0).
    double dataset_bytes_per_token = 0;
    double dataset_bytes_per_example = 0;   // kept per checkpointed layer besides its input (RNG state)
    int technique_lead = 0;                // how early new techniques land (higher = sooner)

    // ---- behaviour read from the framework's source (profiles/frameworks/README.md) ----
    std::vector<std::string> aliases;      // other ids that name this profile ("pytorch-cuda")
    // What the framework does when the user does not say: "" keeps the planner's own default.
    std::string default_precision;         // "bf16" (bf16-true) | "bf16-mixed" | "fp32" ...
    std::string default_quantization;      // "nf4" | "nf4-dq" | "int8" for QLoRA
    int default_grad_checkpointing = -1;   // -1: planner default, 0 off, 1 on
    std::int64_t default_lora_layers = 0;  // adapters on the last N layers (0: all; mlx-lm: 16)
    // Bytes per element by "<method>/<precision>" or "<precision>": keys frozen, trainable,
    // adapter, gradient (0: as the parameter), master (4: an fp32 copy of 16-bit trainables, 0: none),
    // moments. Absent entries keep the precision's textbook scheme (storage of bf16-mixed: 2/2/4/4).
    std::map<std::string, std::map<std::string, int>> dtypes;
    // QLoRA preparation (peft prepare_model_for_kbit_training): every non-quantized 16-bit
    // parameter (embeddings, head, norms) upcast to fp32.
    bool qlora_upcast_non_quantized = false;
    // Quantized storage: "nf4" (bitsandbytes / torchao: 64-value blocks, fp32 absmax or double
    // quant) or "affine" (MLX: groups of quant_group values, a scale and a bias each).
    std::string quant_format = "nf4";
    std::int64_t quant_group = 64;
    int quant_constant_bytes = 4;          // affine: bytes of constants per group (scale + bias)
    // Bytes per element alive while one quantized weight is dequantized for its matmul (torchao's
    // NF4Tensor: 14.03); 0: one copy in the compute dtype (bitsandbytes' fused dequantize_4bit).
    double quant_dequantize_bytes = 0;
    // The quantized matmuls read the packed codes themselves (MLX's qmm/qmv kernels): no weight is
    // ever dequantized whole, in forward or backward.
    bool quant_matmul_reads_packed = false;
    // Bytes alive while one quantized weight of `weights` elements is dequantized for a matmul in
    // compute dtype `e` (0 where the kernels read the packed codes).
    std::int64_t dequantized_weight_bytes(std::int64_t weights, int e) const;
    bool quantizes_embeddings = false;     // the token embedding is quantized too (MLX)
    bool quantizes_head = false;           // the LM head is quantized too (MLX, LitGPT via Fabric)
    // Loss: the full logits kept until backward (model output), the loss upcast to fp32, fused
    // (gradient computed in forward, nothing kept), and how the tokens are chunked: a number of
    // chunks, a number of tokens per chunk, a number of sequence positions per chunk taken from
    // every row of the micro-batch (LitGPT splits [b, s, h] along s), or as many chunks (a multiple
    // of loss_chunks_multiple) as keep one chunk's fp32 logits under loss_chunk_fp32_bytes.
    bool logits_held = true;
    bool loss_upcast_fp32 = true;
    bool loss_fused = false;
    std::int64_t loss_chunks = 0;
    std::int64_t loss_chunk_tokens = 0;
    std::int64_t loss_chunk_positions = 0;
    std::int64_t loss_chunk_fp32_bytes = 0;
    std::int64_t loss_chunks_multiple = 1;
    bool checkpoint_offload = false;       // checkpointed layer inputs live in host RAM (Unsloth)
    // The flags of the behaviour sections, typed (framework_behaviour.hpp): what the memory model reads.
    FrameworkBehaviour traits;
    nlohmann::json behaviour;              // the behaviour sections as read, written back by calibrate
    std::vector<std::string> devices;      // "gpu", "unified", "cpu": where it runs
    std::string release;                   // the release this profile describes ("": the current one)
    std::vector<FrameworkRelease> releases;// earlier releases that behave differently
    std::map<std::string, std::string> sources;
    std::filesystem::path file;
};

// The machine Wingspan runs on, detected at start (detect_this_machine).
inline constexpr const char* kThisMachineId = "this-machine";

// The id a calibration of framework `base_id` is saved under ("libtorch-cpu" →
// "libtorch-cpu-calibrated"): calibrate() names it, this machine and wingspan-train use it.
std::string calibrated_framework_id(const std::string& base_id);

// One place that knows where profiles live and loads them. Errors are ProfileError.
class ProfileLibrary {
public:
    // Loads <dir>/models/*.json, machines/*.json, frameworks/*.json, scenarios/*.json.
    static ProfileLibrary load(const std::filesystem::path& profiles_dir);
    // The bundled profiles: $WINGSPAN_PROFILES, then next to the executable
    // (../share/wingspan/profiles, ../profiles), then the source tree.
    static std::filesystem::path default_dir(const std::filesystem::path& executable = {});
    // The user's own machines, models and calibrated frameworks: $XDG_CONFIG_HOME/wingspan
    // (or ~/.config/wingspan), in machines/, models/ and frameworks/.
    static std::filesystem::path user_dir();
    // Files that cannot be used are skipped; returns one warning per skipped file.
    std::vector<std::string> load_user_profiles(const std::filesystem::path& user_dir);

    const std::vector<ModelProfile>& models() const { return models_; }
    const std::vector<MachineProfile>& machines() const { return machines_; }
    const std::vector<FrameworkProfile>& frameworks() const { return frameworks_; }
    const std::map<std::string, nlohmann::json>& scenarios() const { return scenarios_; }

    // Lookups throw InputError with the closest known ids on a miss.
    const ModelProfile& model(const std::string& id) const;
    const MachineProfile& machine(const std::string& id) const;
    // The same without the error: nullptr on a miss (for callers that skip what is unknown).
    const MachineProfile* find_machine(const std::string& id) const noexcept;
    const FrameworkProfile* find_framework(const std::string& id) const noexcept;
    // A framework by id or by one of its aliases ("pytorch-cuda" → hf-transformers); "id@release"
    // names one of its earlier releases ("unsloth@2025.1").
    const FrameworkProfile& framework(const std::string& id) const;
    // The framework a machine uses unless the user picks another: its default_framework, else
    // by kind (CUDA → hf-transformers, Apple → mlx-lm, CPU → libtorch-cpu).
    static std::string default_framework_id(MachineKind kind);
    // The frameworks the user can pick for a machine: those that run on its kind of device
    // (profile "devices": gpu / unified / cpu), the default first.
    std::vector<const FrameworkProfile*> frameworks_for(const MachineProfile& m) const;
    const nlohmann::json& scenario(const std::string& id) const;
    // The user's calibration of framework `id` when one was saved, else framework `id`.
    const FrameworkProfile& calibrated_or_bundled(const std::string& id) const;
    // A machine's default framework; for this machine, its calibration when the user saved one.
    const FrameworkProfile& framework_for(const MachineProfile& m) const;
    // Members of one family sorted by parameter count.
    std::vector<const ModelProfile*> family(const std::string& family) const;
    // Dense models of `family` (default: the reference ladder) whose size is nearest.
    const ModelProfile& nearest_model(std::int64_t params, const std::string& family = {}) const;

    void add_model(ModelProfile m);
    void add_machine(MachineProfile m);   // replaces one with the same id
    void add_framework(FrameworkProfile f);

private:
    std::vector<ModelProfile> models_;
    std::vector<MachineProfile> machines_;
    std::vector<FrameworkProfile> frameworks_;
    std::map<std::string, nlohmann::json> scenarios_;
};

ModelProfile parse_model_profile(const nlohmann::json& j, const std::string& file);
MachineProfile parse_machine_profile(const nlohmann::json& j, const std::string& file);
nlohmann::json machine_profile_to_json(const MachineProfile& m);
// Throws ProfileError naming the file and the key for any key not in framework_profile_keys().
FrameworkProfile parse_framework_profile(const nlohmann::json& j, const std::string& file);
// The keys a framework profile may have: "" the top level, else a section's ("loss", "compile",
// ...; "dtypes" is keyed by precision and checked field by field).
const std::map<std::string, std::vector<std::string>>& framework_profile_keys();
// "this machine": RAM from /proc/meminfo (sysctl on macOS), cores, bf16 instructions from
// /proc/cpuinfo; a CPU machine.
MachineProfile detect_this_machine();
// The bf16 instruction set a /proc/cpuinfo text names: "amx_bf16", "avx512_bf16" or "" (none).
std::string cpuinfo_bf16_isa(const std::string& cpuinfo);
// Closest ids by edit distance, for "did you mean" messages.
std::vector<std::string> closest_names(const std::string& wanted,
                                       const std::vector<std::string>& known, size_t n = 3);

}  // namespace wingspan
