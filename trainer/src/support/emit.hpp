#pragma once
// stdout carries only run-protocol lines (wingspan::protocol::encode); this is the one
// place that writes them, from any thread. Diagnostics go to stderr.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "wingspan/protocol.hpp"

namespace wingspan::train {

// Seconds since the process started (monotonic clock), or since its launcher started.
double elapsed_s();
// The start as steady_clock nanoseconds, for the ranks a launcher starts.
std::int64_t clock_origin_ns();
// This process's place in a data-parallel job: every event then carries `rank` (0 in a single
// process) and `hello` carries `world_size` and `pid`. An event given its own `rank` keeps it.
void set_rank(int rank, int world_size);
// Writes one protocol line to stdout and flushes it.
void emit(protocol::EventType type, nlohmann::json fields = nlohmann::json::object());
void log_info(const std::string& message);
void log_warning(const std::string& message);
// Replaces invalid UTF-8 with U+FFFD so any text can go into a JSON string.
std::string valid_utf8(std::string_view text);

}  // namespace wingspan::train
