// `wingspan download`: a model from a loopback Hub into the Hugging Face cache layout, with a
// broken transfer that resumes, a corrupted file, offline answers, a full disk, a gated repo,
// a cancel, and the CLI's exit codes and last line.
#include <QtTest/QtTest>

#include <atomic>
#include <sstream>
#include <thread>

#include "cli.hpp"
#include "fake_repo.hpp"
#include "hub_test_support.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/sha256.hpp"

using namespace hubtest;
using namespace wingspan::hub;
namespace fs = std::filesystem;


class TestHubDownload : public QObject {
    Q_OBJECT

    QTemporaryDir scratch_;
    int counter_ = 0;

    fs::path root() const { return fs::path(scratch_.path().toStdString()); }

    DownloadOptions opts(const std::string& endpoint) { return download_options(endpoint, root(), ++counter_); }

    static fs::path repo_dir(const DownloadOptions& o, const FakeRepo& r) {
        return o.hub_cache / ("models--" + r.repo.substr(0, r.repo.find('/')) + "--" + r.repo.substr(r.repo.find('/') + 1));
    }

    static int incomplete_files(const fs::path& dir) {
        int n = 0;
        std::error_code ec;
        for (auto& e : fs::recursive_directory_iterator(dir, ec))
            if (e.path().extension() == ".incomplete") ++n;
        return n;
    }

private slots:
    void initTestCase() {
        QVERIFY(scratch_.isValid());
        isolate_environment(root());
    }

