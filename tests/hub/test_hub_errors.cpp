// Errors are answers: every failure of the Hub import is a HubError (an InputError) of its own
// kind with a message that says what happened and what to do, and nothing gets cached.
#include <QtTest/QtTest>

#include <atomic>
#include <thread>

#include "hub_test_support.hpp"

using namespace hubtest;
using namespace wingspan::hub;
namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

class TestHubErrors : public QObject {
    Q_OBJECT

    QTemporaryDir scratch_;
    int cache_counter_ = 0;
    fs::path cache_;   // the current test's cache; must stay empty after an error

    fs::path root() const { return fs::path(scratch_.path().toStdString()); }

    HubOptions opts(const std::string& endpoint) {
        cache_ = root() / ("cache-" + std::to_string(++cache_counter_));
        return options_for(endpoint, cache_);
    }

    // Runs an import expected to fail; checks the kind, that it is an InputError (the CLI
    // prints it and exits 2), and that the cache stayed empty.
    HubError expect_error(const std::string& repo, const HubOptions& o, HubErrorKind kind,
                          const ProgressCallback& progress = {}, CancelFlag cancel = nullptr) {
        try {
            import_from_hub(repo, o, progress, cancel);
        } catch (const HubError& e) {
            qInfo("[%s] %s", hub_error_kind_name(e.kind()), e.what());
            if (e.kind() != kind)
                qWarning("got %s: %s", hub_error_kind_name(e.kind()), e.what());
            [&] { QCOMPARE(std::string(hub_error_kind_name(e.kind())), std::string(hub_error_kind_name(kind))); }();
            const wingspan::InputError* as_input = &e;
            [&] { QVERIFY(as_input != nullptr); }();
            [&] { QCOMPARE(count_files(o.cache_dir), 0); }();
            return e;
        } catch (const std::exception& e) {
            qWarning("not a HubError: %s", e.what());
        }
        [] { QFAIL("the import did not throw a HubError"); }();
        return HubError(HubErrorKind::Network, "unreachable");
    }

    static Route status_route(int status, std::vector<std::pair<std::string, std::string>> headers = {},
                              std::string body = "error") {
        Route r;
        r.status = status;
        r.headers = std::move(headers);
        r.body = std::move(body);
        return r;
    }

private slots:
    void initTestCase() {
        QVERIFY(scratch_.isValid());
        isolate_environment(root());
    }

    void connectionRefusedIsOffline() {
        std::string endpoint;
        {
            TestHttpServer s;
            endpoint = s.url();
        }   // stopped: nothing listens there now
        HubError e = expect_error("TestOrg/anything", opts(endpoint), HubErrorKind::Offline);
        QVERIFY(contains(e.what(), "Could not connect to 127.0.0.1:"));
        QVERIFY(contains(e.what(), "offline"));
        QCOMPARE(e.http_status(), 0L);
    }

    void dnsFailure() {
        // A 64-character label cannot be encoded as a DNS name, so the resolver fails
        // locally without sending a query: the test stays on this machine.
        const std::string host = std::string(64, 'a') + ".invalid";
        HubError e = expect_error("TestOrg/anything", opts("http://" + host), HubErrorKind::Dns);
        QVERIFY(contains(e.what(), "DNS"));
        QVERIFY(contains(e.what(), host));
        QVERIFY(contains(e.what(), "HF_ENDPOINT"));
    }

