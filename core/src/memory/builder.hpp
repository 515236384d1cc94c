#pragma once
// What every part of the inventory builder shares: the plan's inputs as the framework runs them
// (PlanContext) and the writer that appends rows (RowWriter). Internal to core's memory model.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memory/storage_terms.hpp"
#include "memory/objective_terms.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/tensor_inventory.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

struct PlanContext {
    const Architecture& arch;           // as the framework builds it (as_built)
    const TrainingSetup& setup;         // one forward of the policy (forward_setup)
    const TrainingSetup& asked;         // as the user gave it
    const FrameworkProfile& fw;         // with the setup's techniques applied
    ObjectiveShape objective;
    std::vector<TensorGroup> groups;
    bool trains = false, lora = false;
    Quantization quant = Quantization::None;
    Storage st{};
    bool upcast_plain = false;          // QLoRA preparation upcasts non-quantized 16-bit params
    int frozen_bytes = 2;
    std::int64_t Lg = 0;                // layers with adapters
    std::int64_t N = 1;                 // devices
    std::int64_t opt_div = 1, grad_div = 1, param_div = 1;
    std::string per_dev;                // " / N devices" where sharded

    PlanContext(const Architecture& a, const TrainingSetup& s, const TrainingSetup& asked_setup, const FrameworkProfile& f);
};

// Appends rows to the inventory; a shown row becomes a MemoryTerm (in row order, as before).
class RowWriter {
public:
    explicit RowWriter(TensorInventory& inv) : inv_(inv) {}
    // A row (kept only when its bytes are not 0); returns its bytes.
    std::int64_t add(TensorRow row);
    // A row explained by a term, alive the whole step (counted) or counted in no phase.
    std::int64_t shown(TensorRow row, std::string formula, std::map<std::string, double> inputs);
    // Bytes of `c` the phase `phase` holds beyond the whole-step rows: one row alive in that phase.
    void moment(const std::string& phase, Component c, std::int64_t bytes, std::string name, std::string why,
                std::vector<std::string> tags = {});
    void begin_phase(const std::string& name) { inv_.phases.push_back(name); }
    // Terms the objective's functions appended (objective_terms.cpp) as explanation rows.
    void adopt_terms(const std::vector<MemoryTerm>& terms, const std::string& why);
    TensorInventory& inventory() { return inv_; }

private:
    TensorInventory& inv_;
};

// A row's description: the fields besides bytes and the term text.
TensorRow row(std::string name, Component c, std::string scope, std::string shape, std::int64_t elements,
              double dtype_bytes, std::string why, std::vector<std::string> tags = {});

// A row alive through the whole step (loaded before it, held to its end).
inline TensorRow held(TensorRow r, std::int64_t bytes, bool host = false) {
    r.bytes = bytes;
    r.on_host = host;
    return r;
}
// A term's figure that the phases count through their own rows (counted in no phase itself).
inline TensorRow figure(TensorRow r, std::int64_t bytes, bool host = false) {
    r = held(std::move(r), bytes, host);
    r.counted = false;
    return r;
}
inline const char* dtype_label(int bytes) { return bytes == 4 ? "fp32" : bytes == 2 ? "16-bit" : "8-bit"; }

// The MemoryTerms written from the shown rows, in order.
std::vector<MemoryTerm> terms_of(const TensorInventory& inv);

}  // namespace wingspan
