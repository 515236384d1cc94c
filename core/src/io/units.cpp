#include "wingspan/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace wingspan {

std::string format_bytes(double bytes, ByteUnit unit, int decimals) {
    const bool binary = unit == ByteUnit::GiB;
    const double giga = binary ? kGiB : kGB;
    const double mega = binary ? 1024.0 * 1024.0 : 1e6;
    const double tera = binary ? kGiB * 1024.0 : 1e12;
    const double magnitude = std::fabs(bytes);
    double value;
    const char* suffix;
    if (magnitude > 0 && magnitude < (binary ? 1024.0 : 1000.0)) {
        // A few bytes (a 256-byte request in an OOM message) in bytes: "0.00 MiB" would read as nothing.
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.0f B", bytes);
        return buf;
    }
    if (magnitude >= tera) {
        value = bytes / tera;
        suffix = binary ? "TiB" : "TB";
    } else if (magnitude >= giga * 0.1 || magnitude == 0) {
        value = bytes / giga;
        suffix = binary ? "GiB" : "GB";
    } else {
        value = bytes / mega;
        suffix = binary ? "MiB" : "MB";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f %s", decimals, value, suffix);
    return buf;
}

std::string format_count(std::int64_t n) {
    std::string digits = std::to_string(n < 0 ? -n : n);
    std::string out;
    int since = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
        if (since == 3) {
            out.insert(out.begin(), ',');
            since = 0;
        }
        out.insert(out.begin(), *it);
        ++since;
    }
    return n < 0 ? "-" + out : out;
}

std::string format_params_short(std::int64_t n) {
    char buf[32];
    if (n >= 1'000'000'000)
        std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
    else if (n >= 1'000'000)
        std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
    else if (n >= 1000)
        std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
    return buf;
}

namespace {
// Splits "1.5GiB" into 1.5 and "gib" (lower-cased); throws on junk.
std::pair<double, std::string> split_number(const std::string& text, const char* what) {
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        throw std::invalid_argument("'" + text + "' is not " + what);
    }
    std::string suffix;
    for (size_t i = used; i < text.size(); ++i)
        if (!std::isspace(static_cast<unsigned char>(text[i])))
            suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    if (!std::isfinite(value) || value < 0)
        throw std::invalid_argument("'" + text + "' is not " + what);
    return {value, suffix};
}
}  // namespace

std::int64_t parse_param_count(const std::string& text) {
    auto [value, suffix] = split_number(text, "a parameter count (e.g. 8b, 135m)");
    double scale = 1;
    if (suffix == "b" || suffix == "g") scale = 1e9;
    else if (suffix == "m") scale = 1e6;
    else if (suffix == "k") scale = 1e3;
    else if (suffix == "t") scale = 1e12;
    else if (!suffix.empty())
        throw std::invalid_argument("'" + text + "' is not a parameter count (e.g. 8b, 135m)");
    return static_cast<std::int64_t>(std::llround(value * scale));
}

std::int64_t parse_bytes(const std::string& text) {
    auto [value, suffix] = split_number(text, "a byte size (e.g. 16GB, 12GiB, 512MiB)");
    double scale = 1;
    if (suffix.empty() || suffix == "b") scale = 1;
    else if (suffix == "kb") scale = 1e3;
    else if (suffix == "mb") scale = 1e6;
    else if (suffix == "gb") scale = 1e9;
    else if (suffix == "tb") scale = 1e12;
    else if (suffix == "kib") scale = 1024.0;
    else if (suffix == "mib") scale = 1024.0 * 1024;
    else if (suffix == "gib") scale = kGiB;
    else if (suffix == "tib") scale = kGiB * 1024;
    else throw std::invalid_argument("'" + text + "' is not a byte size (e.g. 16GB, 12GiB, 512MiB)");
    return static_cast<std::int64_t>(std::llround(value * scale));
}

}  // namespace wingspan
