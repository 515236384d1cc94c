// What the Hub client takes from its surroundings: the endpoint
// (HF_ENDPOINT), the token (HF_TOKEN, HF_TOKEN_PATH, HF_HOME's token file), the cache, the offline
// switch and the CA bundle; and the names of its error kinds.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "hub/hub_internal.hpp"
#include "wingspan/user_dirs.hpp"

namespace wingspan::hub {

std::string detail::env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

namespace {

using detail::env;

bool truthy(const std::string& v) {
    std::string s;
    for (char c : v) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s == "1" || s == "true" || s == "yes" || s == "on";
}

std::filesystem::path home_dir() { return home_directory(); }

}  // namespace

// ---- HubError ------------------------------------------------------------------------

const char* hub_error_kind_name(HubErrorKind k) {
    switch (k) {
        case HubErrorKind::InvalidId: return "invalid_id";
        case HubErrorKind::Offline: return "offline";
        case HubErrorKind::Dns: return "dns";
        case HubErrorKind::Timeout: return "timeout";
        case HubErrorKind::Tls: return "tls";
        case HubErrorKind::Unauthorized: return "unauthorized";
        case HubErrorKind::NotFound: return "not_found";
        case HubErrorKind::RateLimited: return "rate_limited";
        case HubErrorKind::ServerError: return "server_error";
        case HubErrorKind::HttpError: return "http_error";
        case HubErrorKind::TooLarge: return "too_large";
        case HubErrorKind::MalformedJson: return "malformed_json";
        case HubErrorKind::BadSafetensors: return "bad_safetensors";
        case HubErrorKind::UnsupportedConfig: return "unsupported_config";
        case HubErrorKind::NotCached: return "not_cached";
        case HubErrorKind::Cancelled: return "cancelled";
        case HubErrorKind::Network: return "network";
        case HubErrorKind::Filesystem: return "filesystem";
    }
    return "unknown";
}

HubError::HubError(HubErrorKind kind, const std::string& message, long http_status,
                   std::optional<long> retry_after_seconds)
    : InputError(message), kind_(kind), http_status_(http_status), retry_after_(retry_after_seconds) {}

// ---- Defaults from the environment ----------------------------------------------------

std::string strip_userinfo(const std::string& endpoint) {
    const auto scheme = endpoint.find("://");
    const size_t host_from = scheme == std::string::npos ? 0 : scheme + 3;
    const size_t host_end = std::min(endpoint.find('/', host_from), endpoint.size());
    const auto at = endpoint.rfind('@', host_end == 0 ? 0 : host_end - 1);
    if (at == std::string::npos || at < host_from || at >= host_end) return endpoint;
    return endpoint.substr(0, host_from) + endpoint.substr(at + 1);
}

std::string default_endpoint() {
    std::string e = strip_userinfo(detail::trim(env("HF_ENDPOINT")));
    while (!e.empty() && e.back() == '/') e.pop_back();
    return e.empty() ? std::string(kPublicEndpoint) : e;
}

std::string token_from_environment() {
    for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
        std::string t = detail::trim(env(name));
        if (!t.empty()) return t;
    }
    std::filesystem::path file;
    if (std::string p = env("HF_TOKEN_PATH"); !p.empty()) {
        file = p;
    } else if (std::string hf_home = env("HF_HOME"); !hf_home.empty()) {
        file = std::filesystem::path(hf_home) / "token";
    } else if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) {
        file = std::filesystem::path(xdg) / "huggingface" / "token";
    } else if (auto h = home_dir(); !h.empty()) {
        file = h / ".cache" / "huggingface" / "token";
    }
    if (file.empty()) return {};
    std::ifstream in(file);
    if (!in) return {};
    std::string line;
    std::getline(in, line);
    return detail::trim(line);
}

std::filesystem::path default_cache_dir() {
    if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/')
        return std::filesystem::path(xdg) / "wingspan" / "hub";
    if (auto h = home_dir(); !h.empty()) return h / ".cache" / "wingspan" / "hub";
    return {};
}

bool offline_from_environment() {
    return truthy(env("HF_HUB_OFFLINE")) || truthy(env("WINGSPAN_OFFLINE"));
}

std::string ca_bundle_from_environment() {
    if (std::string v = env("CURL_CA_BUNDLE"); !v.empty()) return v;
    return env("SSL_CERT_FILE");
}

}  // namespace wingspan::hub
