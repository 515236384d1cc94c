// The Hugging Face cache that `wingspan download` fills, read without the network: where it is
// (HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME or ~/.cache), the free space under it, and the snapshot a
// revision names.
#include <sys/statvfs.h>

#include <algorithm>

#include "hub/hub_internal.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/user_dirs.hpp"

namespace wingspan::hub {

namespace fs = std::filesystem;

bool detail::is_hex(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    });
}

fs::path default_hf_hub_cache() {
    if (std::string v = detail::env("HF_HUB_CACHE"); !v.empty()) return v;
    if (std::string v = detail::env("HF_HOME"); !v.empty()) return fs::path(v) / "hub";
    if (std::string v = detail::env("XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "huggingface" / "hub";
    if (const fs::path h = home_directory(); !h.empty()) return h / ".cache" / "huggingface" / "hub";
    return {};   // no home: download_snapshot says so (never ./.cache or a shared folder)
}

std::optional<std::uint64_t> free_bytes_statvfs(const fs::path& dir) {
    struct statvfs s {};
    if (::statvfs(dir.c_str(), &s) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(s.f_bavail) * static_cast<std::uint64_t>(s.f_frsize);
}

std::optional<fs::path> find_cached_snapshot(const std::string& repo_id, const std::string& revision,
                                             const fs::path& hub_cache) {
    if (hub_cache.empty()) return std::nullopt;
    const fs::path repo_dir = hub_cache / hf_cache_folder_name(repo_id);
    std::error_code ec;
    const std::string rev = revision.empty() ? "main" : revision;
    if (detail::safe_relative_file(rev)) {
        // A ref is a commit hash: only a small regular file is read (a FIFO planted there never blocks).
        const fs::path ref = repo_dir / "refs" / rev;
        std::string commit;
        if (fs::is_regular_file(ref, ec) && fs::file_size(ref, ec) <= 4096 && !ec) commit = read_regular_file(ref, 4096);
        if (!commit.empty()) {
            commit = detail::trim(commit.substr(0, commit.find('\n')));
            if (detail::is_hex(commit) && fs::is_directory(repo_dir / "snapshots" / commit, ec))
                return repo_dir / "snapshots" / commit;
        }
    }
    if (detail::is_hex(rev) && fs::is_directory(repo_dir / "snapshots" / rev, ec)) return repo_dir / "snapshots" / rev;
    return std::nullopt;
}

}  // namespace wingspan::hub
