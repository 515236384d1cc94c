// Importing a model from the Hugging Face Hub: config.json, the safetensors index and the
// shard headers (range requests), with the disk cache as fallback and offline source.
#include <algorithm>
#include <chrono>
#include <cctype>
#include <ctime>
#include <memory>
#include <sstream>

#include "hub/hub_internal.hpp"

namespace wingspan::hub {

using detail::ByteRange;
using detail::CachedResponse;
using detail::CacheKey;
using detail::HttpResponse;

namespace {

bool valid_segment(const std::string& s) {
    if (s.empty() || s.size() > 96) return false;
    if (s.front() == '.' || s.front() == '-' || s.back() == '.') return false;
    if (s.find("..") != std::string::npos) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

std::string slug(const std::string& s) {
    std::string out;
    for (char c : s) {
        unsigned char u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '.' || c == '_' || c == '-')
            out += static_cast<char>(std::tolower(u));
        else if (c == '/')
            out += "--";
        else
            out += '-';
    }
    return out;
}

// A short, safe quote of server-provided text.
std::string quote_server_text(const std::string& s) {
    std::string out;
    for (char c : s) {
        unsigned char u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f) ? ' ' : c;
        if (out.size() >= 300) {
            out += "...";
            break;
        }
    }
    return detail::trim(out);
}

bool falls_back_to_cache(HubErrorKind k) {
    switch (k) {
        case HubErrorKind::Offline:
        case HubErrorKind::Dns:
        case HubErrorKind::Timeout:
        case HubErrorKind::Tls:
        case HubErrorKind::Network:
        case HubErrorKind::ServerError:
        case HubErrorKind::RateLimited:
            return true;
        default:
            return false;
    }
}

struct Got {
    std::string body;
    std::optional<std::uint64_t> total_size;
    bool from_cache = false;
};

class HubSession {
public:
    HubSession(std::string typed, std::string repo, const HubOptions& opt,
               const ProgressCallback& progress, CancelFlag cancel)
        : typed_(std::move(typed)),
          repo_(std::move(repo)),
          opt_(opt),
          progress_(progress),
          cancel_(cancel),
          deadline_(std::chrono::steady_clock::now() + opt.import_deadline),
          cache_(opt.cache_dir) {}

    const std::string& repo() const { return repo_; }
    int steps = 2;
    int step = 0;

    void report(const std::string& message, const std::string& file, bool from_cache = false) {
        if (!progress_) return;
        Progress p;
        p.message = message;
        p.file = file;
        p.step = step;
        p.steps = steps;
        p.from_cache = from_cache;
        progress_(p);
    }

    void check_cancel() const {
        if (cancel_ && cancel_->load()) throw HubError(HubErrorKind::Cancelled, "Import cancelled.");
        if (std::chrono::steady_clock::now() > deadline_)
            throw HubError(HubErrorKind::Timeout,
                           "The import of " + repo_ + " took longer than " +
                               std::to_string(opt_.import_deadline.count() / 1000) +
                               " s, its overall deadline. The Hub or the network is slow; try again later.");
    }

