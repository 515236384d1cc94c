#pragma once
// Helpers shared by the Hub test suites: a loopback-only environment, options pointing at the
// test server, serving fixtures, and capturing HubError.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "fixtures.hpp"
#include "test_http_server.hpp"
#include "wingspan/hub.hpp"

namespace hubtest {

// Nothing in these tests may leave the machine: no proxies, no default endpoint that is not
// loopback, no token or cache from the person running the tests.
inline void isolate_environment(const std::filesystem::path& scratch) {
    for (const char* v : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                          "ALL_PROXY", "no_proxy", "NO_PROXY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                          "HF_HUB_OFFLINE", "WINGSPAN_OFFLINE", "HF_HOME", "CURL_CA_BUNDLE"})
        ::unsetenv(v);
    // Port 9 (discard) on loopback: connection refused if any default were ever used.
    ::setenv("HF_ENDPOINT", "http://127.0.0.1:9", 1);
    ::setenv("HF_TOKEN_PATH", (scratch / "no-such-token").c_str(), 1);
    ::setenv("XDG_CACHE_HOME", (scratch / "xdg-cache").c_str(), 1);
}

inline wingspan::hub::HubOptions options_for(const std::string& endpoint,
                                             const std::filesystem::path& cache_dir) {
    wingspan::hub::HubOptions o;
    o.endpoint = endpoint;
    o.token.clear();
    o.revision = "main";
    o.cache_dir = cache_dir;
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.total_timeout = std::chrono::milliseconds(5000);
    o.offline = false;
    o.prefer_cache = false;
    o.ca_bundle.clear();
    return o;
}

inline std::string resolve_path(const std::string& repo, const std::string& file,
                                const std::string& revision = "main") {
    return "/" + repo + "/resolve/" + revision + "/" + file;
}

inline void serve(TestHttpServer& s, const Fixture& f, const std::string& revision = "main") {
    for (const auto& [name, bytes] : f.files()) s.file(resolve_path(f.repo, name, revision), bytes);
}

inline void write_folder(const std::filesystem::path& dir, const Fixture& f) {
    std::filesystem::create_directories(dir);
    for (const auto& [name, bytes] : f.files()) {
        std::ofstream out(dir / name, std::ios::binary);
        out << bytes;
    }
}

inline int count_files(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) return 0;
    int n = 0;
    for (auto& e : std::filesystem::recursive_directory_iterator(dir, ec))
        if (e.is_regular_file()) ++n;
    return n;
}

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

template <class F>
std::optional<wingspan::hub::HubError> capture(F&& f) {
    try {
        f();
    } catch (const wingspan::hub::HubError& e) {
        return e;
    }
    return std::nullopt;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace hubtest
