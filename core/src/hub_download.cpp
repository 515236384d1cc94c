// `wingspan download`: a whole model into the Hugging Face cache layout (see hub_download.hpp),
// on the Hub import's transport (detail::HttpClient) and error messages (detail::status_error).
#include "wingspan/hub_download.hpp"
#include "wingspan/safe_file.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <unistd.h>

#include "hub_internal.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/sha256.hpp"

namespace wingspan::hub {

namespace fs = std::filesystem;
using detail::ByteRange;
using detail::HttpClient;
using detail::HttpResponse;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

bool is_hex(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    });
}

std::string gb(std::uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
    return buf;
}

struct RepoFile {
    std::string name;
    std::uint64_t size = 0;
    std::string etag;     // blob file name: the LFS sha256, else the git blob id
    bool lfs = false;     // etag is a sha256 the bytes must match
};

struct Listing {
    std::string commit;
    std::vector<RepoFile> files;
};

// GET /api/models/<repo>/revision/<rev>?blobs=true: the commit and every file with its size,
// git blob id and (LFS files) sha256.
Listing fetch_listing(HttpClient& client, const std::string& typed, const std::string& repo,
                      const HubOptions& opt) {
    const std::string url = opt.endpoint + "/api/models/" + detail::percent_encode(repo, true) +
                            "/revision/" + detail::percent_encode(opt.revision, false) + "?blobs=true";
    const std::string what = "the file list of " + repo;
    HttpResponse r = client.get(url, std::nullopt, what);
    if (r.status != 200) throw detail::status_error(r, typed, repo, opt, "the file list", what);
    auto bad = [&](const std::string& why) {
        return HubError(HubErrorKind::MalformedJson,
                        "The Hub's file list of '" + repo + "' (revision '" + opt.revision + "', " +
                            url.substr(0, url.find('?')) + ") is not what Wingspan expects: " + why + ".");
    };
    std::string why;
    const nlohmann::json j = try_parse_untrusted_json(r.body, &why).value_or(nlohmann::json());
    if (!j.is_object()) throw bad(why.empty() ? "not a JSON object" : why);
    Listing l;
    if (!j.contains("sha") || !j["sha"].is_string()) throw bad("no commit (\"sha\")");
    l.commit = j["sha"].get<std::string>();
    if (l.commit.size() != 40 || !is_hex(l.commit)) throw bad("the commit \"" + l.commit.substr(0, 60) + "\" is not 40 hex digits");
    if (!j.contains("siblings") || !j["siblings"].is_array()) throw bad("no file list (\"siblings\")");
    for (const auto& s : j["siblings"]) {
        if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) throw bad("a file without a name");
        RepoFile f;
        f.name = s["rfilename"].get<std::string>();
        if (!detail::safe_relative_file(f.name)) throw bad("the file name '" + f.name + "' leaves the repository");
        if (s.contains("lfs") && s["lfs"].is_object()) {
            const auto& lfs = s["lfs"];
            const std::string sha = lfs.value("sha256", lfs.value("oid", std::string()));
            if (sha.size() != 64 || !is_hex(sha)) throw bad("'" + f.name + "' has no valid LFS sha256");
            if (!lfs.contains("size") || !lfs["size"].is_number_unsigned()) throw bad("'" + f.name + "' has no LFS size");
            f.etag = sha;
            f.lfs = true;
            f.size = lfs["size"].get<std::uint64_t>();
        } else {
            if (!s.contains("size") || !s["size"].is_number_unsigned())
                throw bad("'" + f.name + "' has no size (the endpoint does not answer ?blobs=true)");
            if (!s.contains("blobId") || !s["blobId"].is_string() || !is_hex(s["blobId"].get<std::string>()))
                throw bad("'" + f.name + "' has no blob id");
            f.etag = s["blobId"].get<std::string>();
            f.size = s["size"].get<std::uint64_t>();
        }
        std::transform(f.etag.begin(), f.etag.end(), f.etag.begin(), [](char c) { return char(std::tolower(c)); });
        l.files.push_back(std::move(f));
    }
    return l;
}

bool falls_back_to_cache(HubErrorKind k) {
    return k == HubErrorKind::Offline || k == HubErrorKind::Dns || k == HubErrorKind::Timeout ||
           k == HubErrorKind::Tls || k == HubErrorKind::Network || k == HubErrorKind::ServerError ||
           k == HubErrorKind::RateLimited;
}

