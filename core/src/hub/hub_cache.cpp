// The Hub client's disk cache: one file per (endpoint, repo, revision, file, range), written
// to a temporary file and renamed into place, so a reader never sees a partial entry.
//
// Entry format: "wingspan-hub-cache 1\n", one line of JSON metadata (url without any token,
// size, total file size for ranges, fetch time), "\n", then the body bytes.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>

#include "hub/hub_internal.hpp"
#include "wingspan/confined_dir.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::hub {

namespace detail {

namespace {

constexpr const char* kMagic = "wingspan-hub-cache 1";

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

}  // namespace

std::string escape_component(const std::string& s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '_' || (c == '.' && i > 0);
        if (plain) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (out.empty()) out = "%";
    if (out.size() > 180) {   // stay well under NAME_MAX; keep it unique with a hash
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(s)));
        out = out.substr(0, 150) + "~" + buf;
    }
    return out;
}

std::filesystem::path cache_path(const std::filesystem::path& cache_dir,
                                 const std::string& endpoint, const std::string& repo_id,
                                 const std::string& revision, const std::string& file,
                                 const std::string& range) {
    std::string e = endpoint;
    while (!e.empty() && e.back() == '/') e.pop_back();
    std::string leaf = escape_component(file);
    if (!range.empty()) leaf += "@" + escape_component(range);
    return cache_dir / "v1" / escape_component(e) / escape_component(repo_id) /
           escape_component(revision) / leaf;
}

std::string utc_now_iso8601() {
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::optional<CachedResponse> DiskCache::load(const CacheKey& key) const {
    if (!enabled()) return std::nullopt;
    auto path = cache_path(dir_, key.endpoint, key.repo, key.revision, key.file, key.range);
    std::string text;
    try {
        text = read_regular_file(path);   // regular and bounded: a planted FIFO never blocks
    } catch (const InputError&) {
        return std::nullopt;
    }
    const size_t magic_end = text.find('\n');
    const size_t meta_end = magic_end == std::string::npos ? magic_end : text.find('\n', magic_end + 1);
    if (meta_end == std::string::npos || text.compare(0, magic_end, kMagic) != 0) return std::nullopt;
    const nlohmann::json meta =
        try_parse_untrusted_json(std::string_view(text).substr(magic_end + 1, meta_end - magic_end - 1)).value_or(nlohmann::json());
    if (!meta.is_object() || !meta.contains("size") || !meta["size"].is_number_unsigned())
        return std::nullopt;
    CachedResponse r;
    r.body = text.substr(meta_end + 1);
    if (r.body.size() != meta["size"].get<std::uint64_t>()) return std::nullopt;   // damaged
    if (meta.contains("total_size") && meta["total_size"].is_number_unsigned())
        r.total_size = meta["total_size"].get<std::uint64_t>();
    if (meta.contains("fetched_at") && meta["fetched_at"].is_string())
        r.fetched_at = meta["fetched_at"].get<std::string>();
    return r;
}

std::string DiskCache::store(const CacheKey& key, const std::string& url,
                             const CachedResponse& r) const {
    if (!enabled()) return {};
    namespace fs = std::filesystem;
    auto path = cache_path(dir_, key.endpoint, key.repo, key.revision, key.file, key.range);

    nlohmann::json meta = {{"url", url},
                           {"size", static_cast<std::uint64_t>(r.body.size())},
                           {"fetched_at", r.fetched_at.empty() ? utc_now_iso8601() : r.fetched_at}};
    if (!key.range.empty()) meta["range"] = key.range;
    if (r.total_size) meta["total_size"] = *r.total_size;
    try {
        // No link below the cache folder is followed (a planted one would redirect the write).
        const ConfinedDir dir = ConfinedDir::open(dir_, path.parent_path().lexically_relative(dir_), true);
        AtomicFile out(dir, path.filename().string());   // exclusive temporary, checked writes, fsync, rename
        out.write(std::string(kMagic) + '\n' + meta.dump() + '\n');
        out.write(r.body);
        out.commit();
    } catch (const IoError& e) {
        return e.what();
    }
    return {};
}

}  // namespace detail

}  // namespace wingspan::hub
