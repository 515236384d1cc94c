#include "wingspan/oom_message.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

namespace wingspan {

namespace {

// A pasted traceback can be long; the message itself is a few hundred characters. Only this
// much text after the anchor goes to std::regex, whose backtracking recurses per character.
constexpr std::size_t kWindow = 1500;

// One size as PyTorch's format_size prints it: c10/cuda/CUDACachingAllocator.cpp (bytes, KiB,
// MiB, GiB) and aten/src/ATen/mps/MPSAllocator.h (bytes, KB, MB, GB, all binary; GiB in 2.5+).
const std::string kSize = R"(([0-9]+(?:\.[0-9]+)?\s*(?:bytes|[KMGT]i?B|B)))";

std::optional<std::int64_t> size_at(const std::smatch& m, std::size_t i) {
    if (i >= m.size() || !m[i].matched) return std::nullopt;
    return parse_allocator_size(m[i].str());
}

std::string_view window_from(std::string_view text, std::string_view anchor) {
    const auto at = text.find(anchor);
    if (at == std::string_view::npos) return {};
    return text.substr(at, kWindow);
}

std::optional<OomReport> parse_cuda_current(const std::string& w) {
    static const std::regex head("Tried to allocate " + kSize + R"(\.\s*GPU ([0-9]+) has a total (capacty|capacity) of )" +
                                 kSize + " of which " + kSize + R"( is free\.)");
    std::smatch m;
    if (!std::regex_search(w, m, head)) return std::nullopt;
    OomReport r;
    r.format = m[3].str() == "capacty" ? OomFormat::CudaCapacty : OomFormat::CudaCurrent;
    r.device = "cuda:" + m[2].str();
    r.requested_bytes = size_at(m, 1);
    r.capacity_bytes = size_at(m, 4);
    r.free_bytes = size_at(m, 5);
    const std::string rest = m.suffix().str();
    // Other processes are listed one by one ("Process 20398 has 14.52 GiB memory in use.").
    static const std::regex other(R"(Process [0-9]+ has )" + kSize + " memory in use");
    std::vector<std::int64_t> listed;
    for (std::sregex_iterator it(rest.begin(), rest.end(), other), end; it != end; ++it)
        if (auto b = size_at(*it, 1)) listed.push_back(*b);
    static const std::regex self(R"(this process has )" + kSize + " memory in use");
    if (std::regex_search(rest, m, self)) r.process_bytes = size_at(m, 1);
    static const std::regex split(R"(Of the allocated memory )" + kSize +
                                  R"( is allocated by PyTorch,(?: with )" + kSize +
                                  R"( allocated in private pools \(e\.g\., CUDA Graphs\),)? and )" + kSize +
                                  " is reserved by PyTorch but unallocated");
    if (std::regex_search(rest, m, split)) {
        r.allocated_bytes = size_at(m, 1);
        if (r.allocated_bytes && size_at(m, 3)) r.reserved_bytes = *r.allocated_bytes + *size_at(m, 3);
    }
    // In a container the failing process may itself be listed as "Process N" (NVML reports host
    // PIDs, so PyTorch cannot tell it is this one): without a "this process" line, the largest
    // listed process holding at least PyTorch's own reserve is this process.
    if (!r.process_bytes && r.reserved_bytes && !listed.empty()) {
        auto largest = std::max_element(listed.begin(), listed.end());
        if (*largest >= *r.reserved_bytes) {
            r.process_bytes = *largest;
            listed.erase(largest);
        }
    }
    if (!listed.empty()) {
        std::int64_t others = 0;
        for (auto b : listed) others += b;
        r.other_bytes = others;
    } else if (r.capacity_bytes && r.free_bytes && r.process_bytes)
        // Not listed (a container sees no other PIDs): what is neither free nor this process's.
        r.other_bytes = std::max<std::int64_t>(0, *r.capacity_bytes - *r.free_bytes - *r.process_bytes);
    return r;
}

std::optional<OomReport> parse_cuda_legacy(const std::string& w) {
    static const std::regex re("Tried to allocate " + kSize + R"(\s*\(GPU ([0-9]+); )" + kSize +
                               " total capacity; " + kSize + " already allocated; " + kSize + " free; " + kSize +
                               " (reserved in total by PyTorch|cached)");
    std::smatch m;
    if (!std::regex_search(w, m, re)) return std::nullopt;
    OomReport r;
    r.format = OomFormat::CudaLegacy;
    r.device = "cuda:" + m[2].str();
    r.requested_bytes = size_at(m, 1);
    r.capacity_bytes = size_at(m, 3);
    r.allocated_bytes = size_at(m, 4);
    r.free_bytes = size_at(m, 5);
    r.reserved_bytes = size_at(m, 6);   // "reserved in total" (1.5+) and "cached" (1.0-1.4): the whole reserve
    return r;
}

std::optional<OomReport> parse_mps(const std::string& w) {
    static const std::regex current(R"(MPS backend out of memory \(currently allocated: )" + kSize + ", max allowed: " +
                                    kSize + R"(\)\.\s*Tried to allocate )" + kSize + " on (private|shared) pool");
    static const std::regex split(R"(MPS backend out of memory \(MPS allocated: )" + kSize + ", other allocations: " +
                                  kSize + "(?:, max allowed: " + kSize + R"()?\)\.\s*Tried to allocate )" + kSize +
                                  " on (private|shared) pool");
    std::smatch m;
    OomReport r;
    r.device = "mps";
    if (std::regex_search(w, m, current)) {
        r.format = OomFormat::MpsCurrentlyAllocated;
        r.allocated_bytes = size_at(m, 1);
        r.capacity_bytes = size_at(m, 2);
        r.requested_bytes = size_at(m, 3);
        r.pool = m[4].str();
        return r;
    }
    if (!std::regex_search(w, m, split)) return std::nullopt;
    r.allocated_bytes = size_at(m, 1);
    r.other_bytes = size_at(m, 2);
    r.capacity_bytes = size_at(m, 3);
    r.format = r.capacity_bytes ? OomFormat::MpsWithMax : OomFormat::MpsNoMax;
    r.requested_bytes = size_at(m, 4);
    r.pool = m[5].str();
    return r;
}

}  // namespace

const char* to_string(OomFormat f) {
    switch (f) {
        case OomFormat::CudaLegacy: return "cuda-1.x";
        case OomFormat::CudaCapacty: return "cuda-2.1";
        case OomFormat::CudaCurrent: return "cuda-2.2+";
        case OomFormat::MpsCurrentlyAllocated: return "mps-1.13";
        case OomFormat::MpsWithMax: return "mps-2.1+";
        case OomFormat::MpsNoMax: return "mps-no-max";
    }
    return "unknown";
}

std::optional<std::int64_t> parse_allocator_size(std::string_view text) {
    static const std::regex re(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)\s*$)");
    const std::string s(text.substr(0, 64));
    std::smatch m;
    if (text.size() > 64 || !std::regex_match(s, m, re)) return std::nullopt;
    const double value = std::stod(m[1].str());
    const std::string unit = m[2].str();
    double scale = 1;
    if (unit[0] == 'K') scale = 1024.0;
    else if (unit[0] == 'M') scale = 1024.0 * 1024;
    else if (unit[0] == 'G') scale = 1024.0 * 1024 * 1024;
    else if (unit[0] == 'T') scale = 1024.0 * 1024 * 1024 * 1024;
    const double bytes = std::round(value * scale);
    if (!std::isfinite(bytes) || bytes > 9.0e18) return std::nullopt;
    return static_cast<std::int64_t>(bytes);
}

