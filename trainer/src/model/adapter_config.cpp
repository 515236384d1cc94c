#include "model/adapter_config.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "wingspan/trainer_invocation.hpp"
#include "model/model_source.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/safetensors.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string dims(const std::vector<std::int64_t>& shape) {
    std::string s;
    for (auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
    return s.empty() ? "a scalar" : s;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

double AdapterConfig::scaling() const {
    return rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
}

AdapterConfig read_adapter_config(const fs::path& adir, const BaseShape& base_shape) {
    const fs::path file = adir / "adapter_config.json";
    const json ac = read_json_object(file);   // the bounded reader: a regular file, bounded size and depth
    const std::string where = file.string() + ": ";
    AdapterConfig c;
    const json r = ac.value("r", json());
    if (!r.is_number_integer() || r.get<std::int64_t>() < 1 || r.get<std::int64_t>() > kMaxAdapterRank)
        throw InputError(where + "\"r\" must be an integer from 1 to " + std::to_string(kMaxAdapterRank) + " (it is " +
                         (r.is_null() ? std::string("missing") : r.dump()) + ")");
    c.rank = r.get<std::int64_t>();
    const json alpha = ac.value("lora_alpha", json(8));   // PEFT's default
    if (!alpha.is_number() || !std::isfinite(alpha.get<double>()) || std::fabs(alpha.get<double>()) > 1e6)
        throw InputError(where + "\"lora_alpha\" must be a finite number (it is " + alpha.dump() + ")");
    c.alpha = alpha.get<double>();
    const json rs = ac.value("use_rslora", json(false));
    if (!rs.is_boolean()) throw InputError(where + "\"use_rslora\" must be true or false");
    c.rslora = rs.get<bool>();
    const json targets = ac.value("target_modules", json());
    if (!targets.is_array() || targets.empty())
        throw InputError(where + "\"target_modules\" must be a non-empty list of module names");
    std::string list;
    for (const auto& t : targets) {
        if (!t.is_string()) throw InputError(where + "\"target_modules\" must hold names (strings), not " + t.dump());
        list += (list.empty() ? "" : ",") + t.get<std::string>();
    }
    try {
        c.targets = parse_targets(list);
    } catch (const InputError& e) {
        throw InputError(where + "target_modules: " + e.what());
    }
    // The planner knows LoRA on the LM head; this trainer adapts the decoder layers' linears, and an
    // adapter it would not load must not be dropped in silence.
    if (c.targets.count(LinearRole::Head))
        throw InputError(where + "target_modules: lm_head (an adapter on the LM head) is not supported by wingspan-train, "
                                 "which adapts the decoder layers' linears");

    // The tensors, from the header alone: A is r x in, B is out x r, for a weight the base has.
    const fs::path weights = adir / "adapter_model.safetensors";
    const safetensors::Header h = safetensors::read_header(weights);   // regular file, bounded header
    const std::string prefix = "base_model.model.";
    std::size_t pairs = 0;
    for (const auto& t : h.tensors) {
        const bool a = ends_with(t.name, ".lora_A.weight"), b = ends_with(t.name, ".lora_B.weight");
        if (!a && !b) continue;
        const std::string stem = t.name.substr(0, t.name.size() - std::string(".lora_A.weight").size());
        const std::string base_name = (stem.rfind(prefix, 0) == 0 ? stem.substr(prefix.size()) : stem) + ".weight";
        const auto base = base_shape(base_name);
        if (!base)
            throw InputError(weights.string() + ": " + t.name + " adapts " + base_name +
                             ", which the base model does not have (another base model?)");
        if (base->size() != 2 || t.shape.size() != 2)
            throw InputError(weights.string() + ": " + t.name + " is " + dims(t.shape) + ", not a matrix for " +
                             base_name + " (" + dims(*base) + ")");
        const std::vector<std::int64_t> want = a ? std::vector<std::int64_t>{c.rank, (*base)[1]}
                                                 : std::vector<std::int64_t>{(*base)[0], c.rank};
        if (t.shape != want)
            throw InputError(weights.string() + ": " + t.name + " is " + dims(t.shape) + " but r " +
                             std::to_string(c.rank) + " and the base's " + base_name + " (" + dims(*base) +
                             ") need " + dims(want));
        pairs += a ? 1 : 0;
    }
    if (pairs == 0) throw InputError(weights.string() + " holds no LoRA tensors (lora_A / lora_B weights)");
    return c;
}

}  // namespace wingspan::train
