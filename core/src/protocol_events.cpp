#include "wingspan/protocol_events.hpp"

namespace wingspan::protocol {

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
    if (auto p = e.body.find("preference"); p != e.body.end() && p->is_object()) {
        if (auto m = p->find("reward_margin"); m != p->end() && m->is_number()) s.reward_margin = m->get<double>();
        if (auto a = p->find("reward_accuracy"); a != p->end() && a->is_number()) s.reward_accuracy = a->get<double>();
    }
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