bool resumable(HubErrorKind k) {
    return k == HubErrorKind::Network || k == HubErrorKind::Timeout || k == HubErrorKind::Offline;
}

void write_text_atomically(const fs::path& file, const std::string& text) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    try {
        write_file_atomically(file, text);   // exclusive, no-follow temporary; fsync; rename
    } catch (const IoError& e) {
        throw HubError(HubErrorKind::Filesystem, std::string(e.what()) + " (disk full or read-only?)");
    }
}

// snapshots/<commit>/<name> -> ../../blobs/<etag> (one more ../ per folder in name); a hard
// link or a copy where the file system has no symlinks. Replaced atomically.
void link_into_snapshot(const fs::path& snapshot, const std::string& name, const fs::path& blob,
                        const std::string& etag) {
    const fs::path link = snapshot / name;
    std::string target;
    for (int i = 0, n = static_cast<int>(std::count(name.begin(), name.end(), '/')) + 2; i < n; ++i) target += "../";
    target += "blobs/" + etag;
    std::error_code ec;
    if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec).string() == target) return;
    fs::create_directories(link.parent_path(), ec);
    if (ec) throw HubError(HubErrorKind::Filesystem, "Cannot create " + link.parent_path().string() + ": " + ec.message() + ".");
    fs::path tmp = link;
    tmp += ".tmp-link-" + std::to_string(::getpid());
    fs::remove(tmp, ec);
    fs::create_symlink(target, tmp, ec);
    if (ec) {
        ec.clear();
        fs::create_hard_link(blob, tmp, ec);
        if (ec) {
            ec.clear();
            fs::copy_file(blob, tmp, ec);
        }
    }
    if (!ec) fs::rename(tmp, link, ec);
    if (ec) {
        std::error_code ignore;
        fs::remove(tmp, ignore);
        throw HubError(HubErrorKind::Filesystem, "Cannot link " + link.string() + " to its blob: " + ec.message() + ".");
    }
}

std::vector<std::string> select_files(const std::vector<std::string>& names, const std::vector<std::string>& include) {
    std::vector<std::string> out;
    for (const auto& n : names) {
        bool take = include.empty() ? needed_for_run(n)
                                    : std::any_of(include.begin(), include.end(),
                                                  [&](const std::string& g) { return glob_match(g, n); });
        if (take) out.push_back(n);
    }
    return out;
}

std::string include_text(const std::vector<std::string>& include) {
    std::string s;
    for (const auto& g : include) s += (s.empty() ? "" : ", ") + g;
    return s;
}

class Downloader {
public:
    Downloader(const std::string& typed, const std::string& repo, const DownloadOptions& o, HubOptions hub,
               const DownloadProgressCallback& progress, CancelFlag cancel)
        : typed_(typed), repo_(repo), o_(o), hub_(std::move(hub)), progress_(progress), cancel_(cancel) {}

    HttpClient& client() {
        if (!client_) client_ = std::make_unique<HttpClient>(hub_, cancel_);
        return *client_;
    }

    void run(const Listing& l, const std::vector<const RepoFile*>& files, const fs::path& repo_dir,
             DownloadResult& result) {
        const fs::path blobs = repo_dir / "blobs";
        const fs::path snapshot = repo_dir / "snapshots" / l.commit;
        std::error_code ec;
        fs::create_directories(blobs, ec);
        if (ec) throw HubError(HubErrorKind::Filesystem, "Cannot create the cache folder " + blobs.string() + ": " + ec.message() + ".");
        fs::create_directories(snapshot, ec);

        // What is left to fetch, partial files counted as done.
        std::vector<const RepoFile*> todo;
        std::uint64_t need = 0;
        for (const RepoFile* f : files) {
            const fs::path blob = blobs / f->etag;
            if (fs::exists(blob, ec) && fs::file_size(blob, ec) == f->size) {
                result.bytes_cached += f->size;
                continue;
            }
            todo.push_back(f);
            total_ += f->size;
            const std::uint64_t have = partial_size(blob, f->size);
            done_ += have;
            need += f->size - have;
        }
        if (o_.free_space && need > 0) {
            if (auto free = o_.free_space(blobs); free && *free < need)
                throw HubError(HubErrorKind::Filesystem,
                               "Not enough disk space for " + repo_ + ": the download needs " + std::to_string(need) +
                                   " bytes (" + gb(need) + ") in " + blobs.string() + ", and only " +
                                   std::to_string(*free) + " bytes (" + gb(*free) +
                                   ") are free. Free some space, or set HF_HOME to a folder on a larger disk.");
        }
        files_ = static_cast<int>(todo.size());
        started_ = std::chrono::steady_clock::now();
        for (const RepoFile* f : todo) {
            ++index_;
            fetch(*f, blobs);
        }
        for (const RepoFile* f : files) link_into_snapshot(snapshot, f->name, blobs / f->etag, f->etag);
        result.bytes_downloaded = transferred_;
        report("", true);
    }

private:
    static std::uint64_t partial_size(const fs::path& blob, std::uint64_t size) {
        std::error_code ec;
        fs::path part = blob;
        part += ".incomplete";
        if (!fs::exists(part, ec)) return 0;
        std::uint64_t have = fs::file_size(part, ec);
        if (ec || have > size) {
            fs::remove(part, ec);
            return 0;
        }
        return have;
    }

