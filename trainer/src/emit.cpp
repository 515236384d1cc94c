#include "emit.hpp"

#include <chrono>
#include <cstdio>
#include <mutex>

namespace wingspan::train {

namespace {
const auto g_start = std::chrono::steady_clock::now();
std::mutex g_out_mutex;
}  // namespace

double elapsed_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
}

void emit(protocol::EventType type, nlohmann::json fields) {
    std::string line = protocol::encode(type, elapsed_s(), std::move(fields));
    line.push_back('\n');
    std::lock_guard<std::mutex> lock(g_out_mutex);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
}

void log_info(const std::string& message) {
    emit(protocol::EventType::Log, {{"level", "info"}, {"message", valid_utf8(message)}});
}

void log_warning(const std::string& message) {
    emit(protocol::EventType::Log, {{"level", "warning"}, {"message", valid_utf8(message)}});
}

std::string valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        bool ok = len > 0 && i + len <= s.size();
        for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
        if (ok && len > 1) {
            // Reject overlong forms and surrogates, as the JSON encoder would.
            unsigned cp = c & (0xFF >> (len + 1));
            for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
            const unsigned min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
            ok = cp >= min_cp[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
        }
        if (ok) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out.append("\xEF\xBF\xBD");
            ++i;
        }
    }
    return out;
}

}  // namespace wingspan::train
