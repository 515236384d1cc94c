#pragma once
// Downloading a whole model from the Hugging Face Hub into the Hugging Face cache layout, so
// files are shared with transformers and huggingface_hub users:
//
//   $HF_HOME/hub/models--OWNER--NAME/blobs/<etag>            the bytes (etag: the LFS sha256,
//                                                            else the git blob id)
//   $HF_HOME/hub/models--OWNER--NAME/snapshots/<commit>/<f>  relative symlinks into blobs/
//   $HF_HOME/hub/models--OWNER--NAME/refs/<revision>         the commit the revision names
//
// A file downloads into blobs/<etag>.incomplete, resumes from there with an HTTP Range after
// a broken transfer or a restart, is checked (size, and sha256 for LFS files) and only then
// renamed into blobs/ and linked from snapshots/, so a cancel or a crash never leaves a half
// file in snapshots/. Uses the Hub import's transport, options and error messages (hub.hpp).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub.hpp"

namespace wingspan::hub {

// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub (as huggingface_hub; ~ from the password database when HOME is
// unset), else empty: a download then refuses with a clear error. Every write below it goes
// through a ConfinedDir (no link is followed; the root itself may be a link).
std::filesystem::path default_hf_hub_cache();

// Free bytes for an unprivileged user on the file system holding `dir` (statvfs), or
// nullopt if unknown. Injectable in DownloadOptions for tests.
std::optional<std::uint64_t> free_bytes_statvfs(const std::filesystem::path& dir);

struct DownloadOptions {
    HubOptions hub;                                   // endpoint, token, revision, offline, timeouts
    std::filesystem::path hub_cache = default_hf_hub_cache();
    // Globs on the repo's file names ('*', '?', '[...]'; '*' crosses '/'). Empty: what a run
    // needs (config, generation config, tokenizer and chat template files, safetensors
    // weights and their index).
    std::vector<std::string> include;
    std::function<std::optional<std::uint64_t>(const std::filesystem::path&)> free_space =
        free_bytes_statvfs;
    int attempts = 3;   // per file: a broken transfer is resumed this many times in one run
};

struct DownloadProgress {
    std::string file;                 // the file being downloaded ("" when done)
    int file_index = 0;               // 1-based
    int files = 0;                    // files to download (not already cached)
    std::uint64_t done_bytes = 0;     // of all files to download, resumed bytes included
    std::uint64_t total_bytes = 0;
    double bytes_per_second = 0;      // over this run's transferred bytes
    std::optional<double> eta_seconds;
};
using DownloadProgressCallback = std::function<void(const DownloadProgress&)>;

struct DownloadResult {
    std::string repo_id;
    std::string commit;                     // 40 hex digits
    std::filesystem::path snapshot;         // .../snapshots/<commit>
    std::vector<std::string> files;         // repo file names in the snapshot
    std::uint64_t bytes_downloaded = 0;     // this run, resumed parts excluded
    std::uint64_t bytes_cached = 0;         // already in blobs/ before
    bool offline = false;                   // answered from the cache without the Hub
    std::vector<std::string> warnings;
};

// Throws HubError: the import's kinds and messages, plus Filesystem for disk full or
// unwritable cache, Network for a file whose sha256 or size is wrong (the partial file is
// deleted), NotCached when offline and the cache has no snapshot, Cancelled.
DownloadResult download_snapshot(const std::string& repo_id, const DownloadOptions& options = {},
                                 const DownloadProgressCallback& progress = {},
                                 CancelFlag cancel = nullptr);

// What a download would fetch, asked of the Hub before it starts (so a person can agree to
// its size): the repository's commit and the chosen files with their sizes, and which are
// already whole in the cache. Nothing is written. Throws HubError as download_snapshot does
// (Offline in offline mode: there is nothing to list without the Hub).
struct DownloadListing {
    struct File {
        std::string name;
        std::uint64_t size = 0;
        bool cached = false;
    };
    std::string repo_id;
    std::string commit;
    std::vector<File> files;
    std::uint64_t total_bytes = 0;    // every chosen file
    std::uint64_t cached_bytes = 0;   // of those, already in blobs/
    std::uint64_t to_download() const { return total_bytes - cached_bytes; }
};
DownloadListing list_download(const std::string& repo_id, const DownloadOptions& options = {},
                              CancelFlag cancel = nullptr);

// The cached snapshot for repo_id at revision (a branch or tag through refs/, or a commit),
// if its folder exists. No network.
std::optional<std::filesystem::path> find_cached_snapshot(
    const std::string& repo_id, const std::string& revision = "main",
    const std::filesystem::path& hub_cache = default_hf_hub_cache());

// "models--OWNER--NAME".
std::string hf_cache_folder_name(const std::string& repo_id);

// Shell-style glob: '*' any run (also across '/'), '?' one character, '[abc]'/'[a-z]'/'[!x]'.
bool glob_match(const std::string& pattern, const std::string& name);

// The files a training run needs from a repo listing (see DownloadOptions::include).
bool needed_for_run(const std::string& file);

}  // namespace wingspan::hub