    // An answer without a byte of the file leaves no empty part file behind.
    static void drop_if_empty(const fs::path& part) {
        std::error_code ec;
        if (fs::exists(part, ec) && fs::file_size(part, ec) == 0) fs::remove(part, ec);
    }

    void report(const std::string& file, bool force) {
        if (!progress_) return;
        auto now = std::chrono::steady_clock::now();
        if (!force && now - last_report_ < std::chrono::milliseconds(200)) return;
        last_report_ = now;
        DownloadProgress p;
        p.file = file;
        p.file_index = index_;
        p.files = files_;
        p.done_bytes = done_;
        p.total_bytes = total_;
        double secs = std::chrono::duration<double>(now - started_).count();
        if (secs > 0 && transferred_ > 0) {
            p.bytes_per_second = transferred_ / secs;
            p.eta_seconds = (total_ - std::min(done_, total_)) / p.bytes_per_second;
        }
        progress_(p);
    }

    void fetch(const RepoFile& f, const fs::path& blobs) {
        const fs::path blob = blobs / f.etag;
        fs::path part = blob;
        part += ".incomplete";
        // By commit, so every file comes from the same commit even if the branch moves meanwhile.
        const std::string url = resolve_url(hub_.endpoint, repo_, commit_, f.name);
        const std::string what = f.name + " of " + repo_;
        for (int attempt = 1;; ++attempt) {
            const std::uint64_t have = partial_size(blob, f.size);
            std::FILE* out = std::fopen(part.c_str(), "ab");
            if (!out) throw HubError(HubErrorKind::Filesystem, "Cannot write " + part.string() + ": " + std::strerror(errno) + ".");
            int write_errno = 0;
            HttpClient::BodySink sink = [&](const char* data, std::size_t n) {
                if (std::fwrite(data, 1, n, out) != n) {
                    write_errno = errno ? errno : EIO;
                    return false;
                }
                done_ += n;
                transferred_ += n;
                report(f.name, false);
                return true;
            };
            std::optional<ByteRange> range;
            if (have > 0 && have < f.size) range = ByteRange{have, f.size - 1};
            HttpResponse r;
            try {
                report(f.name, true);
                if (have < f.size || f.size == 0) r = client().get_to(url, range, what, sink);
                else r.status = 200;   // the partial file is already whole: verify it below
                if (std::fflush(out) != 0 && !write_errno) write_errno = errno;
                std::fclose(out);
            } catch (const HubError& e) {
                if (std::fflush(out) != 0 && !write_errno) write_errno = errno;
                std::fclose(out);
                drop_if_empty(part);
                if (write_errno)
                    throw HubError(HubErrorKind::Filesystem,
                                   "Cannot write " + part.string() + ": " + std::strerror(write_errno) +
                                       ". Free some space; the next `wingspan download` resumes where this one stopped.");
                if (e.kind() == HubErrorKind::Cancelled)
                    throw HubError(HubErrorKind::Cancelled,
                                   "Download cancelled. The part of " + f.name + " received so far stays in " +
                                       part.string() + "; the next `wingspan download` of " + repo_ + " resumes from there.");
                if (resumable(e.kind()) && attempt < o_.attempts) continue;
                if (resumable(e.kind()))
                    throw HubError(e.kind(), std::string(e.what()) + " " + std::to_string(partial_size(blob, f.size)) + " of " +
                                                 std::to_string(f.size) + " bytes of " + f.name + " are kept in " +
                                                 part.string() + "; run the same `wingspan download` again to resume.",
                                   e.http_status());
                throw;
            }
            if (write_errno)
                throw HubError(HubErrorKind::Filesystem, "Cannot write " + part.string() + ": " + std::strerror(write_errno) + ".");
            if (r.status == 416) {   // the server does not know our range: start over
                std::error_code ec;
                fs::remove(part, ec);
                if (attempt < o_.attempts) continue;
            }
            if (r.status != 200 && r.status != 206) {
                drop_if_empty(part);
                throw detail::status_error(r, typed_, repo_, hub_, f.name, what);
            }
            break;
        }
        std::error_code ec;
        const std::uint64_t got = fs::file_size(part, ec);
        if (got != f.size) {
            fs::remove(part, ec);
            throw HubError(HubErrorKind::Network,
                           f.name + " of " + repo_ + " arrived with " + std::to_string(got) + " bytes, but the Hub lists " +
                               std::to_string(f.size) + ". The damaged download was deleted; run `wingspan download` again.");
        }
        if (f.lfs) {
            const std::string sha = sha256_hex_of_file(part);
            if (sha != f.etag) {
                fs::remove(part, ec);
                throw HubError(HubErrorKind::Network,
                               f.name + " of " + repo_ + " is corrupted: its sha256 is " + sha + ", but the Hub lists " +
                                   f.etag + ". The damaged download was deleted (nothing entered the cache); run "
                                   "`wingspan download` again, and if it repeats, check for a proxy that alters downloads.");
            }
        }
        fs::rename(part, blob, ec);
        if (ec) throw HubError(HubErrorKind::Filesystem, "Cannot move " + part.string() + " into the cache: " + ec.message() + ".");
        report(f.name, true);
    }

public:
    std::string commit_;

private:
    std::string typed_, repo_;
    const DownloadOptions& o_;
    HubOptions hub_;
    const DownloadProgressCallback& progress_;
    CancelFlag cancel_;
    std::unique_ptr<HttpClient> client_;
    std::uint64_t total_ = 0, done_ = 0, transferred_ = 0;
    int index_ = 0, files_ = 0;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_report_{};
};

