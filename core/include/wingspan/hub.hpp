#pragma once
// Any model by name: the Hugging Face Hub client and the local-folder import.
//
// Both read a model's config.json and its safetensors headers (never the weights) and count
// parameters and bytes per dtype exactly. Hub responses are cached on disk, keyed by
// (endpoint, repo, revision, file, byte range), so a model imported once imports again
// offline. Every failure is a HubError (an InputError: the CLI prints it and exits 2) whose
// message says what happened and what to do.
//
// Plain C++ (libcurl inside, not in this header). Calls block; the GUI runs them on a worker
// thread and passes a cancel flag. The progress callback runs on the calling thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "architecture.hpp"
#include "errors.hpp"
#include "profiles.hpp"

namespace wingspan::hub {

inline constexpr const char* kPublicEndpoint = "https://huggingface.co";

// $HF_ENDPOINT (trailing '/' and any user:password@ removed), else the public Hub.
std::string default_endpoint();
// The endpoint without "user:password@": credentials never reach profiles, cache paths or
// messages (a token goes in HF_TOKEN).
std::string strip_userinfo(const std::string& endpoint);
// $HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN, else the file huggingface-cli login writes
// ($HF_TOKEN_PATH, else $HF_HOME/token, else ~/.cache/huggingface/token); "" if none.
std::string token_from_environment();
// $XDG_CACHE_HOME/wingspan/hub, else ~/.cache/wingspan/hub.
std::filesystem::path default_cache_dir();
// HF_HUB_OFFLINE or WINGSPAN_OFFLINE set to 1/true/yes/on.
bool offline_from_environment();
// $CURL_CA_BUNDLE, else $SSL_CERT_FILE, else "" (the system store). Verification stays on.
std::string ca_bundle_from_environment();

struct HubOptions {
    std::string endpoint = default_endpoint();   // scheme://host[:port][/prefix]
    std::string token = token_from_environment(); // sent as "Authorization: Bearer", same origin only
    std::string revision = "main";                // branch, tag or commit
    std::filesystem::path cache_dir = default_cache_dir();  // empty: no disk cache
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds total_timeout{60'000};        // per file request, redirects included
    // The whole import: no request starts after it (so an import ends by deadline + total_timeout).
    std::chrono::milliseconds import_deadline{300'000};
    std::uint64_t max_response_bytes = 64ull << 20;          // every response body (and header JSON)
    int max_redirects = 10;
    bool offline = offline_from_environment();    // answer from the cache only, never connect
    bool prefer_cache = false;                    // a cached import is used without asking the Hub
    std::string ca_bundle = ca_bundle_from_environment();   // CA file to trust instead of the system store ("")
};

enum class HubErrorKind {
    InvalidId,          // not an owner/name id or a Hub model URL
    Offline,            // could not connect (connection refused, no route, no network)
    Dns,                // host name did not resolve
    Timeout,            // connect or total timeout
    Tls,                // certificate or TLS handshake failure
    Unauthorized,       // 401/403: gated or private, token missing or refused
    NotFound,           // 404: repo, revision or file
    RateLimited,        // 429
    ServerError,        // 5xx
    HttpError,          // any other unexpected HTTP answer (other 4xx, redirect loops, ...)
    TooLarge,           // a response or header over max_response_bytes
    MalformedJson,      // config.json or the index is not the JSON we expect
    BadSafetensors,     // a safetensors header that lies about its size or content
    UnsupportedConfig,  // config.json readable but not a decoder we can describe
    NotCached,          // offline and the cache has no copy
    Cancelled,          // the cancel flag was raised
    Network,            // other transfer failure (connection reset, truncated body, ...)
    Filesystem,         // local folder problems (missing, unreadable)
};
const char* hub_error_kind_name(HubErrorKind k);   // "not_found", "rate_limited", ...

class HubError : public InputError {
public:
    HubError(HubErrorKind kind, const std::string& message, long http_status = 0,
             std::optional<long> retry_after_seconds = std::nullopt);
    HubErrorKind kind() const { return kind_; }
    long http_status() const { return http_status_; }   // 0 when no HTTP answer was involved
    std::optional<long> retry_after_seconds() const { return retry_after_; }   // 429 only

private:
    HubErrorKind kind_;
    long http_status_;
    std::optional<long> retry_after_;
};

struct Progress {
    std::string message;      // "Fetching config.json", "Reading model-00002-of-00004.safetensors header"
    std::string file;         // file in the repo or folder
    int step = 0;             // files finished
    int steps = 0;            // files known so far (grows once the index has been read)
    bool from_cache = false;
};
using ProgressCallback = std::function<void(const Progress&)>;
// Raise (store true) from any thread to cancel; the import throws HubError(Cancelled) within
// about a second, caching nothing.
using CancelFlag = const std::atomic<bool>*;

struct DtypeTotals {
    std::int64_t elements = 0;
    std::uint64_t bytes = 0;
};

struct ImportedModel {
    std::string source;                 // "hub" or "folder"
    std::string repo_id;                // normalised owner/name (hub)
    std::string revision;               // hub
    std::string endpoint;               // hub
    std::filesystem::path folder;       // folder import: the folder (usable by wingspan-train)
    nlohmann::json config;              // config.json as read
    nlohmann::json arch_config;         // the part the architecture came from: config, or its
                                        // "text_config" for a multimodal model
    Architecture arch;                  // Architecture::from_hf_config(config)
    ModelProfile profile;               // id from the repo/folder, family "imported", arch
    std::vector<std::string> weight_files;   // safetensors files whose headers were read
    bool has_checkpoint = false;        // safetensors headers found and read
    std::int64_t checkpoint_parameters = 0;  // sum of tensor elements in the headers
    std::uint64_t checkpoint_bytes = 0;      // sum of tensor bytes in the headers
    std::map<std::string, DtypeTotals> by_dtype;   // "BF16" -> elements, bytes
    std::int64_t architecture_parameters = 0;      // arch.parameter_count()
    // The exact count to show: the checkpoint's when it has one and is not quantized
    // (packed), else the architecture's.
    std::int64_t parameters = 0;
    bool quantized_checkpoint = false;
    std::vector<std::string> warnings;  // what was missing, assumed, or served from the cache
    bool used_cache = false;            // at least one answer came from the disk cache

    // A summary for --json output: never holds a token.
    nlohmann::json to_json() const;
    // A model profile in the profiles/models format ({id, name, hf_repo, family, config}) plus
    // an "import" object (source, repo, revision, endpoint, folder, counts, warnings, time);
    // parse_model_profile() reads it back. Never holds a token.
    nlohmann::json profile_json() const;
};

// Imports `repo_id` ("owner/name", or a Hub URL such as https://huggingface.co/owner/name)
// from options.endpoint at options.revision: config.json, then model.safetensors.index.json
// and every shard's header, or for a single-file model only model.safetensors's header (two
// HTTP range requests). Falls back to the cache when the network fails; in offline mode
// answers from the cache only. Caches responses only when the whole import succeeds.
// Throws HubError.
ImportedModel import_from_hub(const std::string& repo_id, const HubOptions& options = {},
                              const ProgressCallback& progress = {}, CancelFlag cancel = nullptr);

// Imports a local folder: config.json plus the safetensors headers (the index's shards, else
// model.safetensors, else every *.safetensors file). Throws HubError (an InputError).
ImportedModel import_from_folder(const std::filesystem::path& dir,
                                 const ProgressCallback& progress = {},
                                 CancelFlag cancel = nullptr);

// Remembers an import: writes profile_json() to <user_dir>/models/<profile id>.json (temporary
// file + rename), replacing an earlier import of the same id; returns the path. user_dir is
// normally ProfileLibrary::user_dir(), so ProfileLibrary::load_user_profiles() picks it up.
// Throws HubError(Filesystem) if it cannot write.
std::filesystem::path save_imported_profile(const ImportedModel& model,
                                            const std::filesystem::path& user_dir);

// "Qwen/Qwen2.5-7B", " https://huggingface.co/Qwen/Qwen2.5-7B/tree/main " -> "Qwen/Qwen2.5-7B".
// Throws HubError(InvalidId) quoting the text as typed.
std::string normalize_repo_id(const std::string& typed, const std::string& endpoint = {});
// "Qwen/Qwen2.5-7B" -> "hf-qwen--qwen2.5-7b" (plus "@<revision>" when not "main").
std::string profile_id_for_repo(const std::string& repo_id, const std::string& revision = "main");
// "/data/models/My Model" -> "local-my-model".
std::string profile_id_for_folder(const std::filesystem::path& dir);
// <endpoint>/<repo>/resolve/<revision>/<file>, each part percent-encoded.
std::string resolve_url(const std::string& endpoint, const std::string& repo_id,
                        const std::string& revision, const std::string& file);

// Internals exposed for the tests.
namespace detail {
// Seconds to wait from a Retry-After value: delta-seconds or an HTTP-date (relative to `now`).
std::optional<long> parse_retry_after(const std::string& value,
                                      std::chrono::system_clock::time_point now =
                                          std::chrono::system_clock::now());
// Where a response lives in the cache: <cache_dir>/v1/<endpoint>/<repo>/<revision>/<file>[@range],
// each part escaped into one safe path component (no '/', no leading '.').
std::filesystem::path cache_path(const std::filesystem::path& cache_dir,
                                  const std::string& endpoint, const std::string& repo_id,
                                  const std::string& revision, const std::string& file,
                                  const std::string& range);
std::string escape_component(const std::string& s);
}  // namespace detail

}  // namespace wingspan::hub