    // One file (or byte range of it). `probe`: a missing file is an answer (nullopt), not an
    // error; used for the optional index and the single-file checkpoint.
    std::optional<Got> get(const std::string& file, const std::optional<ByteRange>& range,
                           bool probe, const std::string& what) {
        check_cancel();
        CacheKey key{opt_.endpoint, repo_, opt_.revision, file,
                     range ? range->header_value() : std::string()};
        const std::string url = resolve_url(opt_.endpoint, repo_, opt_.revision, file);

        const bool cache_only = opt_.offline || network_down_;
        if (cache_only || opt_.prefer_cache) {
            if (auto c = load_cached(key)) {
                // prefer_cache: a cached config.json means the whole import was cached
                // (imports are cached all or nothing), so a missing optional file is absent.
                if (file == "config.json" && !range) snapshot_ = true;
                return c;
            }
            if (probe && (cache_only || snapshot_)) return std::nullopt;
        }
        if (cache_only) {
            if (opt_.offline)
                throw HubError(HubErrorKind::NotCached,
                               "Offline mode: " + what + " (revision '" + opt_.revision +
                                   "') is not in the cache (" +
                                   (cache_.enabled() ? opt_.cache_dir.string() : "no cache folder") +
                                   "). Import '" + typed_ +
                                   "' once while online, or turn offline mode off (HF_HUB_OFFLINE).");
            throw HubError(network_error_kind_,
                           network_error_ + " There is no cached copy of " + what + " either.",
                           network_error_status_);
        }

        HttpResponse r;
        try {
            r = client().get(url, range, what);
        } catch (const HubError& e) {
            if (auto c = fall_back(e, key)) return c;
            throw;
        }

        if (r.status == 200 || r.status == 206) {
            CachedResponse entry;
            entry.body = r.body;
            entry.total_size = r.total_size;
            entry.fetched_at = detail::utc_now_iso8601();
            pending_.push_back({key, url, std::move(entry)});
            return Got{std::move(r.body), r.total_size, false};
        }
        if (r.status == 404 && probe) {
            auto code = header(r, "x-error-code");
            // A missing repo or revision is an error even for an optional file.
            if (code != "RepoNotFound" && code != "RevisionNotFound") return std::nullopt;
        }
        HubError e = status_error(r, file, range, what);
        if (auto c = fall_back(e, key)) return c;
        throw e;
    }

    // The error for an HTTP answer the caller did not expect (shared with the download).
    HubError answer_error(const HttpResponse& r, const std::string& file, const std::string& what) const {
        return status_error(r, file, std::nullopt, what);
    }

    // Stores every answer of a successful import; problems become a warning.
    void commit(ImportedModel& m) {
        std::string problem;
        for (const auto& p : pending_) {
            std::string err = cache_.store(p.key, p.url, p.entry);
            if (!err.empty() && problem.empty()) problem = err;
        }
        if (!problem.empty())
            m.warnings.push_back("Could not write the Hub cache (" + problem +
                                 "); this model will need the network next time.");
        pending_.clear();
        m.warnings.insert(m.warnings.begin(), warnings_.begin(), warnings_.end());
        m.used_cache = used_cache_;
    }

private:
    struct Pending {
        CacheKey key;
        std::string url;
        CachedResponse entry;
    };

    detail::HttpClient& client() {
        if (!client_) client_ = std::make_unique<detail::HttpClient>(opt_, cancel_);
        return *client_;
    }

    std::optional<Got> load_cached(const CacheKey& key) {
        auto c = cache_.load(key);
        if (!c) return std::nullopt;
        if (!used_cache_) {
            used_cache_ = true;
            if (opt_.offline)
                warnings_.push_back("Offline mode: read from the cache (fetched " +
                                    (c->fetched_at.empty() ? std::string("earlier") : c->fetched_at) +
                                    "); the Hub was not asked for newer files.");
        }
        return Got{std::move(c->body), c->total_size, true};
    }

    std::optional<Got> fall_back(const HubError& e, const CacheKey& key) {
        if (!falls_back_to_cache(e.kind()) || !cache_.enabled()) return std::nullopt;
        auto c = cache_.load(key);
        if (!c) return std::nullopt;
        network_down_ = true;
        network_error_ = e.what();
        network_error_kind_ = e.kind();
        network_error_status_ = e.http_status();
        used_cache_ = true;
        warnings_.push_back("Could not reach " + opt_.endpoint + " (" + hub_error_kind_name(e.kind()) +
                            "): using the copy cached " +
                            (c->fetched_at.empty() ? std::string("earlier") : "on " + c->fetched_at) +
                            ". It may be older than the Hub's. Cause: " + e.what());
        return Got{std::move(c->body), c->total_size, true};
    }

    static std::string header(const HttpResponse& r, const std::string& name) {
        auto it = r.headers.find(name);
        return it == r.headers.end() ? std::string() : it->second;
    }

    std::string model_page() const { return opt_.endpoint + "/" + repo_; }

