#pragma once
// Reads the out-of-memory text PyTorch raises on CUDA and on Apple's MPS into numbers, in every
// wording PyTorch has used. A pure parser: no plan, no guessing; text it does not recognise
// gives nullopt, never a made-up figure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace wingspan {

// The wordings, oldest first. Each names the PyTorch source that prints it.
enum class OomFormat {
    // c10/cuda/CUDACachingAllocator.cpp, PyTorch 1.x-2.0: "(GPU 0; 6.00 GiB total capacity;
    // 781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch)";
    // before 1.5 the last figure read "… cached".
    CudaLegacy,
    // PyTorch 2.1: "GPU 0 has a total capacty of … of which … is free. … Of the allocated memory
    // … is allocated by PyTorch, and … is reserved by PyTorch but unallocated." (the typo is
    // PyTorch's own).
    CudaCapacty,
    // PyTorch 2.2 onwards: the same with "total capacity".
    CudaCurrent,
    // aten/src/ATen/mps/MPSAllocator.mm, PyTorch 1.13-2.0: "(currently allocated: …, max allowed: …)".
    MpsCurrentlyAllocated,
    // PyTorch 2.1 onwards: "(MPS allocated: …, other allocations: …, max allowed: …)".
    MpsWithMax,
    // The same with PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0: no "max allowed".
    MpsNoMax,
};
const char* to_string(OomFormat);   // "cuda-1.x", "cuda-2.1", "cuda-2.2+", "mps-1.13", "mps-2.1+", "mps-no-max"

// Every figure in bytes, as printed (two decimals of a binary unit, so within 0.5 % of the
// allocator's exact count). nullopt: the message does not carry it.
struct OomReport {
    OomFormat format = OomFormat::CudaCurrent;
    std::string device;                            // "cuda:0", "mps"
    std::optional<std::int64_t> capacity_bytes;    // CUDA: the device's total; MPS: "max allowed"
    std::optional<std::int64_t> free_bytes;        // CUDA: free on the device when it failed
    std::optional<std::int64_t> requested_bytes;   // "Tried to allocate"
    std::optional<std::int64_t> allocated_bytes;   // live tensors of this process (MPS: MPS allocated)
    // The caching allocator's whole reserve: allocated plus reserved-but-unallocated.
    std::optional<std::int64_t> reserved_bytes;
    // "this process has … in use" (CUDA 2.1+, PyTorch's reserve plus the CUDA context).
    std::optional<std::int64_t> process_bytes;
    // Memory held by other processes (CUDA "Process N has …", summed) or, on MPS, by other
    // allocations of the Metal device ("other allocations").
    std::optional<std::int64_t> other_bytes;
    std::string pool;                              // MPS: "private" or "shared"

    // Reserved but not allocated: what fragmentation holds back (nullopt without both figures).
    std::optional<std::int64_t> fragmentation_bytes() const;
    nlohmann::json to_json() const;                // the figures under the field names
};

// Finds the first PyTorch OOM message in text (a whole traceback may surround it).
std::optional<OomReport> parse_oom_message(std::string_view text);

// "1.70 GiB" / "0 bytes" / "768.00 MB" (MPS prints binary sizes with KB/MB/GB, MPSAllocator.h
// format_size) -> bytes; nullopt for anything else.
std::optional<std::int64_t> parse_allocator_size(std::string_view text);

}  // namespace wingspan