    void slowServerHitsTheTimeout() {
        TestHttpServer s;
        Route slow = status_route(200, {}, "{}");
        slow.delay_ms = 3000;
        s.route(resolve_path("TestOrg/slow", "config.json"), slow);
        auto o = opts(s.url());
        o.total_timeout = milliseconds(1000);
        auto t0 = steady_clock::now();
        HubError e = expect_error("TestOrg/slow", o, HubErrorKind::Timeout);
        auto took = steady_clock::now() - t0;
        QVERIFY(took < milliseconds(2500));
        QVERIFY(took >= milliseconds(900));
        QVERIFY2(contains(e.what(), "within 1 second"), e.what());
        QVERIFY(contains(e.what(), "config.json"));

        // Headers arrive, the body never does.
        Route trickle = status_route(200, {}, "{}");
        trickle.body_delay_ms = 3000;
        s.route(resolve_path("TestOrg/slow-body", "config.json"), trickle);
        auto o2 = opts(s.url());
        o2.total_timeout = milliseconds(1000);
        expect_error("TestOrg/slow-body", o2, HubErrorKind::Timeout);

        // The total timeout covers redirects: two slow hops of 700 ms exceed 1 s together.
        Route hop1;
        hop1.status = 302;
        hop1.delay_ms = 700;
        hop1.location = "/hop2/config.json";
        s.route(resolve_path("TestOrg/slow-hops", "config.json"), hop1);
        Route hop2 = status_route(200, {}, "{}");
        hop2.delay_ms = 700;
        s.route("/hop2/config.json", hop2);
        auto o3 = opts(s.url());
        o3.total_timeout = milliseconds(1000);
        t0 = steady_clock::now();
        expect_error("TestOrg/slow-hops", o3, HubErrorKind::Timeout);
        QVERIFY(steady_clock::now() - t0 < milliseconds(2500));
    }

    void gatedNeedsAToken() {
        TestHttpServer s;
        s.route(resolve_path("meta-llama/Llama-3.1-8B", "config.json"),
                status_route(401, {{"X-Error-Code", "GatedRepo"},
                                   {"X-Error-Message", "Access to model meta-llama/Llama-3.1-8B is restricted."}}));
        HubError e = expect_error("meta-llama/Llama-3.1-8B", opts(s.url()), HubErrorKind::Unauthorized);
        QCOMPARE(e.http_status(), 401L);
        const std::string msg = e.what();
        QVERIFY(contains(msg, "gated"));
        QVERIFY(contains(msg, "token"));
        QVERIFY(contains(msg, "HF_TOKEN"));
        QVERIFY(contains(msg, "licence"));
        QVERIFY(contains(msg, s.url() + "/meta-llama/Llama-3.1-8B"));   // the model page
        QVERIFY(contains(msg, "settings/tokens"));
        QVERIFY(contains(msg, "is restricted"));                          // the Hub's own words

        // 403 with a token: the token is refused or has no access yet; never echoed.
        s.route(resolve_path("meta-llama/Llama-3.1-8B", "config.json"), status_route(403));
        auto o = opts(s.url());
        o.token = "hf_wrongTOKENvalue";
        HubError f = expect_error("meta-llama/Llama-3.1-8B", o, HubErrorKind::Unauthorized);
        QCOMPARE(f.http_status(), 403L);
        QVERIFY(contains(f.what(), "even with the token"));
        QVERIFY(contains(f.what(), "licence"));
        QVERIFY(!contains(f.what(), "hf_wrongTOKENvalue"));
    }

    void notFoundQuotesTheIdAsTyped() {
        TestHttpServer s;   // serves nothing: 404 for every file
        HubError e = expect_error("  TestOrg/No-Such-Model ", opts(s.url()), HubErrorKind::NotFound);
        QCOMPARE(e.http_status(), 404L);
        QVERIFY2(contains(e.what(), "'TestOrg/No-Such-Model'"), e.what());
        QVERIFY(contains(e.what(), "case matters"));

        // The Hub answers 401 + RepoNotFound for a missing (or private) repo without a token.
        s.route(resolve_path("TestOrg/Private", "config.json"),
                status_route(401, {{"X-Error-Code", "RepoNotFound"}}));
        HubError r = expect_error("TestOrg/Private", opts(s.url()), HubErrorKind::NotFound);
        QVERIFY(contains(r.what(), "'TestOrg/Private'"));
        QVERIFY(contains(r.what(), "HF_TOKEN"));

        // A missing revision.
        s.route(resolve_path("TestOrg/model", "config.json", "v9"),
                status_route(404, {{"X-Error-Code", "RevisionNotFound"}}));
        auto o = opts(s.url());
        o.revision = "v9";
        HubError v = expect_error("TestOrg/model", o, HubErrorKind::NotFound);
        QVERIFY(contains(v.what(), "Revision 'v9'"));

        // A shard named by the index but missing.
        Fixture f = dense_llama("TestOrg/missing-shard", 2);
        serve(s, f);
        s.remove(resolve_path(f.repo, f.shard_name(1)));
        HubError m = expect_error(f.repo, opts(s.url()), HubErrorKind::NotFound);
        QVERIFY(contains(m.what(), f.shard_name(1)));
        QVERIFY(contains(m.what(), "'TestOrg/missing-shard'"));
    }