    HubError status_error(const HttpResponse& r, const std::string& file,
                          const std::optional<ByteRange>& range, const std::string& what) const {
        const long st = r.status;
        const std::string host = detail::url_host(r.url);
        const std::string code = header(r, "x-error-code");
        std::string hub_says = quote_server_text(header(r, "x-error-message"));
        const std::string said = hub_says.empty() ? "" : " (The Hub says: \"" + hub_says + "\")";
        const std::string status = "HTTP " + std::to_string(st);

        auto not_found_repo = [&](const std::string& extra) {
            return HubError(HubErrorKind::NotFound,
                            "Model '" + typed_ + "' was not found on " + opt_.endpoint + " (" +
                                status + "). Check the id: it is owner/name exactly as on the "
                                "model page, and case matters (for example Qwen/Qwen2.5-7B)." +
                                extra + said,
                            st);
        };

        if (code == "RepoNotFound")
            return not_found_repo(
                " If it is a private model, give a token that can read it with HF_TOKEN.");
        if (code == "RevisionNotFound")
            return HubError(HubErrorKind::NotFound,
                            "Revision '" + opt_.revision + "' of '" + typed_ +
                                "' was not found on " + opt_.endpoint + " (" + status +
                                "). Use a branch, tag or commit that exists (default: main)." + said,
                            st);
        if (st == 401 || st == 403) {
            std::string how =
                " To get access: open " + model_page() +
                ", log in, and accept the licence / access conditions there; create a read token at " +
                opt_.endpoint + "/settings/tokens; then give it to Wingspan in the environment, "
                "e.g. `export HF_TOKEN=hf_...` (or run `huggingface-cli login`), and try again.";
            if (opt_.token.empty())
                return HubError(HubErrorKind::Unauthorized,
                                "'" + typed_ + "' is gated or private (" + status +
                                    " for " + file + "): the Hub needs an access token, and none "
                                    "was given." + how + said,
                                st);
            return HubError(HubErrorKind::Unauthorized,
                            "Access to '" + typed_ + "' was refused (" + status + " for " + file +
                                ") even with the token from HF_TOKEN: the token is invalid or "
                                "expired, or its account has not been granted access yet (some "
                                "gated models need approval)." + how + said,
                            st);
        }
        if (st == 404) {
            if (file == "config.json")
                return not_found_repo(
                    " (Or the repo exists but has no config.json at revision '" + opt_.revision +
                    "', e.g. a GGUF-only repo; Wingspan needs the Transformers config.)");
            return HubError(HubErrorKind::NotFound,
                            "File '" + file + "' was not found in '" + typed_ + "' at revision '" +
                                opt_.revision + "' on " + opt_.endpoint + " (" + status +
                                "), though the model's index names it." + said,
                            st);
        }
        if (st == 416 && range)
            return HubError(HubErrorKind::BadSafetensors,
                            "'" + file + "' in '" + typed_ + "' is shorter than its safetensors "
                            "header says (the server cannot serve " + range->header_value() +
                            ", " + status + "): the file is damaged or not safetensors.",
                            st);
        if (st == 429) {
            auto retry = detail::parse_retry_after(header(r, "retry-after"));
            std::string when;
            if (retry) {
                std::time_t at = std::time(nullptr) + *retry;
                std::tm tm{};
                gmtime_r(&at, &tm);
                char buf[32];
                std::strftime(buf, sizeof buf, "%H:%M:%S UTC", &tm);
                when = " Retry in " + std::to_string(*retry) +
                       (*retry == 1 ? " second" : " seconds") + " (after " + buf + ").";
            } else {
                when = " Wait a minute, then retry.";
            }
            if (opt_.token.empty()) when += " Requests with a token (HF_TOKEN) get higher limits.";
            return HubError(HubErrorKind::RateLimited,
                            host + " is rate-limiting requests (" + status + ") while fetching " +
                                what + "." + when + said,
                            st, retry);
        }
        if (st >= 500)
            return HubError(HubErrorKind::ServerError,
                            host + " had a server error (" + status + ") while serving " + what +
                                ". The problem is on the server's side; try again in a few "
                                "minutes." + said,
                            st);
        return HubError(HubErrorKind::HttpError,
                        "Unexpected answer " + status + " from " + host + " for " + what + "." + said,
                        st);
    }

