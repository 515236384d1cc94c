#pragma once
// stdout carries only run-protocol lines (wingspan::protocol::encode); this is the one
// place that writes them, from any thread. Diagnostics go to stderr.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "wingspan/protocol.hpp"

namespace wingspan::train {

// Seconds since the process started (monotonic clock).
double elapsed_s();
// Writes one protocol line to stdout and flushes it.
void emit(protocol::EventType type, nlohmann::json fields = nlohmann::json::object());
void log_info(const std::string& message);
void log_warning(const std::string& message);
// Replaces invalid UTF-8 with U+FFFD so any text can go into a JSON string.
std::string valid_utf8(std::string_view text);

}  // namespace wingspan::train
