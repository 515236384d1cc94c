#include "builder.hpp"

#include <algorithm>

namespace wingspan {

PlanContext::PlanContext(const Architecture& a, const TrainingSetup& s, const TrainingSetup& asked_setup,
                         const FrameworkProfile& f)
    : arch(a), setup(s), asked(asked_setup), fw(f), objective(objective_shape(asked_setup)), groups(a.tensor_groups()) {
    trains = setup.trains();
    lora = setup.method == Method::Lora || setup.method == Method::Qlora;
    quant = setup.effective_quantization();
    st = resolve_storage(fw, setup);
    // QLoRA preparation may upcast every non-quantized 16-bit parameter to fp32.
    upcast_plain = quant != Quantization::None && setup.method == Method::Qlora && fw.qlora_upcast_non_quantized;
    frozen_bytes = upcast_plain ? 4 : st.frozen;
    Lg = lora ? adapted_layers(arch, setup) : arch.layers;
    N = std::max<std::int64_t>(1, setup.devices);
    const bool shard_optimizer = setup.sharding == Sharding::Zero1 || setup.sharding == Sharding::Zero2 ||
                                 setup.sharding == Sharding::Zero3 || setup.sharding == Sharding::Fsdp;
    const bool shard_grads =
        setup.sharding == Sharding::Zero2 || setup.sharding == Sharding::Zero3 || setup.sharding == Sharding::Fsdp;
    const bool shard_params = setup.sharding == Sharding::Zero3 || setup.sharding == Sharding::Fsdp;
    opt_div = (shard_optimizer && N > 1) ? N : 1;
    grad_div = (shard_grads && N > 1) ? N : 1;
    param_div = (shard_params && N > 1) ? N : 1;
    per_dev = N > 1 ? " / " + std::to_string(N) + " devices" : "";
}

TensorRow row(std::string name, Component c, std::string scope, std::string shape, std::int64_t elements,
              double dtype_bytes, std::string why, std::vector<std::string> tags) {
    TensorRow r;
    r.name = std::move(name);
    r.component = c;
    r.scope = std::move(scope);
    r.shape = std::move(shape);
    r.elements = elements;
    r.dtype_bytes = dtype_bytes;
    r.why = std::move(why);
    r.tags = std::move(tags);
    return r;
}

std::int64_t RowWriter::add(TensorRow r) {
    const std::int64_t bytes = r.bytes;
    if (bytes != 0) inv_.rows.push_back(std::move(r));
    return bytes;
}

std::int64_t RowWriter::shown(TensorRow r, std::string formula, std::map<std::string, double> inputs) {
    r.shown = true;
    r.formula = std::move(formula);
    r.inputs = std::move(inputs);
    return add(std::move(r));
}

void RowWriter::moment(const std::string& phase, Component c, std::int64_t bytes, std::string name, std::string why,
                       std::vector<std::string> tags) {
    TensorRow r = row(std::move(name), c, "this phase", "", 0, 0, std::move(why), std::move(tags));
    r.bytes = bytes;
    r.created = r.freed = phase;
    add(std::move(r));
}

void RowWriter::adopt_terms(const std::vector<MemoryTerm>& terms, const std::string& why) {
    for (const auto& t : terms) {
        TensorRow r = row(t.formula, t.component, "global", "", 0, 0, why, {"objective"});
        r.bytes = t.bytes;
        r.on_host = t.on_host;
        r.counted = false;
        shown(std::move(r), t.formula, t.inputs);
    }
}

std::vector<MemoryTerm> terms_of(const TensorInventory& inv) {
    std::vector<MemoryTerm> out;
    for (const auto& r : inv.rows)
        if (r.shown && r.bytes > 0) out.push_back({r.component, r.bytes, r.formula, r.inputs, r.on_host});
    return out;
}

}  // namespace wingspan
