// A hostile cache and a lying Hub (issue 34, classes 2, 7 and 20): links planted anywhere in
// the Hugging Face cache are refused and nothing outside it is written; a body is cut off at
// the listed size; files outside LFS are checked against their git blob id; a listing whose
// files share a blob with different sizes is refused.
#include <QtTest/QtTest>

#include <fcntl.h>
#include <sys/stat.h>

#include "fake_repo.hpp"
#include "hub_test_support.hpp"
#include "wingspan/confined_dir.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/user_dirs.hpp"

using namespace hubtest;
using namespace wingspan::hub;
namespace fs = std::filesystem;

namespace {

FakeRepo small_repo(const std::string& name) {
    FakeRepo r;
    r.repo = name;
    r.files["config.json"] = {R"({"model_type":"llama"})", false};
    r.files["tokenizer.json"] = {R"({"version":"1.0"})", false};
    r.files["model.safetensors"] = {std::string(3000, 'w'), true};
    return r;
}

// Every regular file below `dir` with its bytes: what "nothing outside was written" compares.
std::map<std::string, std::string> tree(const fs::path& dir) {
    std::map<std::string, std::string> out;
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(dir, ec))
        if (e.is_regular_file() && !e.is_symlink()) out[fs::relative(e.path(), dir).string()] = slurp(e.path());
    return out;
}

std::uint64_t bytes_below(const fs::path& dir) {
    std::uint64_t n = 0;
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(dir, ec))
        if (e.is_regular_file() && !e.is_symlink()) n += e.file_size();
    return n;
}

}  // namespace

class TestHubHostile : public QObject {
    Q_OBJECT

    QTemporaryDir scratch_;
    int counter_ = 0;

    fs::path root() const { return fs::path(scratch_.path().toStdString()); }

    DownloadOptions opts(const std::string& endpoint) { return download_options(endpoint, root(), ++counter_); }
    static fs::path repo_dir(const DownloadOptions& o, const FakeRepo& r) { return o.hub_cache / hf_cache_folder_name(r.repo); }

    // A folder outside the cache with one file a redirected write would change.
    fs::path outside() {
        const fs::path d = root() / ("outside-" + std::to_string(++counter_));
        fs::create_directories(d);
        std::ofstream(d / "victim") << "precious";
        return d;
    }

private slots:
    void initTestCase() {
        QVERIFY(scratch_.isValid());
        isolate_environment(root());
    }

    // Class 20: with HOME unset the cache is the account's own (the password database's home),
    // never ./.cache or a folder other users share.
    void noHomeMeansTheAccountsHomeNotTheCurrentFolder() {
        const QByteArray home = qgetenv("HOME"), xdg = qgetenv("XDG_CACHE_HOME");
        for (const char* v : {"HOME", "XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE"}) qunsetenv(v);
        const fs::path cache = default_hf_hub_cache();
        const fs::path account = wingspan::home_directory();
        qputenv("HOME", home);
        qputenv("XDG_CACHE_HOME", xdg);
        qInfo("HOME unset: %s", cache.c_str());
        QVERIFY(!account.empty());   // the test account has a home in the password database
        QCOMPARE(cache, account / ".cache" / "huggingface" / "hub");
        QVERIFY(cache.is_absolute());
        // No cache folder at all: a download says so before it writes anything.
        DownloadOptions o;
        o.hub = options_for("http://127.0.0.1:9", root() / "unused");
        o.hub_cache.clear();
        auto e = capture([&] { download_snapshot("TestOrg/none", o); });
        QVERIFY(e && contains(e->what(), "No Hugging Face cache folder"));
    }

    void gitBlobIdsAreGits() {
        // `printf 'hello\n' | git hash-object --stdin` and the empty blob.
        auto id = [](const std::string& s) { return FakeRepo::blob_id(s); };
        QCOMPARE(id("hello\n"), std::string("ce013625030ba8dba906f756967f9e9ca394464a"));
        QCOMPARE(id(""), std::string("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"));
        wingspan::Sha1 s;
        s.update("abc");
        QCOMPARE(s.hex_digest(), std::string("a9993e364706816aba3e25717850c26c9cd0d89d"));
    }

