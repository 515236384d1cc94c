#pragma once
// Shared internals of the Hub client (hub_http.cpp, hub_cache.cpp, hub.cpp, model_import.cpp).
// Not installed, not included outside core/src.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wingspan/hub.hpp"
#include "wingspan/safetensors.hpp"

namespace wingspan::hub::detail {

// ---- HTTP (hub_http.cpp) --------------------------------------------------------------

struct ByteRange {
    std::uint64_t first = 0;
    std::uint64_t last = 0;   // inclusive
    std::uint64_t length() const { return last - first + 1; }
    std::string header_value() const;   // "bytes=0-7"
};

struct HttpResponse {
    long status = 0;
    std::string body;                            // capped for error statuses
    std::map<std::string, std::string> headers;  // lower-case name -> value (final hop)
    std::string url;                             // final URL after redirects
    std::optional<std::uint64_t> total_size;     // whole file size (Content-Range / -Length)
};

// One libcurl easy handle reused for a whole import (connection reuse). Follows redirects
// itself so the bearer token only goes to the endpoint's own origin. Throws HubError for
// transport failures (DNS, refused, timeout, TLS, oversized, cancelled, broken transfer);
// returns every HTTP status for the caller to judge.
class HttpClient {
public:
    HttpClient(const HubOptions& options, CancelFlag cancel);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // `what` names the request in messages ("config.json of Qwen/Qwen2.5-7B").
    HttpResponse get(const std::string& url, const std::optional<ByteRange>& range,
                     const std::string& what);
    // A 2xx body goes to `sink` as it arrives instead of into the response (a stalled
    // transfer, under 1 byte/s for connect_timeout x 3, fails as a Timeout). The sink gets at
    // most `limit` bytes, nor more than the answer's Content-Length: a server sending more is
    // cut off there and get_to throws a TooLarge error, so a lying server cannot fill the disk.
    // The sink returns false to stop the transfer (then get_to throws; the caller knows why).
    using BodySink = std::function<bool(const char* data, std::size_t size)>;
    HttpResponse get_to(const std::string& url, const std::optional<ByteRange>& range,
                        const std::string& what, const BodySink& sink, std::uint64_t limit);

private:
    HttpResponse get_via(const std::string& url, const std::optional<ByteRange>& range,
                         const std::string& what, const BodySink* sink, std::uint64_t limit);
    HttpResponse get_once(const std::string& url, const std::optional<ByteRange>& range,
                          const std::string& what, bool send_token, long timeout_ms,
                          const BodySink* sink, std::uint64_t limit);
    const HubOptions& options_;
    CancelFlag cancel_;
    void* curl_ = nullptr;
};

// scheme://host:port of a URL, lower-case, default port filled in; "" if unparsable.
std::string url_origin(const std::string& url);
std::string url_host(const std::string& url);
std::string percent_encode(const std::string& s, bool keep_slash);
std::string trim(const std::string& s);

// ---- Disk cache (hub_cache.cpp) -------------------------------------------------------

struct CacheKey {
    std::string endpoint, repo, revision, file, range;
};

struct CachedResponse {
    std::string body;
    std::optional<std::uint64_t> total_size;
    std::string fetched_at;   // ISO 8601 UTC
};

class DiskCache {
public:
    explicit DiskCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
    bool enabled() const { return !dir_.empty(); }
    std::optional<CachedResponse> load(const CacheKey& key) const;
    // Writes to a temporary file beside the entry and renames it into place. Returns an
    // empty string on success, else what went wrong (the import still succeeds).
    std::string store(const CacheKey& key, const std::string& url, const CachedResponse& r) const;

private:
    std::filesystem::path dir_;
};

std::string utc_now_iso8601();

// The error the import gives for an HTTP answer it did not expect (401/403 gated, 404,
// 416, 429 with Retry-After, 5xx, others), for other Hub clients (the download) to share
// its messages. `typed` is the id as the user typed it, `file` the file asked for.
HubError status_error(const HttpResponse& r, const std::string& typed, const std::string& repo,
                      const HubOptions& opt, const std::string& file, const std::string& what);

// The environment variable `name`, or "" when it is not set (hub_environment.cpp).
std::string env(const char* name);
// Whether `s` is a non-empty run of hex digits (a commit, a blob id, a sha256).
bool is_hex(const std::string& s);

// normalize_repo_id without exceptions: the id, or nullopt with `why_not` saying why (" (it is
// empty)", starting with a space, as the error's message goes on).
std::optional<std::string> parse_repo_id(const std::string& typed, const std::string& endpoint,
                                         std::string* why_not = nullptr);

// ---- Shared import logic (model_import.cpp) ------------------------------------------

struct ReadHeader {
    std::string file;               // as named in the repo or folder
    safetensors::Header header;
};

// An exception's message without library tags such as "[json.exception.parse_error.101] ".
std::string plain_message(const std::exception& e);
std::string without_library_tags(std::string message);   // the same for a message as text
// Reads and checks config.json text: JSON object, then Architecture::from_hf_config.
// `where` names the file in messages.
void read_config(ImportedModel& m, const std::string& config_text, const std::string& where);
// Parses model.safetensors.index.json: the sorted unique shard files of its weight_map.
std::vector<std::string> parse_index(const std::string& text, const std::string& where,
                                     nlohmann::json& index_out);
// A shard name from an index must stay inside the repo/folder.
bool safe_relative_file(const std::string& file);
// Counts per dtype, cross-checks the index, chooses the exact count, fills warnings and
// the profile. `index` may be null.
void finish_import(ImportedModel& m, const std::vector<ReadHeader>& headers,
                   const nlohmann::json* index);

}  // namespace wingspan::hub::detail
