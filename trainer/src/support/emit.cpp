#include "support/emit.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <unistd.h>

namespace wingspan::train {

namespace {
// A rank started by `--nproc` counts from its launcher's start (steady_clock is the system's
// monotonic clock), so the relayed stream's `t` is one clock.
std::chrono::steady_clock::time_point start_time() {
    if (const char* v = std::getenv("WINGSPAN_CLOCK_ORIGIN_NS"); v && *v)
        return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(std::strtoll(v, nullptr, 10)));
    return std::chrono::steady_clock::now();
}
const auto g_start = start_time();
std::mutex g_out_mutex;
int g_rank = 0, g_world_size = 1;
}  // namespace

void set_rank(int rank, int world_size) {
    g_rank = rank;
    g_world_size = world_size;
}

std::int64_t clock_origin_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(g_start.time_since_epoch()).count();
}

double elapsed_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
}

void emit(protocol::EventType type, nlohmann::json fields) {
    if (!fields.is_object()) fields = nlohmann::json::object();
    if (!fields.contains("rank")) fields["rank"] = g_rank;
    if (type == protocol::EventType::Hello) {
        fields["world_size"] = g_world_size;
        fields["pid"] = static_cast<long>(::getpid());
    }
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
