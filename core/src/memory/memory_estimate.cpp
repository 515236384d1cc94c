// A memory estimate as data: its phases, per-component maxima, explanations and JSON.
#include "wingspan/memory_model.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "memory/storage_terms.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

using nlohmann::json;

std::int64_t Phase::total() const {
    std::int64_t t = 0;
    for (const auto& [c, b] : bytes) t += b;
    return t;
}

std::map<Component, std::int64_t> MemoryEstimate::component_maxima() const {
    std::map<Component, std::int64_t> out;
    for (const auto& p : phases)
        for (const auto& [c, b] : p.bytes) out[c] = std::max(out[c], b);
    out[Component::FrameworkOverhead] = framework_overhead_bytes;
    return out;
}

const MemoryTerm* MemoryEstimate::term(Component c) const {
    for (const auto& t : terms)
        if (t.component == c) return &t;
    return nullptr;
}

std::string MemoryEstimate::explain(Component c) const {
    std::string out;
    for (const auto& t : terms) {
        if (t.component != c) continue;
        if (!out.empty()) out += "\n";
        out += t.formula + " = " + format_count(t.bytes) + " B" + (t.on_host ? " (host RAM)" : "");
    }
    return out;
}

nlohmann::json MemoryEstimate::to_json() const {
    json comps = json::object();
    for (const auto& [c, b] : components) comps[std::string(component_name(c))] = b;
    json terms_json = json::array();
    for (const auto& t : terms)
        terms_json.push_back({{"component", component_name(t.component)},
                              {"bytes", t.bytes},
                              {"formula", t.formula},
                              {"inputs", t.inputs},
                              {"on_host", t.on_host}});
    json phases_json = json::array();
    for (const auto& p : phases) {
        json pb = json::object();
        for (const auto& [c, b] : p.bytes) pb[std::string(component_name(c))] = b;
        phases_json.push_back({{"name", p.name}, {"allocated_bytes", p.total()}, {"components", pb}});
    }
    return {{"params",
             {{"total", params.total},
              {"trainable", params.trainable},
              {"frozen", params.frozen},
              {"quantized", params.quantized},
              {"adapter", params.adapter}}},
            {"components", comps},
            {"component_maxima", protocol::components_to_json(component_maxima())},
            {"peak_phase", peak_phase},
            {"peak_allocated_bytes", peak_allocated_bytes},
            {"framework_overhead_bytes", framework_overhead_bytes},
            {"total_bytes", total_bytes},
            {"host_bytes", host_bytes},
            {"reserved_device_fraction", reserved_device_fraction},
            {"phases", phases_json},
            {"terms", terms_json}};
}

}  // namespace wingspan
