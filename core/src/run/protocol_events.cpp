#include "wingspan/protocol_events.hpp"

#include <algorithm>

namespace wingspan::protocol {

namespace {

using nlohmann::json;

// A member of an object field, or nullptr when the field or the member is missing.
const json* member(const json& body, const char* object, const char* name) {
    auto o = body.find(object);
    if (o == body.end() || !o->is_object()) return nullptr;
    auto m = o->find(name);
    return m == o->end() ? nullptr : &*m;
}

std::string member_string(const json& body, const char* object, const char* name, std::string fallback = {}) {
    const json* m = member(body, object, name);
    return m && m->is_string() ? m->get<std::string>() : fallback;
}

std::int64_t member_int(const json& body, const char* object, const char* name) {
    const json* m = member(body, object, name);
    return m && m->is_number_integer() ? m->get<std::int64_t>() : 0;
}

double member_number(const json& body, const char* object, const char* name, double fallback) {
    const json* m = member(body, object, name);
    return m && m->is_number() ? m->get<double>() : fallback;
}

PrecisionChoice precision_of(const json& body) {
    PrecisionChoice p;
    p.precision = member_string(body, "precision", "precision");
    const json* a = member(body, "precision", "auto");
    p.automatic = a && a->is_boolean() && a->get<bool>();
    p.reason = member_string(body, "precision", "reason");
    return p;
}

bool bool_field(const json& body, const char* name) {
    auto it = body.find(name);
    return it != body.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::optional<HelloEvent> as_hello(const Event& e) {
    if (e.type != EventType::Hello) return std::nullopt;
    HelloEvent h;
    h.trainer = e.string_field("trainer");
    h.version = e.string_field("version");
    h.command = e.string_field("command");
    h.device = e.string_field("device", "cpu");
    h.device_name = e.string_field("device_name");
    h.framework = e.string_field("framework");
    h.external = bool_field(e.body, "external");
    h.threads = e.int_field("threads");
    h.rank = e.rank();
    h.world_size = e.world_size();
    h.pid = e.int_field("pid");
    h.params_total = member_int(e.body, "params", "total");
    h.params_trainable = member_int(e.body, "params", "trainable");
    h.sharding = member_string(e.body, "plan", "sharding");
    h.objective = member_string(e.body, "objective", "kind", "sft");
    h.precision = precision_of(e.body);
    if (auto p = e.body.find("plan"); p != e.body.end() && p->is_object()) h.plan = *p;
    return h;
}

std::optional<PredictedEvent> as_predicted(const Event& e) {
    if (e.type != EventType::Predicted) return std::nullopt;
    PredictedEvent p;
    p.components = e.components();
    if (auto it = e.body.find("component_maxima"); it != e.body.end() && it->is_object())
        for (const auto& [name, v] : it->items())
            if (auto c = component_from_name(name); c && v.is_number()) p.component_maxima[*c] = v.get<std::int64_t>();
    if (p.component_maxima.empty()) p.component_maxima = p.components;
    p.peak_bytes = e.int_field("peak_bytes");
    p.total_bytes = e.int_field("total_bytes");
    p.framework = e.string_field("framework");
    p.precision = precision_of(e.body);
    p.batch_rows = member_int(e.body, "batch", "rows");
    p.batch_cols = member_int(e.body, "batch", "cols");
    p.batch_tokens = member_int(e.body, "batch", "tokens");
    p.padding = member_string(e.body, "batch", "padding");
    // Negative or absent speeds read as "not predicted" (0); the calibration factor is 1 unless positive.
    p.tokens_per_s = std::max(0.0, e.number_field("tokens_per_s"));
    p.step_time_s = std::max(0.0, e.number_field("step_time_s"));
    if (const double scale = e.number_field("speed_scale"); scale > 0) p.speed_scale = scale;
    p.bf16_isa = member_string(e.body, "cpu", "bf16_isa");
    p.bf16_path = member_string(e.body, "cpu", "bf16_path");
    return p;
}

std::optional<MemoryEvent> as_memory(const Event& e) {
    if (e.type != EventType::Memory) return std::nullopt;
    MemoryEvent m;
    m.step = e.int_field("step");
    m.phase = e.string_field("phase");
    m.components = e.components();
    m.allocated_bytes = e.int_field("allocated_bytes");
    m.peak_bytes = e.int_field("peak_bytes");
    m.rss_bytes = e.int_field("rss_bytes");
    m.rss_peak_bytes = e.int_field("rss_peak_bytes");
    return m;
}

std::optional<StepEvent> as_step(const Event& e) {
    if (e.type != EventType::Step) return std::nullopt;
    StepEvent s;
    s.step = e.int_field("step");
    s.total_steps = e.int_field("total_steps");
    s.loss = e.number_field("loss");
    s.lr = e.number_field("lr");
    s.tokens_per_s = e.number_field("tokens_per_s");
    s.step_time_s = e.number_field("step_time_s");
    s.reward_margin = member_number(e.body, "preference", "reward_margin", s.reward_margin);
    s.reward_accuracy = member_number(e.body, "preference", "reward_accuracy", s.reward_accuracy);
    return s;
}

std::optional<EvalEvent> as_eval(const Event& e) {
    if (e.type != EventType::Eval) return std::nullopt;
    return EvalEvent{e.int_field("step"), e.number_field("loss")};
}

std::optional<CheckpointEvent> as_checkpoint(const Event& e) {
    if (e.type != EventType::Checkpoint) return std::nullopt;
    return CheckpointEvent{e.int_field("step"), e.string_field("path")};
}

std::optional<LogEvent> as_log(const Event& e) {
    if (e.type != EventType::Log) return std::nullopt;
    return LogEvent{e.string_field("level", "info"), e.string_field("message"), e.string_field("source")};
}

std::optional<ErrorEvent> as_error(const Event& e) {
    if (e.type != EventType::Error) return std::nullopt;
    return ErrorEvent{e.string_field("code"), e.string_field("message"), e.string_field("component"), e.int_field("bytes"),
                      e.int_field("available_bytes")};
}

std::optional<DoneEvent> as_done(const Event& e) {
    if (e.type != EventType::Done) return std::nullopt;
    return DoneEvent{e.string_field("reason"), e.int_field("steps"), e.string_field("checkpoint"), e.int_field("peak_bytes"),
                     e.int_field("rss_peak_bytes")};
}

}  // namespace wingspan::protocol