// Every file of a cached snapshot (symlinks whose blob exists, or plain files), sorted.
std::vector<std::string> snapshot_files(const fs::path& snapshot) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(snapshot, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        if (fs::is_regular_file(it->path(), ec))   // follows the symlink: a dangling one is skipped
            out.push_back(it->path().lexically_relative(snapshot).generic_string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

DownloadResult from_cache(const std::string& repo, const std::string& revision, const fs::path& snapshot,
                          const std::vector<std::string>& include) {
    DownloadResult r;
    r.repo_id = repo;
    r.snapshot = snapshot;
    r.commit = snapshot.filename().string();
    r.offline = true;
    r.files = select_files(snapshot_files(snapshot), include);
    if (r.files.empty())
        throw HubError(HubErrorKind::NotCached,
                       "The cached snapshot of '" + repo + "' at revision '" + revision + "' (" + snapshot.string() +
                           ") has none of the files asked for" +
                           (include.empty() ? std::string() : " (--include " + include_text(include) + ")") +
                           ". Download them once while online.");
    return r;
}

}  // namespace

fs::path default_hf_hub_cache() {
    if (std::string v = env("HF_HUB_CACHE"); !v.empty()) return v;
    if (std::string v = env("HF_HOME"); !v.empty()) return fs::path(v) / "hub";
    if (std::string v = env("XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "huggingface" / "hub";
    if (std::string h = env("HOME"); !h.empty()) return fs::path(h) / ".cache" / "huggingface" / "hub";
    return fs::path(".cache") / "huggingface" / "hub";
}

std::optional<std::uint64_t> free_bytes_statvfs(const fs::path& dir) {
    struct statvfs s {};
    if (::statvfs(dir.c_str(), &s) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(s.f_bavail) * static_cast<std::uint64_t>(s.f_frsize);
}

std::string hf_cache_folder_name(const std::string& repo_id) {
    std::string s = "models--";
    for (char c : repo_id) s += c == '/' ? std::string("--") : std::string(1, c);
    return s;
}

bool glob_match(const std::string& pattern, const std::string& name) {
    // Iterative matcher with backtracking to the last '*'.
    size_t p = 0, n = 0, star = std::string::npos, mark = 0;
    auto class_match = [&](size_t& pp, char c) {   // pp at '['; returns match, moves pp past ']'
        size_t i = pp + 1;
        bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
        if (negate) ++i;
        bool hit = false;
        size_t first = i;
        while (i < pattern.size() && (pattern[i] != ']' || i == first)) {
            if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
                if (c >= pattern[i] && c <= pattern[i + 2]) hit = true;
                i += 3;
            } else {
                if (c == pattern[i]) hit = true;
                ++i;
            }
        }
        if (i >= pattern.size()) return std::optional<bool>();   // no closing ']': literal '['
        pp = i + 1;
        return std::optional<bool>(hit != negate);
    };
    while (n < name.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = n;
            continue;
        }
        if (p < pattern.size() && pattern[p] == '[') {
            size_t pp = p;
            auto m = class_match(pp, name[n]);
            if (m && *m) {
                p = pp;
                ++n;
                continue;
            }
            if (!m && name[n] == '[') {
                ++p;
                ++n;
                continue;
            }
        } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
            continue;
        }
        if (star == std::string::npos) return false;
        p = star + 1;
        n = ++mark;
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

bool needed_for_run(const std::string& file) {
    static const std::set<std::string> kNamed = {
        "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
        "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja",
        "chat_template.json", "model.safetensors.index.json"};
    if (file.find('/') != std::string::npos) return false;   // sub-folders hold other formats (onnx/, original/)
    if (kNamed.count(file)) return true;
    return file.size() > 12 && file.compare(file.size() - 12, 12, ".safetensors") == 0;
}

std::optional<fs::path> find_cached_snapshot(const std::string& repo_id, const std::string& revision,
                                             const fs::path& hub_cache) {
    const fs::path repo_dir = hub_cache / hf_cache_folder_name(repo_id);
    std::error_code ec;
    const std::string rev = revision.empty() ? "main" : revision;
    if (detail::safe_relative_file(rev)) {
        std::ifstream in(repo_dir / "refs" / rev);
        std::string commit;
        if (in && std::getline(in, commit)) {
            commit = detail::trim(commit);
            if (is_hex(commit) && fs::is_directory(repo_dir / "snapshots" / commit, ec))
                return repo_dir / "snapshots" / commit;
        }
    }
    if (is_hex(rev) && fs::is_directory(repo_dir / "snapshots" / rev, ec)) return repo_dir / "snapshots" / rev;
    return std::nullopt;
}

namespace {

// The options a download runs with: no trailing '/', main by default, a trimmed token, and a
// whole-run timeout long enough for big files (stalls still time out). Throws for a revision
// that could leave the cache folder.
HubOptions normalized_hub(HubOptions hub) {
    while (!hub.endpoint.empty() && hub.endpoint.back() == '/') hub.endpoint.pop_back();
    if (hub.endpoint.empty()) hub.endpoint = kPublicEndpoint;
    if (hub.revision.empty()) hub.revision = "main";
    hub.token = detail::trim(hub.token);
    hub.total_timeout = std::chrono::hours(24 * 7);
    if (!detail::safe_relative_file(hub.revision))
        throw HubError(HubErrorKind::InvalidId, "'" + hub.revision + "' is not a revision (a branch, tag or commit).");
    return hub;
}

// The listing's files the download takes (--include, else what a run needs); NotFound if none.
std::vector<std::string> chosen_names(const Listing& listing, const std::vector<std::string>& include,
                                      const std::string& typed, const std::string& revision) {
    std::vector<std::string> names;
    for (const auto& f : listing.files) names.push_back(f.name);
    auto chosen = select_files(names, include);
    if (chosen.empty()) {
        if (!include.empty())
            throw HubError(HubErrorKind::NotFound, "No file of '" + typed + "' at revision '" + revision +
                                                       "' matches --include " + include_text(include) + ".");
        throw HubError(HubErrorKind::NotFound, "'" + typed + "' at revision '" + revision +
                                                   "' has none of the files a run needs (config.json, tokenizer, "
                                                   "safetensors weights).");
    }
    return chosen;
}

}  // namespace

DownloadListing list_download(const std::string& repo_id, const DownloadOptions& options, CancelFlag cancel) {
    const HubOptions hub = normalized_hub(options.hub);
    const std::string typed = detail::trim(repo_id);
    const std::string repo = normalize_repo_id(repo_id, hub.endpoint);
    if (hub.offline)
        throw HubError(HubErrorKind::Offline, "Offline mode (HF_HUB_OFFLINE or --offline): the Hub cannot be asked what '" +
                                                  typed + "' holds. Turn offline mode off to download it.");
    HttpClient client(hub, cancel);
    const Listing listing = fetch_listing(client, typed, repo, hub);
    const auto chosen = chosen_names(listing, options.include, typed, hub.revision);
    DownloadListing out;
    out.repo_id = repo;
    out.commit = listing.commit;
    const fs::path blobs = options.hub_cache / hf_cache_folder_name(repo) / "blobs";
    for (const auto& f : listing.files) {
        if (std::find(chosen.begin(), chosen.end(), f.name) == chosen.end()) continue;
        std::error_code ec;
        const bool cached = fs::exists(blobs / f.etag, ec) && fs::file_size(blobs / f.etag, ec) == f.size;
        out.files.push_back({f.name, f.size, cached});
        out.total_bytes += f.size;
        if (cached) out.cached_bytes += f.size;
    }
    return out;
}

DownloadResult download_snapshot(const std::string& repo_id, const DownloadOptions& options,
                                 const DownloadProgressCallback& progress, CancelFlag cancel) {
    const HubOptions hub = normalized_hub(options.hub);
    const std::string typed = detail::trim(repo_id);
    const std::string repo = normalize_repo_id(repo_id, hub.endpoint);
    const fs::path repo_dir = options.hub_cache / hf_cache_folder_name(repo);

    if (hub.offline) {
        auto snap = find_cached_snapshot(repo, hub.revision, options.hub_cache);
        if (!snap)
            throw HubError(HubErrorKind::NotCached,
                           "Offline mode (HF_HUB_OFFLINE or --offline): '" + typed + "' at revision '" + hub.revision +
                               "' is not in the Hugging Face cache (" + repo_dir.string() +
                               "). Download it once while online, or turn offline mode off.");
        auto r = from_cache(repo, hub.revision, *snap, options.include);
        r.warnings.push_back("Offline mode: answered from the cache; the Hub was not asked for a newer commit.");
        return r;
    }

    Downloader d(typed, repo, options, hub, progress, cancel);
    Listing listing;
    try {
        listing = fetch_listing(d.client(), typed, repo, hub);
    } catch (const HubError& e) {
        auto snap = falls_back_to_cache(e.kind()) ? find_cached_snapshot(repo, hub.revision, options.hub_cache)
                                                  : std::nullopt;
        if (!snap) throw;
        auto r = from_cache(repo, hub.revision, *snap, options.include);
        r.warnings.push_back("Could not reach " + hub.endpoint + " (" + hub_error_kind_name(e.kind()) +
                             "): using the cached snapshot " + r.commit + ", which may be older than the Hub's. Cause: " +
                             e.what());
        return r;
    }
    d.commit_ = listing.commit;

    const auto chosen = chosen_names(listing, options.include, typed, hub.revision);
    std::vector<const RepoFile*> files;
    for (const auto& f : listing.files)
        if (std::find(chosen.begin(), chosen.end(), f.name) != chosen.end()) files.push_back(&f);

    DownloadResult result;
    result.repo_id = repo;
    result.commit = listing.commit;
    result.snapshot = repo_dir / "snapshots" / listing.commit;
    result.files = chosen;
    if (options.include.empty()) {
        if (std::none_of(chosen.begin(), chosen.end(), [](const std::string& n) { return n.find(".safetensors") != std::string::npos; }))
            result.warnings.push_back("'" + repo + "' has no safetensors weights; wingspan-train needs them.");
        if (std::find(chosen.begin(), chosen.end(), "config.json") == chosen.end())
            result.warnings.push_back("'" + repo + "' has no config.json.");
    }
    d.run(listing, files, repo_dir, result);
    if (hub.revision != listing.commit) write_text_atomically(repo_dir / "refs" / hub.revision, listing.commit);
    return result;
}

}  // namespace wingspan::hub