    void rateLimitedSaysWhenToRetry() {
        TestHttpServer s;
        s.route(resolve_path("TestOrg/busy", "config.json"), status_route(429, {{"Retry-After", "17"}}));
        HubError e = expect_error("TestOrg/busy", opts(s.url()), HubErrorKind::RateLimited);
        QCOMPARE(e.http_status(), 429L);
        QCOMPARE(e.retry_after_seconds(), std::optional<long>(17));
        QVERIFY2(contains(e.what(), "Retry in 17 seconds"), e.what());
        QVERIFY(contains(e.what(), "HF_TOKEN"));

        // An HTTP-date two minutes ahead.
        std::time_t at = std::time(nullptr) + 120;
        char date[64];
        std::tm tm{};
        gmtime_r(&at, &tm);
        std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        s.route(resolve_path("TestOrg/busy", "config.json"), status_route(429, {{"Retry-After", date}}));
        HubError d = expect_error("TestOrg/busy", opts(s.url()), HubErrorKind::RateLimited);
        QVERIFY(d.retry_after_seconds().has_value());
        QVERIFY(*d.retry_after_seconds() >= 115 && *d.retry_after_seconds() <= 120);

        // Without Retry-After.
        s.route(resolve_path("TestOrg/busy", "config.json"), status_route(429));
        HubError n = expect_error("TestOrg/busy", opts(s.url()), HubErrorKind::RateLimited);
        QVERIFY(!n.retry_after_seconds());
        QVERIFY(contains(n.what(), "Wait a minute"));
    }

    void serverErrors() {
        TestHttpServer s;
        for (int status : {500, 502, 503}) {
            s.route(resolve_path("TestOrg/down", "config.json"), status_route(status));
            HubError e = expect_error("TestOrg/down", opts(s.url()), HubErrorKind::ServerError);
            QCOMPARE(e.http_status(), static_cast<long>(status));
            QVERIFY(contains(e.what(), "HTTP " + std::to_string(status)));
            QVERIFY(contains(e.what(), "server"));
        }
        // A 5xx on a shard, after config and index succeeded: still nothing cached.
        Fixture f = dense_llama("TestOrg/half-down", 2);
        serve(s, f);
        s.route(resolve_path(f.repo, f.shard_name(1)), status_route(503));
        expect_error(f.repo, opts(s.url()), HubErrorKind::ServerError);
    }

    void oversizedResponses() {
        TestHttpServer s;
        // With a Content-Length over the limit.
        s.file(resolve_path("TestOrg/big", "config.json"), "{\"pad\":\"" + std::string(5000, 'x') + "\"}");
        auto o = opts(s.url());
        o.max_response_bytes = 1000;
        HubError e = expect_error("TestOrg/big", o, HubErrorKind::TooLarge);
        QVERIFY(contains(e.what(), "1000 bytes"));
        QVERIFY(contains(e.what(), "config.json"));

        // Chunked, no length: stopped while reading.
        Route chunked;
        chunked.body = "{\"pad\":\"" + std::string(50000, 'x') + "\"}";
        chunked.chunked = true;
        s.route(resolve_path("TestOrg/big-chunked", "config.json"), chunked);
        auto o2 = opts(s.url());
        o2.max_response_bytes = 1000;
        expect_error("TestOrg/big-chunked", o2, HubErrorKind::TooLarge);

        // A safetensors header claiming more than the limit.
        Fixture f = gqa_qwen2("TestOrg/big-header");
        serve(s, f);
        std::string file = lying_prefix(5000, std::string(6000, ' '));
        s.file(resolve_path(f.repo, "model.safetensors"), file);
        auto o3 = opts(s.url());
        o3.max_response_bytes = 1000;
        HubError h = expect_error(f.repo, o3, HubErrorKind::TooLarge);
        QVERIFY(contains(h.what(), "5000"));
    }

