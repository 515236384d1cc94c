#pragma once
#include <cstdint>
#include <string>

namespace wingspan {

inline constexpr double kGB = 1e9;                       // decimal gigabyte
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0; // binary gibibyte

enum class ByteUnit { GB, GiB };

// "18.4 GB" / "17.1 GiB"; small values switch to MB/MiB so nothing reads as "0.0 GB".
std::string format_bytes(double bytes, ByteUnit unit = ByteUnit::GB, int decimals = 1);
// "8,030,261,248"
std::string format_count(std::int64_t n);
// "8.03B", "134.5M"
std::string format_params_short(std::int64_t n);
// Parses "8b", "135m", "1.5B", "70e9"; throws std::invalid_argument.
std::int64_t parse_param_count(const std::string& text);
// Parses "16GB", "24GiB", "1.5e9", "512MiB", plain integers are bytes; throws std::invalid_argument.
std::int64_t parse_bytes(const std::string& text);

}  // namespace wingspan