    // Class 2: a link planted at each place the cache writes: the part file of a resume, a blob,
    // the repository's folder, blobs/, snapshots/<commit>, refs/. Each is refused with a message
    // naming the link, and the folder it points at is untouched.
    void plantedLinksAreNeverFollowed() {
        TestHttpServer s;
        const FakeRepo repo = small_repo("TestOrg/planted");
        repo.publish(s);
        const std::string etag = repo.etag("model.safetensors");
        const std::vector<std::pair<std::string, bool>> places = {   // (path in the repo folder, is a folder)
            {"blobs/" + etag + ".incomplete", false}, {"blobs/" + etag, false}, {"", true},
            {"blobs", true}, {"snapshots/" + kCommit, true}, {"snapshots", true}, {"refs", true}};
        for (const auto& [place, folder] : places) {
            auto o = opts(s.url());
            const fs::path out = outside();
            const fs::path dir = repo_dir(o, repo);
            const fs::path link = place.empty() ? dir : dir / place;
            fs::create_directories(link.parent_path());
            fs::create_symlink(folder ? out : out / "victim", link);
            const auto before = tree(out);
            auto e = capture([&] { download_snapshot(repo.repo, o); });
            QVERIFY2(e, place.c_str());
            qInfo("%s: %s", place.c_str(), e->what());
            QCOMPARE(e->kind(), HubErrorKind::Filesystem);
            QVERIFY2(contains(e->what(), link.string() + " is a symbolic link"), e->what());
            QVERIFY2(tree(out) == before, place.c_str());
            QVERIFY(fs::is_symlink(link));   // refused, not silently removed
        }
        // A hard link as the part file of a resume: refused too (appending would grow the other name).
        auto o = opts(s.url());
        const fs::path out = outside();
        fs::create_directories(repo_dir(o, repo) / "blobs");
        fs::create_hard_link(out / "victim", repo_dir(o, repo) / "blobs" / (etag + ".incomplete"));
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e && contains(e->what(), "has other hard links"));
        QCOMPARE(slurp(out / "victim"), std::string("precious"));
        // A FIFO as the part file: refused at once, never opened blocking.
        auto o2 = opts(s.url());
        fs::create_directories(repo_dir(o2, repo) / "blobs");
        QCOMPARE(::mkfifo((repo_dir(o2, repo) / "blobs" / (etag + ".incomplete")).c_str(), 0600), 0);
        e = capture([&] { download_snapshot(repo.repo, o2); });
        QVERIFY(e && contains(e->what(), "is not a regular file"));
    }

    // A planted link where a snapshot entry or the ref goes is replaced, never written through.
    void linksAtReplacedNamesAreReplacedNotFollowed() {
        TestHttpServer s;
        const FakeRepo repo = small_repo("TestOrg/replaced");
        repo.publish(s);
        auto o = opts(s.url());
        const fs::path out = outside();
        const fs::path dir = repo_dir(o, repo);
        fs::create_directories(dir / "snapshots" / kCommit);
        fs::create_directories(dir / "refs");
        fs::create_symlink(out / "victim", dir / "snapshots" / kCommit / "config.json");
        fs::create_symlink(out / "victim", dir / "refs" / "main");
        const auto before = tree(out);
        const auto r = download_snapshot(repo.repo, o);
        QCOMPARE(tree(out), before);
        QCOMPARE(fs::read_symlink(r.snapshot / "config.json").string(), "../../blobs/" + repo.etag("config.json"));
        QCOMPARE(slurp(r.snapshot / "config.json"), repo.files.at("config.json").bytes);
        QVERIFY(!fs::is_symlink(dir / "refs" / "main"));
        QCOMPARE(slurp(dir / "refs" / "main"), kCommit);
    }

    // A named pipe where the cache keeps a ref is read without blocking (an offline lookup
    // answers "not cached" at once).
    void fifoRefNeverBlocks() {
        const FakeRepo repo = small_repo("TestOrg/fifo");
        auto o = opts("http://127.0.0.1:9");
        o.hub.offline = true;
        fs::create_directories(repo_dir(o, repo) / "refs");
        QCOMPARE(::mkfifo((repo_dir(o, repo) / "refs" / "main").c_str(), 0600), 0);
        QElapsedTimer t;
        t.start();
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        QCOMPARE(e->kind(), HubErrorKind::NotCached);
        QVERIFY(t.elapsed() < 5000);
    }

    // The folder walk itself, for every other writer that uses it (the import's response cache).
    void confinedFolderRefusesLinksOnTheWay() {
        const fs::path base = root() / "confined";
        const fs::path out = outside();
        fs::create_directories(base / "a");
        fs::create_symlink(out, base / "a" / "b");
        QVERIFY_THROWS_EXCEPTION(wingspan::IoError, wingspan::ConfinedDir::open(base, "a/b/c", true));
        QVERIFY_THROWS_EXCEPTION(wingspan::IoError, wingspan::ConfinedDir::open(base, "a/../x", true));
        QVERIFY(!fs::exists(out / "c"));
        // A link at the target name of an atomic write is replaced, its target untouched.
        const auto dir = wingspan::ConfinedDir::open(base, "a", false);
        fs::create_symlink(out / "victim", base / "a" / "entry");
        wingspan::AtomicFile f(dir, "entry");
        f.write("new");
        f.commit();
        QCOMPARE(slurp(out / "victim"), std::string("precious"));
        QCOMPARE(slurp(base / "a" / "entry"), std::string("new"));
        QVERIFY(!fs::is_symlink(base / "a" / "entry"));
        // A FIFO where a file is opened: refused at once, never blocks.
        QCOMPARE(::mkfifo((base / "a" / "fifo").c_str(), 0600), 0);
        QVERIFY_THROWS_EXCEPTION(wingspan::IoError, dir.open_file("fifo", O_WRONLY | O_APPEND));
    }

    // Class 7: a server sending far more than the listed size gets at most the listed size
    // written, whatever the framing (Content-Length, chunked, a lying Content-Length, an
    // ignored Range on a resume); nothing enters the cache.
    void bodyIsCutOffAtTheListedSize() {
        const std::string flood(40 << 20, 'F');
        for (const std::string how : {"length", "chunked", "resume"}) {
            TestHttpServer s;
            FakeRepo repo = small_repo("TestOrg/flood-" + how);
            repo.files["config.json"] = {"0123456789", false};   // listed as 10 bytes
            repo.publish(s);
            Route r;
            r.body = flood;
            r.chunked = how == "chunked";
            r.honour_range = false;
            s.route(repo.file_path("config.json"), r);
            auto o = opts(s.url());
            o.attempts = 1;
            const fs::path blobs = repo_dir(o, repo) / "blobs";
            if (how == "resume") {
                fs::create_directories(blobs);
                std::ofstream(blobs / (repo.etag("config.json") + ".incomplete")) << "01234";
            }
            auto e = capture([&] { download_snapshot(repo.repo, o); });
            QVERIFY2(e, how.c_str());
            qInfo("%s: %s", how.c_str(), e->what());
            QVERIFY(!fs::exists(blobs / repo.etag("config.json")));
            QVERIFY(!fs::exists(repo_dir(o, repo) / "snapshots" / kCommit / "config.json"));
            // The other two files (3 KB and 17 B) at most, and never more than 10 B of the flood.
            QVERIFY2(bytes_below(repo_dir(o, repo)) <= 3000 + 17 + 10, std::to_string(bytes_below(repo_dir(o, repo))).c_str());
        }
    }

    // A Content-Length below the listed size: the body stops there, and the short file is refused.
    void contentLengthBelowTheListingIsRefused() {
        TestHttpServer s;
        FakeRepo repo = small_repo("TestOrg/short");
        repo.publish(s);
        Route r;
        r.body = repo.files.at("model.safetensors").bytes;
        r.claimed_length = 100;
        s.route(repo.file_path("model.safetensors"), r);
        auto o = opts(s.url());
        o.attempts = 1;
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        qInfo("%s", e->what());
        QVERIFY(contains(e->what(), "model.safetensors"));
        QVERIFY(!fs::exists(repo_dir(o, repo) / "blobs" / repo.etag("model.safetensors")));
    }

    // Files outside LFS are checked against their git blob id: other bytes of the listed size
    // never enter the cache, for any of them.
    void nonLfsFilesAreCheckedAgainstTheirBlobId() {
        for (const std::string name : {"config.json", "tokenizer.json"}) {
            TestHttpServer s;
            FakeRepo repo = small_repo("TestOrg/blob-" + name.substr(0, 6));
            repo.publish(s);
            std::string bad = repo.files.at(name).bytes;
            bad[bad.size() / 2] ^= 0x01;
            s.file(repo.file_path(name), bad);
            auto o = opts(s.url());
            auto e = capture([&] { download_snapshot(repo.repo, o); });
            QVERIFY2(e, name.c_str());
            qInfo("%s", e->what());
            QVERIFY(contains(e->what(), "git blob id"));
            QVERIFY(contains(e->what(), "the Hub lists " + repo.etag(name)));
            QVERIFY(!fs::exists(repo_dir(o, repo) / "blobs" / repo.etag(name)));
        }
    }

    // Class 20: two listed files sharing a blob id with different sizes (a 5-byte config.json
    // beside the real file) is a listing that cannot be true: refused before any transfer.
    void filesSharingABlobMustAgree() {
        TestHttpServer s;
        FakeRepo repo = small_repo("TestOrg/shared-blob");
        nlohmann::json listing = nlohmann::json::parse(repo.listing());
        const std::string tokenizer_id = repo.etag("tokenizer.json");
        for (auto& sib : listing["siblings"])
            if (sib["rfilename"] == "config.json") sib["blobId"] = tokenizer_id, sib["size"] = 5;
        repo.publish(s);
        s.file("/api/models/" + repo.repo + "/revision/main", listing.dump());
        s.file(repo.file_path("config.json"), "hello");
        auto o = opts(s.url());
        auto e = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(e);
        qInfo("%s", e->what());
        QCOMPARE(e->kind(), HubErrorKind::MalformedJson);
        QVERIFY(contains(e->what(), "share the blob " + tokenizer_id));
        QCOMPARE(count_files(repo_dir(o, repo)), 0);
        // Sharing a blob with the same size: the bytes must still hash to it.
        for (auto& sib : listing["siblings"])
            if (sib["rfilename"] == "config.json") sib["size"] = repo.files.at("tokenizer.json").bytes.size();
        s.file("/api/models/" + repo.repo + "/revision/main", listing.dump());
        std::string wrong = repo.files.at("tokenizer.json").bytes;
        wrong[3] = '#';
        s.file(repo.file_path("config.json"), wrong);
        auto again = capture([&] { download_snapshot(repo.repo, o); });
        QVERIFY(again && contains(again->what(), "git blob id"));
        QVERIFY(!fs::exists(repo_dir(o, repo) / "blobs" / tokenizer_id));
        // ... and with the right bytes, both names lead to the one blob.
        s.file(repo.file_path("config.json"), repo.files.at("tokenizer.json").bytes);
        const auto r = download_snapshot(repo.repo, o);
        QCOMPARE(slurp(r.snapshot / "tokenizer.json"), repo.files.at("tokenizer.json").bytes);
        QCOMPARE(slurp(r.snapshot / "config.json"), repo.files.at("tokenizer.json").bytes);
    }
};

QTEST_GUILESS_MAIN(TestHubHostile)
#include "test_hub_hostile.moc"