    std::string typed_;
    std::string repo_;
    const HubOptions& opt_;
    const ProgressCallback& progress_;
    CancelFlag cancel_;
    std::chrono::steady_clock::time_point deadline_;
    detail::DiskCache cache_;
    std::unique_ptr<detail::HttpClient> client_;
    std::vector<Pending> pending_;
    std::vector<std::string> warnings_;
    bool used_cache_ = false;
    bool network_down_ = false;
    bool snapshot_ = false;
    std::string network_error_;
    HubErrorKind network_error_kind_ = HubErrorKind::Network;
    long network_error_status_ = 0;
};

// The header of one safetensors file via two range requests: the 8-byte length, then the
// JSON. Checks the length against the file's size before asking for it.
std::optional<safetensors::Header> read_remote_header(HubSession& s, const HubOptions& opt,
                                                       const std::string& file, bool probe) {
    const std::string what = "the safetensors header of " + file + " in " + s.repo();
    auto prefix = s.get(file, ByteRange{0, 7}, probe, what);
    if (!prefix) return std::nullopt;
    const std::string where = "'" + file + "' in '" + s.repo() + "'";
    if (prefix->body.size() < 8)
        throw HubError(HubErrorKind::BadSafetensors,
                       where + " is only " + std::to_string(prefix->body.size()) +
                           " bytes long: not a safetensors file.");
    std::uint64_t n = 0;
    try {
        n = safetensors::parse_header_length(
            reinterpret_cast<const unsigned char*>(prefix->body.data()));
    } catch (const std::exception& e) {
        throw HubError(HubErrorKind::BadSafetensors,
                       "The safetensors header of " + where + " lies about its size: " + detail::plain_message(e));
    }
    if (n == 0)
        throw HubError(HubErrorKind::BadSafetensors,
                       "The safetensors header of " + where + " claims to be empty (0 bytes).");
    const auto total = prefix->total_size;
    if (total && (*total < 8 || n > *total - 8))
        throw HubError(HubErrorKind::BadSafetensors,
                       "The safetensors header of " + where + " claims to be " + std::to_string(n) +
                           " bytes long, but the whole file is only " + std::to_string(*total) +
                           " bytes: the file is damaged or not safetensors.");
    if (n > opt.max_response_bytes)
        throw HubError(HubErrorKind::TooLarge,
                       "The safetensors header of " + where + " claims to be " + std::to_string(n) +
                           " bytes, more than the limit of " +
                           std::to_string(opt.max_response_bytes) + " bytes for one response.");
    auto body = s.get(file, ByteRange{8, 8 + n - 1}, false, what);
    if (body->body.size() != n)
        throw HubError(HubErrorKind::BadSafetensors,
                       "The safetensors header of " + where + " claims to be " + std::to_string(n) +
                           " bytes long, but only " + std::to_string(body->body.size()) +
                           " bytes of it exist: the file is damaged or not safetensors.");
    try {
        std::uint64_t data_size = total ? *total - 8 - n : 0;
        return safetensors::parse_header(body->body, n, data_size);
    } catch (const std::exception& e) {
        throw HubError(HubErrorKind::BadSafetensors,
                       "The safetensors header of " + where + " is not valid: " + detail::plain_message(e));
    }
}

}  // namespace

HubError detail::status_error(const HttpResponse& r, const std::string& typed, const std::string& repo,
                              const HubOptions& opt, const std::string& file, const std::string& what) {
    static const ProgressCallback no_progress;
    return HubSession(typed, repo, opt, no_progress, nullptr).answer_error(r, file, what);
}

std::optional<std::string> detail::parse_repo_id(const std::string& typed, const std::string& endpoint,
                                                std::string* why_not) {
    auto invalid = [&](const std::string& why) -> std::optional<std::string> {
        if (why_not) *why_not = why;
        return std::nullopt;
    };
    std::string s = detail::trim(typed);
    if (s.empty()) return invalid(" (it is empty)");
    bool was_url = false;
    for (std::string prefix : {endpoint, std::string(kPublicEndpoint)}) {
        while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
        if (prefix.empty()) continue;
        if (s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0 &&
            s[prefix.size()] == '/') {
            s = s.substr(prefix.size() + 1);
            was_url = true;
            break;
        }
    }
    if (!was_url && (s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0))
        return invalid(" (a URL of another site than " +
                       (endpoint.empty() ? std::string(kPublicEndpoint) : endpoint) + ")");
    if (was_url) {
        s = s.substr(0, s.find_first_of("?#"));
        if (s.rfind("models/", 0) == 0) s = s.substr(7);
        auto parts = split(s, '/');
        if (parts.size() >= 2 &&
            (parts[1] == "tree" || parts[1] == "blob" || parts[1] == "resolve" || parts[1].empty()))
            s = parts[0];
        else if (parts.size() >= 2)
            s = parts[0] + "/" + parts[1];
    }
    auto parts = split(s, '/');
    if (parts.size() > 2) return invalid(" (too many '/' parts)");
    for (const auto& p : parts)
        if (!valid_segment(p))
            return invalid(" (names use letters, digits, '-', '_' and '.', at most 96 characters)");
    return s;
}

