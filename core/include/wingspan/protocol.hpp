#pragma once
// The run protocol between wingspan-train and its launcher: one JSON object per line.
// docs/protocol.md is the specification; this is its only implementation.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "components.hpp"

namespace wingspan::protocol {

inline constexpr int kVersion = 1;

enum class EventType { Hello, Predicted, Memory, Step, Eval, Checkpoint, Log, Error, Done };
const char* to_string(EventType);
std::optional<EventType> event_type_from_string(std::string_view);

struct Event {
    EventType type;
    double t = 0;
    nlohmann::json body;    // the whole object, fields included

    // Component bytes of a predicted/memory event (unknown names are skipped).
    std::map<Component, std::int64_t> components() const;
    std::int64_t int_field(const char* name, std::int64_t fallback = 0) const;
    double number_field(const char* name, double fallback = 0) const;
    std::string string_field(const char* name, const std::string& fallback = {}) const;
    // The data-parallel rank that wrote the line (0 for lines without one: single processes,
    // older trainers) and, in `hello`, the job's number of ranks (1 without one).
    int rank() const { return static_cast<int>(int_field("rank", 0)); }
    int world_size() const { return static_cast<int>(int_field("world_size", 1)); }
};

struct ParseResult {
    std::optional<Event> event;
    std::string error;      // set when event is empty: why the line was rejected
};

// The device fields of a `memory` or `done` event (docs/protocol.md), with what a trainer that
// predates them means: the CPU, and reserved equal to allocated.
struct DeviceMemory {
    std::string device = "cpu";                        // "cpu", "cuda:0", "mps"
    std::int64_t reserved_bytes = 0;                   // memory: held by the device allocator now
    std::int64_t reserved_peak_bytes = 0;              // memory and done: its peak
    std::optional<std::int64_t> device_process_bytes;  // memory: NVML's figure for the process (CUDA)
    std::optional<std::int64_t> device_process_peak_bytes;   // done: its peak
};
DeviceMemory device_memory(const Event& e);

ParseResult parse_line(std::string_view line);
// One line (no trailing newline) with v, event and t set.
std::string encode(EventType type, double t, nlohmann::json fields = nlohmann::json::object());
nlohmann::json components_to_json(const std::map<Component, std::int64_t>& bytes);

}  // namespace wingspan::protocol