    void sha256MatchesTheStandardVectors() {
        QCOMPARE(wingspan::sha256_hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        QCOMPARE(wingspan::sha256_hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        QCOMPARE(wingspan::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                 std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
        QCOMPARE(wingspan::sha256_hex(std::string(1000000, 'a')),
                 std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
        // Fed in odd pieces: the same digest.
        wingspan::Sha256 s;
        std::string text(1000, 'q');
        for (size_t i = 0; i < text.size(); i += 37) s.update(text.substr(i, 37));
        QCOMPARE(s.hex_digest(), wingspan::sha256_hex(text));
    }

    void globsAndTheFilesARunNeeds() {
        QVERIFY(glob_match("*.json", "config.json"));
        QVERIFY(glob_match("*.json", "onnx/config.json"));   // '*' crosses '/' (as huggingface_hub)
        QVERIFY(!glob_match("*.json", "model.safetensors"));
        QVERIFY(glob_match("model-0000[1-2]-of-*.safetensors", "model-00002-of-00004.safetensors"));
        QVERIFY(!glob_match("model-0000[1-2]-of-*.safetensors", "model-00003-of-00004.safetensors"));
        QVERIFY(glob_match("tokenizer?json", "tokenizer.json"));
        QVERIFY(glob_match("[!c]*", "tokenizer.json"));
        QVERIFY(!glob_match("[!c]*", "config.json"));
        QVERIFY(needed_for_run("model-00001-of-00002.safetensors"));
        QVERIFY(needed_for_run("tokenizer.model"));
        QVERIFY(needed_for_run("chat_template.jinja"));
        QVERIFY(!needed_for_run("README.md"));
        QVERIFY(!needed_for_run("pytorch_model.bin"));
        QVERIFY(!needed_for_run("onnx/model.safetensors"));
        QCOMPARE(hf_cache_folder_name("Qwen/Qwen2.5-0.5B"), std::string("models--Qwen--Qwen2.5-0.5B"));
    }

    void downloadLandsInTheHfCacheLayout() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        auto o = opts(s.url());
        std::vector<DownloadProgress> seen;
        auto r = download_snapshot(repo.repo, o, [&](const DownloadProgress& p) { seen.push_back(p); });

        const fs::path dir = repo_dir(o, repo);
        QCOMPARE(r.commit, kCommit);
        QCOMPARE(r.snapshot, dir / "snapshots" / kCommit);
        QCOMPARE(slurp(dir / "refs" / "main"), kCommit);
        // What a run needs, not the README or the onnx folder.
        const std::vector<std::string> want = {"config.json", "model-00001-of-00002.safetensors",
                                               "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                               "tokenizer.json"};
        QCOMPARE(r.files, want);
        QVERIFY(!fs::exists(r.snapshot / "README.md"));
        QVERIFY(!fs::exists(r.snapshot / "onnx"));
        std::uint64_t total = 0;
        for (const auto& name : want) {
            const fs::path link = r.snapshot / name;
            QVERIFY2(fs::is_symlink(link), name.c_str());
            QCOMPARE(fs::read_symlink(link).string(), "../../blobs/" + repo.etag(name));
            QCOMPARE(slurp(link), repo.files.at(name).bytes);
            total += repo.files.at(name).bytes.size();
        }
        QCOMPARE(r.bytes_downloaded, total);
        QCOMPARE(r.bytes_cached, std::uint64_t(0));
        QCOMPARE(incomplete_files(dir), 0);
        QVERIFY(!seen.empty());
        QCOMPARE(seen.back().done_bytes, total);
        QCOMPARE(seen.back().total_bytes, total);
        QCOMPARE(seen.back().files, 5);
        QVERIFY(seen.back().bytes_per_second > 0);

        // A second run finds every blob and transfers nothing.
        s.clear_requests();
        auto again = download_snapshot(repo.repo, o);
        QCOMPARE(again.bytes_downloaded, std::uint64_t(0));
        QCOMPARE(again.bytes_cached, total);
        QCOMPARE(s.count(repo.file_path("config.json")), 0);
        QCOMPARE(s.count(repo.file_path("model-00001-of-00002.safetensors")), 0);
    }

    // What the window's download offer shows before anything is fetched: the files a run
    // needs with their sizes, and which of them the cache already has.
    void listingGivesTheSizeBeforeAnyTransfer() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo("TestOrg/tiny-list");
        repo.publish(s);
        auto o = opts(s.url());
        const DownloadListing l = list_download(repo.repo, o);
        QCOMPARE(l.commit, kCommit);
        QCOMPARE(l.files.size(), size_t(5));   // not the README or the onnx folder
        std::uint64_t total = 0;
        for (const auto& f : l.files) {
            QCOMPARE(f.size, std::uint64_t(repo.files.at(f.name).bytes.size()));
            QVERIFY(!f.cached);
            total += f.size;
        }
        QCOMPARE(l.total_bytes, total);
        QCOMPARE(l.to_download(), total);
        QVERIFY(!fs::exists(repo_dir(o, repo)));   // nothing written
        QCOMPARE(s.count(repo.file_path("config.json")), 0);   // nothing fetched but the listing

        download_snapshot(repo.repo, o);
        const DownloadListing after = list_download(repo.repo, o);
        QCOMPARE(after.cached_bytes, total);
        QCOMPARE(after.to_download(), std::uint64_t(0));

        o.hub.offline = true;   // there is nothing to list without the Hub
        const auto err = capture([&] { list_download(repo.repo, o); });
        QVERIFY(err && err->kind() == HubErrorKind::Offline);
    }

    void includeSelectsFilesByGlob() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        auto o = opts(s.url());
        o.include = {"*.json", "README.md"};
        auto r = download_snapshot(repo.repo, o);
        const std::vector<std::string> want = {"README.md", "config.json", "model.safetensors.index.json", "tokenizer.json"};
        QCOMPARE(r.files, want);
        QVERIFY(!fs::exists(r.snapshot / "model-00001-of-00002.safetensors"));
        o.include = {"*.gguf"};
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        QCOMPARE(int(e->kind()), int(HubErrorKind::NotFound));
        QVERIFY(contains(e->what(), "matches --include *.gguf"));
    }

    void brokenTransferResumesWithRange() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        const std::string big = "model-00002-of-00002.safetensors";
        const std::string& bytes = repo.files.at(big).bytes;
        const size_t half = bytes.size() / 2 + 123;
        Route broken;   // the connection drops after `half` bytes of a longer promised body
        broken.body = bytes.substr(0, half);
        broken.claimed_length = bytes.size();
        broken.honour_range = false;
        s.route(repo.file_path(big), broken);

        auto o = opts(s.url());
        o.attempts = 1;
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        qInfo("%s", e->what());
        QCOMPARE(int(e->kind()), int(HubErrorKind::Network));
        QVERIFY(contains(e->what(), "run the same `wingspan download` again to resume"));
        const fs::path dir = repo_dir(o, repo);
        fs::path part = dir / "blobs" / (repo.etag(big) + ".incomplete");
        QVERIFY(fs::exists(part));
        QCOMPARE(fs::file_size(part), std::uintmax_t(half));
        QVERIFY(!fs::exists(dir / "snapshots" / kCommit / big));   // no half file in snapshots/
        QVERIFY(!fs::exists(dir / "blobs" / repo.etag(big)));

        // The restart asks for the rest only, and the joined file passes its sha256.
        repo.publish(s);
        s.clear_requests();
        auto r = download_snapshot(repo.repo, o);
        bool ranged = false;
        for (const auto& req : s.requests())
            if (req.path == repo.file_path(big))
                ranged = req.header("range") == "bytes=" + std::to_string(half) + "-" + std::to_string(bytes.size() - 1);
        QVERIFY(ranged);
        QCOMPARE(slurp(r.snapshot / big), bytes);
        QCOMPARE(incomplete_files(dir), 0);
        // The rest of the broken file, and the two files after it that the first run never reached.
        QCOMPARE(r.bytes_downloaded, std::uint64_t(bytes.size() - half + repo.files.at("model.safetensors.index.json").bytes.size() +
                                                   repo.files.at("tokenizer.json").bytes.size()));
    }

    void corruptedFileNeverEntersTheCache() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        const std::string big = "model-00001-of-00002.safetensors";
        std::string bad = repo.files.at(big).bytes;
        bad[bad.size() - 5] ^= 0x40;   // one flipped bit, same size
        s.file(repo.file_path(big), bad);
        auto o = opts(s.url());
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        qInfo("%s", e->what());
        QVERIFY(contains(e->what(), "is corrupted: its sha256 is " + wingspan::sha256_hex(bad)));
        QVERIFY(contains(e->what(), "the Hub lists " + repo.etag(big)));
        const fs::path dir = repo_dir(o, repo);
        QVERIFY(!fs::exists(dir / "blobs" / repo.etag(big)));
        QCOMPARE(incomplete_files(dir), 0);
        QVERIFY(!fs::exists(dir / "snapshots" / kCommit / big));
        QVERIFY(!fs::exists(dir / "refs" / "main"));
    }