std::string normalize_repo_id(const std::string& typed, const std::string& endpoint) {
    std::string why;
    if (std::optional<std::string> id = detail::parse_repo_id(typed, endpoint, &why)) return *id;
    throw HubError(HubErrorKind::InvalidId,
                   "'" + typed + "' is not a Hugging Face model id" + why +
                       ". Give owner/name as on the model page, e.g. Qwen/Qwen2.5-7B, or the page's URL.");
}

std::string profile_id_for_repo(const std::string& repo_id, const std::string& revision) {
    std::string id = "hf-" + slug(repo_id);
    if (!revision.empty() && revision != "main") id += "@" + slug(revision);
    return id;
}

ImportedModel import_from_hub(const std::string& repo_id, const HubOptions& options,
                              const ProgressCallback& progress, CancelFlag cancel) {
    HubOptions opt = options;
    const bool had_userinfo = strip_userinfo(opt.endpoint) != opt.endpoint;
    opt.endpoint = strip_userinfo(opt.endpoint);
    while (!opt.endpoint.empty() && opt.endpoint.back() == '/') opt.endpoint.pop_back();
    if (opt.endpoint.empty()) opt.endpoint = kPublicEndpoint;
    if (opt.revision.empty()) opt.revision = "main";
    opt.token = detail::trim(opt.token);
    const std::string repo = normalize_repo_id(repo_id, opt.endpoint);
    const std::string typed = detail::trim(repo_id);

    HubSession s(typed, repo, opt, progress, cancel);
    ImportedModel m;
    m.source = "hub";
    m.repo_id = repo;
    m.revision = opt.revision;
    m.endpoint = opt.endpoint;
    if (had_userinfo)
        m.warnings.push_back("the endpoint carried a user name and password; they were removed and are not stored "
                             "(give a token in HF_TOKEN instead)");

    s.report("Fetching config.json", "config.json");
    auto cfg = s.get("config.json", std::nullopt, false, "config.json of " + repo);
    detail::read_config(m, cfg->body, repo + "/config.json");
    ++s.step;

    s.report("Looking for model.safetensors.index.json", "model.safetensors.index.json");
    auto idx = s.get("model.safetensors.index.json", std::nullopt, true,
                     "model.safetensors.index.json of " + repo);
    std::vector<detail::ReadHeader> headers;
    nlohmann::json index;
    if (idx) {
        auto files = detail::parse_index(idx->body, repo + "/model.safetensors.index.json", index);
        s.steps = 2 + static_cast<int>(files.size());
        ++s.step;
        for (const auto& f : files) {
            s.report("Reading the header of " + f, f);
            auto h = read_remote_header(s, opt, f, false);
            headers.push_back({f, std::move(*h)});
            ++s.step;
        }
    } else {
        s.report("Reading the header of model.safetensors", "model.safetensors");
        if (auto h = read_remote_header(s, opt, "model.safetensors", true))
            headers.push_back({"model.safetensors", std::move(*h)});
        ++s.step;
    }
    s.check_cancel();

    detail::finish_import(m, headers, idx ? &index : nullptr);
    m.profile.id = profile_id_for_repo(repo, opt.revision);
    auto slash = repo.find('/');
    m.profile.name = slash == std::string::npos ? repo : repo.substr(slash + 1);
    if (opt.revision != "main") m.profile.name += " @" + opt.revision;
    m.profile.hf_repo = repo;
    s.commit(m);
    s.report("Done", "");
    return m;
}

}  // namespace wingspan::hub
