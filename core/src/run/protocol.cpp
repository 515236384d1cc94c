#include "wingspan/protocol.hpp"

#include <array>

#include "wingspan/json_input.hpp"

namespace wingspan::protocol {

using nlohmann::json;

namespace {
constexpr std::array<std::pair<EventType, const char*>, 9> kEvents{{
    {EventType::Hello, "hello"},
    {EventType::Predicted, "predicted"},
    {EventType::Memory, "memory"},
    {EventType::Step, "step"},
    {EventType::Eval, "eval"},
    {EventType::Checkpoint, "checkpoint"},
    {EventType::Log, "log"},
    {EventType::Error, "error"},
    {EventType::Done, "done"},
}};

std::string quoted(std::string_view line) {
    constexpr size_t kMax = 120;
    std::string s(line.substr(0, kMax));
    if (line.size() > kMax) s += "…";
    return "'" + s + "'";
}
}  // namespace

const char* to_string(EventType t) {
    for (const auto& [type, name] : kEvents)
        if (type == t) return name;
    return "?";
}

std::optional<EventType> event_type_from_string(std::string_view s) {
    for (const auto& [type, name] : kEvents)
        if (s == name) return type;
    return std::nullopt;
}

std::map<Component, std::int64_t> Event::components() const {
    std::map<Component, std::int64_t> out;
    auto it = body.find("components");
    if (it == body.end() || !it->is_object()) return out;
    for (const auto& [name, value] : it->items()) {
        auto c = component_from_name(name);
        if (c && value.is_number()) out[*c] = value.get<std::int64_t>();
    }
    return out;
}

std::int64_t Event::int_field(const char* name, std::int64_t fallback) const {
    auto it = body.find(name);
    return it != body.end() && it->is_number() ? it->get<std::int64_t>() : fallback;
}

double Event::number_field(const char* name, double fallback) const {
    auto it = body.find(name);
    return it != body.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string Event::string_field(const char* name, const std::string& fallback) const {
    auto it = body.find(name);
    return it != body.end() && it->is_string() ? it->get<std::string>() : fallback;
}

DeviceMemory device_memory(const Event& e) {
    DeviceMemory d;
    d.device = e.string_field("device", "cpu");
    const std::int64_t allocated = e.int_field("allocated_bytes", 0);
    const std::int64_t peak = e.int_field("peak_bytes", 0);
    d.reserved_bytes = e.int_field("reserved_bytes", allocated);
    d.reserved_peak_bytes = e.int_field("reserved_peak_bytes", peak);
    auto optional = [&](const char* name) -> std::optional<std::int64_t> {
        auto it = e.body.find(name);
        if (it == e.body.end() || !it->is_number()) return std::nullopt;
        return it->get<std::int64_t>();
    };
    d.device_process_bytes = optional("device_process_bytes");
    d.device_process_peak_bytes = optional("device_process_peak_bytes");
    return d;
}

ParseResult parse_line(std::string_view line) {
    ParseResult r;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    std::string why;
    std::optional<json> parsed = try_parse_untrusted_json(line, &why);
    if (!parsed) {
        const bool deep = why.rfind("nested", 0) == 0;
        r.error = std::string("not a JSON object") + (deep ? " (" + why + ")" : "") + ": " + quoted(line);
        return r;
    }
    json j = std::move(*parsed);
    if (!j.is_object()) {
        r.error = "not a JSON object: " + quoted(line);
        return r;
    }
    auto v = j.find("v");
    // Compared as the whole number it is (read as an int, 4294967297 was version 1).
    if (v == j.end() || !v->is_number_unsigned() || v->get<std::uint64_t>() < 1) {
        r.error = "missing protocol version 'v' (a positive integer): " + quoted(line);
        return r;
    }
    if (v->get<std::uint64_t>() > std::uint64_t(kVersion)) {
        r.error = "protocol version " + std::to_string(v->get<std::uint64_t>()) + " is newer than this reader's " +
                  std::to_string(kVersion) + ": " + quoted(line);
        return r;
    }
    auto ev = j.find("event");
    if (ev == j.end() || !ev->is_string()) {
        r.error = "missing 'event': " + quoted(line);
        return r;
    }
    auto type = event_type_from_string(ev->get<std::string>());
    if (!type) {
        r.error = "unknown event '" + ev->get<std::string>() + "': " + quoted(line);
        return r;
    }
    auto t = j.find("t");
    if (t == j.end() || !t->is_number()) {
        r.error = "missing time 't': " + quoted(line);
        return r;
    }
    for (const char* field : {"rank", "world_size"}) {
        auto f = j.find(field);
        if (f != j.end() && !(f->is_number_integer() && f->get<std::int64_t>() >= 0)) {
            r.error = std::string("'") + field + "' is not a non-negative integer: " + quoted(line);
            return r;
        }
    }
    r.event = Event{*type, t->get<double>(), std::move(j)};
    return r;
}

std::string encode(EventType type, double t, json fields) {
    if (!fields.is_object()) fields = json::object();
    fields["v"] = kVersion;
    fields["event"] = to_string(type);
    fields["t"] = t;
    return fields.dump(-1, ' ', false, json::error_handler_t::replace);
}

json components_to_json(const std::map<Component, std::int64_t>& bytes) {
    json j = json::object();
    for (const auto& [c, b] : bytes) j[std::string(component_name(c))] = b;
    return j;
}

}  // namespace wingspan::protocol