std::optional<OomReport> parse_oom_message(std::string_view text) {
    // CUDA: "CUDA out of memory. Tried to allocate …" in every version.
    if (auto w = window_from(text, "out of memory. Tried to allocate"); !w.empty()) {
        const std::string s(w);
        if (auto r = parse_cuda_current(s)) return r;
        if (auto r = parse_cuda_legacy(s)) return r;
    }
    if (auto w = window_from(text, "MPS backend out of memory"); !w.empty()) return parse_mps(std::string(w));
    return std::nullopt;
}

std::optional<std::int64_t> OomReport::fragmentation_bytes() const {
    if (!reserved_bytes || !allocated_bytes) return std::nullopt;
    return std::max<std::int64_t>(0, *reserved_bytes - *allocated_bytes);
}

nlohmann::json OomReport::to_json() const {
    auto value = [](const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    return {{"format", to_string(format)},
            {"device", device},
            {"capacity_bytes", value(capacity_bytes)},
            {"free_bytes", value(free_bytes)},
            {"requested_bytes", value(requested_bytes)},
            {"allocated_bytes", value(allocated_bytes)},
            {"reserved_bytes", value(reserved_bytes)},
            {"process_bytes", value(process_bytes)},
            {"other_bytes", value(other_bytes)},
            {"fragmentation_bytes", value(fragmentation_bytes())}};
}

}  // namespace wingspan