    void malformedJson() {
        TestHttpServer s;
        s.file(resolve_path("TestOrg/broken", "config.json"), "{\"hidden_size\": 64,");
        HubError e = expect_error("TestOrg/broken", opts(s.url()), HubErrorKind::MalformedJson);
        QVERIFY(contains(e.what(), "TestOrg/broken/config.json"));
        QVERIFY(contains(e.what(), "not valid JSON"));

        s.file(resolve_path("TestOrg/html", "config.json"), "<!DOCTYPE html><html><body>Sign in</body></html>");
        HubError h = expect_error("TestOrg/html", opts(s.url()), HubErrorKind::MalformedJson);
        QVERIFY(contains(h.what(), "web page"));

        s.file(resolve_path("TestOrg/array", "config.json"), "[1, 2]");
        expect_error("TestOrg/array", opts(s.url()), HubErrorKind::MalformedJson);

        // An index without weight_map, and one that points outside the repo.
        Fixture f = dense_llama("TestOrg/bad-index", 2);
        serve(s, f);
        s.file(resolve_path(f.repo, "model.safetensors.index.json"), "{\"metadata\": {}}");
        HubError i = expect_error(f.repo, opts(s.url()), HubErrorKind::MalformedJson);
        QVERIFY(contains(i.what(), "weight_map"));
        s.file(resolve_path(f.repo, "model.safetensors.index.json"),
               "{\"weight_map\": {\"a\": \"../../secrets.safetensors\"}}");
        expect_error(f.repo, opts(s.url()), HubErrorKind::MalformedJson);

        // config.json that is JSON but not a model we can describe.
        s.file(resolve_path("TestOrg/not-a-decoder", "config.json"), "{\"model_type\": \"llama\"}");
        HubError u = expect_error("TestOrg/not-a-decoder", opts(s.url()), HubErrorKind::UnsupportedConfig);
        QVERIFY(contains(u.what(), "config.json"));
    }

    void safetensorsHeaderThatLies() {
        TestHttpServer s;
        Fixture f = gqa_qwen2("TestOrg/liar");
        serve(s, f);
        const std::string good = f.files()["model.safetensors"];
        const std::string path = resolve_path(f.repo, "model.safetensors");

        // Claims a 1 MB header in a 100-byte file.
        s.file(path, lying_prefix(1'000'000, std::string(92, ' ')));
        HubError a = expect_error(f.repo, opts(s.url()), HubErrorKind::BadSafetensors);
        QVERIFY2(contains(a.what(), "claims to be 1000000 bytes"), a.what());
        QVERIFY(contains(a.what(), "only 100 bytes"));

        // Claims more than any header may be (the format's 100 MB limit).
        s.file(path, lying_prefix(1ull << 40, std::string(92, ' ')));
        HubError b = expect_error(f.repo, opts(s.url()), HubErrorKind::BadSafetensors);
        QVERIFY(contains(b.what(), "lies about its size"));

        // Claims fewer bytes than the JSON has: the header is cut mid-way.
        std::uint64_t real = 0;
        for (int i = 7; i >= 0; --i) real = (real << 8) | static_cast<unsigned char>(good[static_cast<size_t>(i)]);
        std::string cut = good;
        std::uint64_t shorter = real - 16;
        for (int i = 0; i < 8; ++i) cut[static_cast<size_t>(i)] = static_cast<char>((shorter >> (8 * i)) & 0xff);
        s.file(path, cut);
        HubError c = expect_error(f.repo, opts(s.url()), HubErrorKind::BadSafetensors);
        QVERIFY(contains(c.what(), "not valid"));

        // Tensor data said to run past the end of the file.
        s.file(path, good.substr(0, good.size() - 64));
        expect_error(f.repo, opts(s.url()), HubErrorKind::BadSafetensors);

        // Shorter than the 8-byte prefix.
        s.file(path, "abc");
        HubError e = expect_error(f.repo, opts(s.url()), HubErrorKind::BadSafetensors);
        QVERIFY(contains(e.what(), "not a safetensors file"));
    }

    void truncatedBodyCachesNothing() {
        TestHttpServer s;
        Route cut;
        cut.body = std::string(500, ' ');
        cut.claimed_length = 1000;   // the connection closes after 500 of 1000 bytes
        s.route(resolve_path("TestOrg/cut", "config.json"), cut);
        HubError e = expect_error("TestOrg/cut", opts(s.url()), HubErrorKind::Network);
        QVERIFY(contains(e.what(), "config.json"));
    }