    void offlineAnswersFromTheCache() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        auto o = opts(s.url());
        auto online = download_snapshot(repo.repo, o);
        s.stop();

        o.hub.offline = true;
        auto r = download_snapshot(repo.repo, o);
        QVERIFY(r.offline);
        QCOMPARE(r.snapshot, online.snapshot);
        QCOMPARE(r.files, online.files);
        QCOMPARE(find_cached_snapshot(repo.repo, "main", o.hub_cache).value(), online.snapshot);
        QCOMPARE(find_cached_snapshot(repo.repo, kCommit, o.hub_cache).value(), online.snapshot);
        QVERIFY(!find_cached_snapshot(repo.repo, "v2", o.hub_cache));

        auto e = capture([&] { download_snapshot("TestOrg/never-downloaded", o); });
        QVERIFY(e);
        QCOMPARE(int(e->kind()), int(HubErrorKind::NotCached));
        QVERIFY(contains(e->what(), "is not in the Hugging Face cache"));

        // Online but the Hub is down: the cached snapshot, with a warning that says so.
        o.hub.offline = false;
        auto fallback = download_snapshot(repo.repo, o);
        QCOMPARE(fallback.snapshot, online.snapshot);
        QCOMPARE(int(fallback.warnings.size()), 1);
        QVERIFY(contains(fallback.warnings.front(), "using the cached snapshot"));
    }

    void diskFullIsRefusedBeforeAnyTransfer() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        auto o = opts(s.url());
        o.free_space = [](const fs::path&) { return std::optional<std::uint64_t>(1000); };
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        qInfo("%s", e->what());
        QCOMPARE(int(e->kind()), int(HubErrorKind::Filesystem));
        std::uint64_t need = 0;
        for (const auto& name : {"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                 "model.safetensors.index.json", "tokenizer.json"})
            need += repo.files.at(name).bytes.size();
        QVERIFY(contains(e->what(), "needs " + std::to_string(need) + " bytes"));
        QVERIFY(contains(e->what(), "only 1000 bytes"));
        QCOMPARE(s.count(repo.file_path("config.json")), 0);
        QCOMPARE(count_files(repo_dir(o, repo) / "blobs"), 0);
        // The real statvfs answers for an existing folder.
        QVERIFY(free_bytes_statvfs(root()).value_or(0) > 0);
    }

    void gatedRepoNeedsAToken() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo("TestOrg/gated");
        repo.publish(s, "hf_secret");
        auto o = opts(s.url());
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        qInfo("%s", e->what());
        QCOMPARE(int(e->kind()), int(HubErrorKind::Unauthorized));
        QCOMPARE(e->http_status(), 401L);
        QVERIFY(contains(e->what(), "is gated or private"));
        QVERIFY(contains(e->what(), "HF_TOKEN"));
        QCOMPARE(incomplete_files(repo_dir(o, repo)), 0);
        o.hub.token = "hf_secret";
        auto r = download_snapshot(repo.repo, o);
        QCOMPARE(slurp(r.snapshot / "config.json"), repo.files.at("config.json").bytes);
    }

    void cancelLeavesNoHalfFileInSnapshots() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        Route slow;
        slow.body = repo.files.at("config.json").bytes;
        slow.body_delay_ms = 3000;
        s.route(repo.file_path("config.json"), slow);
        auto o = opts(s.url());
        std::atomic<bool> cancel{false};
        std::thread raiser([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            cancel = true;
        });
        auto e = capture([&] { download_snapshot(repo.repo, o, {}, &cancel); });
        raiser.join();
        QVERIFY(e);
        QCOMPARE(int(e->kind()), int(HubErrorKind::Cancelled));
        QVERIFY(contains(e->what(), "Download cancelled"));
        const fs::path snap = repo_dir(o, repo) / "snapshots" / kCommit;
        QCOMPARE(count_files(snap), 0);
    }

    void commandLinePrintsTheSnapshotLast() {
        TestHttpServer s;
        FakeRepo repo = tiny_repo();
        repo.publish(s);
        const fs::path cache = root() / "cli-hf" / "hub";
        ::setenv("HF_ENDPOINT", s.url().c_str(), 1);
        ::setenv("HF_HUB_CACHE", cache.c_str(), 1);
        std::ostringstream out, err;
        int rc = wingspan::cli::run({"download", repo.repo, "--include", "*.json"}, out, err);
        QCOMPARE(rc, 0);
        std::string text = out.str();
        QVERIFY(!text.empty() && text.back() == '\n');
        text.pop_back();
        const std::string last = text.substr(text.rfind('\n') + 1);
        QCOMPARE(last, (cache / ("models--TestOrg--tiny-dl") / "snapshots" / kCommit).string());
        QVERIFY(contains(err.str(), "done"));

        std::ostringstream o2, e2;
        QCOMPARE(wingspan::cli::run({"download"}, o2, e2), 2);
        QCOMPARE(wingspan::cli::run({"download", "not a repo"}, o2, e2), 2);
        QCOMPARE(wingspan::cli::run({"download", repo.repo, "--inclde", "x"}, o2, e2), 2);
        QVERIFY(contains(e2.str(), "did you mean --include"));
        QCOMPARE(wingspan::cli::run({"download", "TestOrg/missing"}, o2, e2), 2);   // 404: bad input
        ::setenv("HF_HUB_OFFLINE", "1", 1);
        std::ostringstream o3, e3;
        QCOMPARE(wingspan::cli::run({"download", repo.repo, "--include", "*.json"}, o3, e3), 0);
        QVERIFY(contains(o3.str(), last));
        QCOMPARE(wingspan::cli::run({"download", "TestOrg/other"}, o3, e3), 2);
        QVERIFY(contains(e3.str(), "[not_cached]"));
        ::unsetenv("HF_HUB_OFFLINE");
        ::unsetenv("HF_HUB_CACHE");
        ::setenv("HF_ENDPOINT", "http://127.0.0.1:9", 1);
    }
};

QTEST_GUILESS_MAIN(TestHubDownload)
#include "test_hub_download.moc"
