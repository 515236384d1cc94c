#pragma once
// The Hub repository the download suites serve: the API listing (?blobs=true shape, with git
// blob ids and LFS sha256s) and every file by commit.
#include <map>
#include <string>

#include "hub_test_support.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/sha1.hpp"
#include "wingspan/sha256.hpp"

namespace hubtest {

inline const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

struct RepoFile {
    std::string bytes;
    bool lfs = false;
};

// The test's Hub repository: the API listing (?blobs=true shape) and every file by commit.
struct FakeRepo {
    std::string repo;
    std::string commit = kCommit;
    std::map<std::string, RepoFile> files;

    static std::string blob_id(const std::string& bytes) {   // git's: sha1("blob <size>\0" + bytes)
        wingspan::Sha1 s = wingspan::git_blob_hasher(bytes.size());
        s.update(bytes);
        return s.hex_digest();
    }
    std::string etag(const std::string& name) const {
        const auto& f = files.at(name);
        return f.lfs ? wingspan::sha256_hex(f.bytes) : blob_id(f.bytes);
    }
    std::string listing() const {
        nlohmann::json j = {{"id", repo}, {"sha", commit}, {"siblings", nlohmann::json::array()}};
        for (const auto& [name, f] : files) {
            nlohmann::json s = {{"rfilename", name}, {"size", f.bytes.size()}, {"blobId", blob_id(f.bytes)}};
            if (f.lfs)
                s["lfs"] = {{"sha256", wingspan::sha256_hex(f.bytes)}, {"size", f.bytes.size()}, {"pointerSize", 134}};
            j["siblings"].push_back(s);
        }
        return j.dump();
    }
    std::string file_path(const std::string& name) const { return resolve_path(repo, name, commit); }
    void publish(TestHttpServer& s, const std::string& require_bearer = {}) const {
        s.file("/api/models/" + repo + "/revision/main", listing());
        for (const auto& [name, f] : files) {
            Route r;
            r.body = f.bytes;
            r.require_bearer = require_bearer;
            s.route(file_path(name), r);
        }
    }
};

// Options for the n-th download of a suite: its own import cache and Hugging Face cache under
// `root`, and room enough on the disk.
inline wingspan::hub::DownloadOptions download_options(const std::string& endpoint, const std::filesystem::path& root, int n) {
    wingspan::hub::DownloadOptions o;
    o.hub = options_for(endpoint, root / ("import-cache-" + std::to_string(n)));
    o.hub_cache = root / ("hf-" + std::to_string(n)) / "hub";
    o.free_space = [](const std::filesystem::path&) { return std::optional<std::uint64_t>(1ull << 40); };
    return o;
}

inline FakeRepo tiny_repo(const std::string& name = "TestOrg/tiny-dl") {
    FakeRepo r;
    r.repo = name;
    for (const auto& [file, bytes] : dense_llama(name, 2).files())
        r.files[file] = {bytes, file.find(".safetensors") != std::string::npos && file.find(".json") == std::string::npos};
    // Weights that are not all zero, so a resumed file that restarted at the wrong byte shows.
    for (auto& [file, f] : r.files)
        if (f.lfs)
            for (size_t i = f.bytes.size() / 2; i < f.bytes.size(); ++i) f.bytes[i] = static_cast<char>(i * 7 + 3);
    r.files["tokenizer.json"] = {R"({"version":"1.0","model":{"type":"BPE","vocab":{},"merges":[]}})", false};
    r.files["README.md"] = {"# tiny\n", false};
    r.files["onnx/model.onnx"] = {std::string(1000, 'x'), true};
    return r;
}


}  // namespace hubtest
