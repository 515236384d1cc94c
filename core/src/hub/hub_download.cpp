// `wingspan download`: a whole model into the Hugging Face cache layout (see hub_download.hpp),
// on the Hub import's transport (detail::HttpClient) and error messages (detail::status_error).
#include "wingspan/hub_download.hpp"
#include "wingspan/confined_dir.hpp"
#include "wingspan/safe_file.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <unistd.h>

#include "hub/hub_internal.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/sha1.hpp"
#include "wingspan/sha256.hpp"

namespace wingspan::hub {

namespace fs = std::filesystem;
using detail::ByteRange;
using detail::HttpClient;
using detail::HttpResponse;

namespace {

using detail::is_hex;

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
        if (!f.lfs && f.etag.size() != 40) throw bad("'" + f.name + "' has a blob id that is not 40 hex digits");
        // One blob holds one content: files sharing it must agree on its size and kind.
        for (const RepoFile& other : l.files)
            if (other.etag == f.etag && (other.size != f.size || other.lfs != f.lfs))
                throw bad("'" + other.name + "' and '" + f.name + "' share the blob " + f.etag +
                          " but are listed with different sizes (" + std::to_string(other.size) + " and " +
                          std::to_string(f.size) + " bytes)");
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

// Every write into the cache goes through a ConfinedDir: a link planted anywhere below the
// cache root (models--x, blobs, snapshots, refs, a part file) is refused, never followed.
template <typename F>
auto in_cache(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const IoError& e) {
        throw HubError(HubErrorKind::Filesystem, std::string(e.what()) + ".");
    }
}

// refs/<revision> (a branch may hold '/': refs/pr/1) -> the commit, atomically.
void write_ref(const ConfinedDir& repo, const std::string& revision, const std::string& commit) {
    in_cache([&] {
        const fs::path ref = fs::path("refs") / revision;
        const ConfinedDir dir = repo.sub(ref.parent_path(), true);
        AtomicFile out(dir, ref.filename().string());   // exclusive, no-follow temporary; fsync; rename
        out.write(commit);
        out.commit();
    });
}

// snapshots/<commit>/<name> -> ../../blobs/<etag> (one more ../ per folder in name); a hard
// link where the file system has no symlinks. Replaced atomically.
void link_into_snapshot(const ConfinedDir& snapshot, const std::string& name, const ConfinedDir& blobs,
                        const std::string& etag) {
    in_cache([&] {
        const fs::path rel(name);
        const ConfinedDir dir = snapshot.sub(rel.parent_path(), true);
        const std::string leaf = rel.filename().string();
        std::string target;
        for (int i = 0, n = static_cast<int>(std::count(name.begin(), name.end(), '/')) + 2; i < n; ++i) target += "../";
        target += "blobs/" + etag;
        if (dir.read_link(leaf) == target) return;
        try {
            dir.replace_with_link(leaf, target);
        } catch (const IoError&) {   // no symlinks here (FAT, some network shares): a hard link
            const std::string tmp = "." + leaf + ".tmp-hardlink";
            dir.remove(tmp);
            if (::linkat(blobs.fd(), etag.c_str(), dir.fd(), tmp.c_str(), 0) != 0)
                throw IoError("cannot link " + (dir.path() / leaf).string() + " to its blob: " + std::strerror(errno));
            dir.rename(tmp, leaf);
        }
    });
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

    void run(const Listing& l, const std::vector<const RepoFile*>& files, const ConfinedDir& repo,
             DownloadResult& result) {
        const ConfinedDir blobs = in_cache([&] { return repo.sub("blobs", true); });
        const ConfinedDir snapshot = in_cache([&] { return repo.sub(fs::path("snapshots") / l.commit, true); });

        // What is left to fetch, partial files counted as done. A blob two files share is
        // fetched once.
        std::vector<const RepoFile*> todo;
        std::set<std::string> seen;
        std::uint64_t need = 0;
        for (const RepoFile* f : files) {
            if (!seen.insert(f->etag).second) continue;
            const auto blob = blobs.entry(f->etag);
            if (blob.kind == ConfinedDir::Entry::File && blob.size == f->size) {
                result.bytes_cached += f->size;
                continue;
            }
            if (blob.kind == ConfinedDir::Entry::Other)
                throw HubError(HubErrorKind::Filesystem, blobs.refusal(f->etag) + ".");
            todo.push_back(f);
            total_ += f->size;
            const std::uint64_t have = partial_size(blobs, *f);
            done_ += have;
            need += f->size - have;
        }
        if (o_.free_space && need > 0) {
            if (auto free = o_.free_space(blobs.path()); free && *free < need)
                throw HubError(HubErrorKind::Filesystem,
                               "Not enough disk space for " + repo_ + ": the download needs " + std::to_string(need) +
                                   " bytes (" + gb(need) + ") in " + blobs.path().string() + ", and only " +
                                   std::to_string(*free) + " bytes (" + gb(*free) +
                                   ") are free. Free some space, or set HF_HOME to a folder on a larger disk.");
        }
        files_ = static_cast<int>(todo.size());
        started_ = std::chrono::steady_clock::now();
        for (const RepoFile* f : todo) {
            ++index_;
            fetch(*f, blobs);
        }
        for (const RepoFile* f : files) link_into_snapshot(snapshot, f->name, blobs, f->etag);
        result.bytes_downloaded = transferred_;
        report("", true);
    }

private:
    static std::string part_name(const RepoFile& f) { return f.etag + ".incomplete"; }

    // Bytes of the file already received; a part file that is not a plain file (a planted
    // link, a FIFO) is refused, one longer than the file is dropped.
    static std::uint64_t partial_size(const ConfinedDir& blobs, const RepoFile& f) {
        const auto part = blobs.entry(part_name(f));
        if (part.kind == ConfinedDir::Entry::Other)
            throw HubError(HubErrorKind::Filesystem, blobs.refusal(part_name(f)) + ".");
        if (part.kind == ConfinedDir::Entry::Missing) return 0;
        // A resume appends to it: a part file that is another file's hard link would grow that one.
        if (part.links > 1)
            throw HubError(HubErrorKind::Filesystem, (blobs.path() / part_name(f)).string() +
                                                         " has other hard links; Wingspan never appends to a file that is "
                                                         "also elsewhere. Remove it and try again.");
        if (part.size > f.size) {
            blobs.remove(part_name(f));
            return 0;
        }
        return part.size;
    }

    // An answer without a byte of the file leaves no empty part file behind.
    static void drop_if_empty(const ConfinedDir& blobs, const RepoFile& f) {
        const auto part = blobs.entry(part_name(f));
        if (part.kind == ConfinedDir::Entry::File && part.size == 0) blobs.remove(part_name(f));
    }

    // The part file's bytes against the listing: its sha256 for LFS files, else its git blob
    // id. Read through the confined folder, so what is checked is what is renamed.
    static std::string digest_of(const ConfinedDir& blobs, const RepoFile& f) {
        Fd in = in_cache([&] { return blobs.open_file(part_name(f), O_RDONLY); });
        Sha256 sha256;
        Sha1 sha1 = git_blob_hasher(f.size);
        std::vector<char> buf(1 << 20);
        for (;;) {
            const ssize_t n = ::read(in.get(), buf.data(), buf.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0)
                throw HubError(HubErrorKind::Filesystem, "Cannot read " + (blobs.path() / part_name(f)).string() + ": " +
                                                             std::strerror(errno) + ".");
            if (n == 0) break;
            if (f.lfs) sha256.update(buf.data(), size_t(n));
            else sha1.update(buf.data(), size_t(n));
        }
        return f.lfs ? sha256.hex_digest() : sha1.hex_digest();
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

    void fetch(const RepoFile& f, const ConfinedDir& blobs) {
        const std::string part = part_name(f);
        const fs::path part_path = blobs.path() / part;
        // By commit, so every file comes from the same commit even if the branch moves meanwhile.
        const std::string url = resolve_url(hub_.endpoint, repo_, commit_, f.name);
        const std::string what = f.name + " of " + repo_;
        for (int attempt = 1;; ++attempt) {
            const std::uint64_t have = partial_size(blobs, f);
            Fd out = in_cache([&] { return blobs.open_file(part, O_WRONLY | O_APPEND | O_CREAT); });
            int write_errno = 0;
            HttpClient::BodySink sink = [&](const char* data, std::size_t n) {
                for (std::size_t done = 0; done < n;) {
                    const ssize_t w = ::write(out.get(), data + done, n - done);
                    if (w < 0 && errno == EINTR) continue;
                    if (w <= 0) {
                        write_errno = w < 0 ? errno : ENOSPC;
                        return false;
                    }
                    done += size_t(w);
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
                // Never more than the listing says the file holds: a lying server cannot fill the disk.
                if (have < f.size || f.size == 0) r = client().get_to(url, range, what, sink, f.size - have);
                else r.status = 200;   // the partial file is already whole: verify it below
                out = Fd();
            } catch (const HubError& e) {
                out = Fd();
                drop_if_empty(blobs, f);
                if (write_errno)
                    throw HubError(HubErrorKind::Filesystem,
                                   "Cannot write " + part_path.string() + ": " + std::strerror(write_errno) +
                                       ". Free some space; the next `wingspan download` resumes where this one stopped.");
                if (e.kind() == HubErrorKind::Cancelled)
                    throw HubError(HubErrorKind::Cancelled,
                                   "Download cancelled. The part of " + f.name + " received so far stays in " +
                                       part_path.string() + "; the next `wingspan download` of " + repo_ + " resumes from there.");
                if (resumable(e.kind()) && attempt < o_.attempts) continue;
                if (resumable(e.kind()))
                    throw HubError(e.kind(), std::string(e.what()) + " " + std::to_string(partial_size(blobs, f)) + " of " +
                                                 std::to_string(f.size) + " bytes of " + f.name + " are kept in " +
                                                 part_path.string() + "; run the same `wingspan download` again to resume.",
                                   e.http_status());
                if (e.kind() == HubErrorKind::TooLarge) blobs.remove(part);   // it sent more than the file holds
                throw;
            }
            if (r.status == 416) {   // the server does not know our range: start over
                blobs.remove(part);
                if (attempt < o_.attempts) continue;
            }
            if (r.status != 200 && r.status != 206) {
                drop_if_empty(blobs, f);
                throw detail::status_error(r, typed_, repo_, hub_, f.name, what);
            }
            break;
        }
        const std::uint64_t got = blobs.entry(part).size;
        if (got != f.size) {
            blobs.remove(part);
            throw HubError(HubErrorKind::Network,
                           f.name + " of " + repo_ + " arrived with " + std::to_string(got) + " bytes, but the Hub lists " +
                               std::to_string(f.size) + ". The damaged download was deleted; run `wingspan download` again.");
        }
        if (const std::string digest = digest_of(blobs, f); digest != f.etag) {
            blobs.remove(part);
            throw HubError(HubErrorKind::Network,
                           f.name + " of " + repo_ + " is corrupted: its " + (f.lfs ? "sha256" : "git blob id") + " is " +
                               digest + ", but the Hub lists " + f.etag +
                               ". The damaged download was deleted (nothing entered the cache); run "
                               "`wingspan download` again, and if it repeats, check for a proxy that alters downloads.");
        }
        in_cache([&] { blobs.rename(part, f.etag); });
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

namespace {

// The options a download runs with: no trailing '/', main by default, a trimmed token, and a
// whole-run timeout long enough for big files (stalls still time out). Throws for a revision
// that could leave the cache folder.
// The cache folder a download writes to; none when no variable names one and there is no home.
void require_cache_folder(const fs::path& hub_cache) {
    if (hub_cache.empty())
        throw HubError(HubErrorKind::Filesystem,
                       "No Hugging Face cache folder: HOME is not set and the user has no home folder. Set HF_HUB_CACHE "
                       "(or HF_HOME, or HOME) to the folder to download into.");
}

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
    require_cache_folder(options.hub_cache);
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
        const bool cached = !fs::is_symlink(blobs / f.etag, ec) && fs::is_regular_file(blobs / f.etag, ec) &&
                            fs::file_size(blobs / f.etag, ec) == f.size;
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
    require_cache_folder(options.hub_cache);

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
    const ConfinedDir repo_folder = in_cache([&] { return ConfinedDir::open(options.hub_cache, hf_cache_folder_name(repo), true); });
    d.run(listing, files, repo_folder, result);
    if (hub.revision != listing.commit) write_ref(repo_folder, hub.revision, listing.commit);
    return result;
}

}  // namespace wingspan::hub
