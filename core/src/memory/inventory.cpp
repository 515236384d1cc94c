// The lifetime walk over a tensor inventory: which rows are alive in each phase and their bytes.
#include "wingspan/tensor_inventory.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "wingspan/units.hpp"

namespace wingspan {

bool TensorRow::has_tag(const std::string& tag) const { return std::find(tags.begin(), tags.end(), tag) != tags.end(); }

namespace {
// The index of a phase name; missing names are before every phase (created) or after (freed).
std::ptrdiff_t index_of(const std::vector<std::string>& phases, const std::string& name, std::ptrdiff_t missing) {
    const auto it = std::find(phases.begin(), phases.end(), name);
    return it == phases.end() ? missing : it - phases.begin();
}
}  // namespace

bool TensorInventory::has_phase(const std::string& name) const {
    return std::find(phases.begin(), phases.end(), name) != phases.end();
}

bool TensorInventory::alive(const TensorRow& r, std::size_t p) const {
    const auto n = static_cast<std::ptrdiff_t>(phases.size());
    const std::ptrdiff_t from = r.created.empty() ? -1 : index_of(phases, r.created, n);
    const std::ptrdiff_t to = r.freed.empty() ? n : index_of(phases, r.freed, -1);
    const auto at = static_cast<std::ptrdiff_t>(p);
    return from <= at && at <= to;
}

std::map<Component, std::int64_t> TensorInventory::phase_bytes(std::size_t p) const {
    std::map<Component, std::int64_t> out;
    // Scaled rows are summed per (component, group) first and rounded once, as the framework's
    // activation factor applies to a whole moment's saved tensors.
    std::map<std::pair<Component, int>, std::int64_t> scaled;
    for (const auto& r : rows) {
        if (!r.counted || r.on_host || !alive(r, p)) continue;
        if (r.scale_group > 0)
            scaled[{r.component, r.scale_group}] += r.bytes;
        else
            out[r.component] += r.bytes;
    }
    for (const auto& [key, bytes] : scaled)
        out[key.first] += static_cast<std::int64_t>(std::llround(double(bytes) * activation_factor));
    for (auto it = out.begin(); it != out.end();) it = it->second == 0 ? out.erase(it) : std::next(it);
    return out;
}

std::int64_t TensorInventory::outside_allocator_bytes(std::size_t p) const {
    std::int64_t out = 0;
    for (const auto& r : rows)
        if (r.counted && !r.on_host && r.outside_allocator && r.scale_group == 0 && alive(r, p)) out += r.bytes;
    return out;
}

std::vector<const TensorRow*> TensorInventory::tagged(const std::string& tag) const {
    std::vector<const TensorRow*> out;
    for (const auto& r : rows)
        if (r.has_tag(tag)) out.push_back(&r);
    return out;
}

namespace {
std::string lifetime(const TensorRow& r) {
    if (!r.counted) return "(a term's figure)";
    if (r.created.empty() && r.freed.empty()) return "whole step";
    if (r.created == r.freed) return r.created;
    return (r.created.empty() ? std::string("load") : r.created) + " → " + (r.freed.empty() ? std::string("end") : r.freed);
}
}  // namespace

nlohmann::json TensorInventory::to_json() const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows)
        out.push_back({{"name", r.name},
                       {"component", component_name(r.component)},
                       {"scope", r.scope},
                       {"shape", r.shape},
                       {"elements", r.elements},
                       {"dtype_bytes", r.dtype_bytes},
                       {"bytes", r.bytes},
                       {"placement", r.on_host ? "host" : "device"},
                       {"created", r.created},
                       {"freed", r.freed},
                       {"why", r.why},
                       {"tags", r.tags},
                       {"scaled_by_activation_factor", r.scale_group > 0},
                       {"counted", r.counted}});
    return out;
}

std::string TensorInventory::table() const {
    std::ostringstream out;
    out << "name | component | scope | shape | bytes | place | alive | tags | why\n";
    for (const auto& r : rows) {
        std::string tags;
        for (const auto& t : r.tags) tags += (tags.empty() ? "" : ",") + t;
        out << r.name << " | " << component_name(r.component) << " | " << r.scope << " | "
            << (r.shape.empty() ? "-" : r.shape) << " | " << format_count(r.bytes) << " B"
            << (r.scale_group > 0 ? " ×factor" : "") << " | " << (r.on_host ? "host" : "device") << " | "
            << lifetime(r) << " | " << (tags.empty() ? "-" : tags) << " | " << r.why << "\n";
    }
    return out.str();
}

}  // namespace wingspan