    void redirectProblems() {
        TestHttpServer s;
        Route loop;
        loop.status = 302;
        loop.location = resolve_path("TestOrg/loop", "config.json");
        s.route(resolve_path("TestOrg/loop", "config.json"), loop);
        HubError e = expect_error("TestOrg/loop", opts(s.url()), HubErrorKind::HttpError);
        QVERIFY(contains(e.what(), "Too many redirects"));

        Route nowhere;
        nowhere.status = 302;
        s.route(resolve_path("TestOrg/nowhere", "config.json"), nowhere);
        expect_error("TestOrg/nowhere", opts(s.url()), HubErrorKind::HttpError);

        Route ftp;
        ftp.status = 302;
        ftp.location = "ftp://127.0.0.1/config.json";
        s.route(resolve_path("TestOrg/ftp", "config.json"), ftp);
        expect_error("TestOrg/ftp", opts(s.url()), HubErrorKind::HttpError);
    }

    void cancelStopsPromptly() {
        TestHttpServer s;
        Route slow = status_route(200, {}, "{}");
        slow.delay_ms = 5000;
        s.route(resolve_path("TestOrg/slow", "config.json"), slow);
        std::atomic<bool> cancel{false};
        std::thread canceller([&] {
            std::this_thread::sleep_for(milliseconds(200));
            cancel = true;
        });
        auto t0 = steady_clock::now();
        HubError e = expect_error("TestOrg/slow", opts(s.url()), HubErrorKind::Cancelled, {}, &cancel);
        canceller.join();
        QVERIFY(steady_clock::now() - t0 < milliseconds(2000));
        QVERIFY(contains(e.what(), "cancelled"));

        // Cancelled from the progress callback, between files.
        Fixture f = dense_llama("TestOrg/cancel-mid", 2);
        serve(s, f);
        std::atomic<bool> stop{false};
        expect_error(f.repo, opts(s.url()), HubErrorKind::Cancelled,
                     [&](const Progress& p) {
                         if (p.file == f.shard_name(1)) stop = true;
                     },
                     &stop);
    }

    void offlineWithoutCache() {
        auto o = opts("http://127.0.0.1:9");
        o.offline = true;
        HubError e = expect_error("TestOrg/never-seen", o, HubErrorKind::NotCached);
        QVERIFY(contains(e.what(), "Offline mode"));
        QVERIFY(contains(e.what(), "'TestOrg/never-seen'"));
    }

    void invalidIds() {
        auto o = opts("http://127.0.0.1:9");
        HubError e = expect_error("not a model id!", o, HubErrorKind::InvalidId);
        QVERIFY(contains(e.what(), "'not a model id!'"));
        QVERIFY(contains(e.what(), "owner/name"));
    }

    void folderErrors() {
        HubError a = *capture([&] { import_from_folder(root() / "does-not-exist"); });
        QCOMPARE(a.kind(), HubErrorKind::Filesystem);
        fs::path empty = root() / "empty-folder";
        fs::create_directories(empty);
        HubError b = *capture([&] { import_from_folder(empty); });
        QCOMPARE(b.kind(), HubErrorKind::NotFound);
        QVERIFY(contains(b.what(), "No config.json"));

        Fixture f = gqa_qwen2();
        fs::path d = root() / "liar-folder";
        write_folder(d, f);
        {
            std::ofstream(d / "model.safetensors", std::ios::binary | std::ios::trunc)
                << lying_prefix(1'000'000, std::string(92, ' '));
        }
        HubError c = *capture([&] { import_from_folder(d); });
        QCOMPARE(c.kind(), HubErrorKind::BadSafetensors);
        QVERIFY(contains(c.what(), "claims to be 1000000 bytes"));

        {
            std::ofstream(d / "config.json", std::ios::trunc) << "{oops";
        }
        HubError j = *capture([&] { import_from_folder(d); });
        QCOMPARE(j.kind(), HubErrorKind::MalformedJson);

        Fixture g = dense_llama("x/y", 2);
        fs::path d2 = root() / "missing-shard-folder";
        write_folder(d2, g);
        fs::remove(d2 / g.shard_name(0));
        HubError m = *capture([&] { import_from_folder(d2); });
        QCOMPARE(m.kind(), HubErrorKind::NotFound);
        QVERIFY(contains(m.what(), g.shard_name(0)));
    }
};

QTEST_GUILESS_MAIN(TestHubErrors)
#include "test_hub_errors.moc"
