// The Hub import and the local-folder import: exact counts for dense, GQA and MoE models,
// range requests, redirects, the token, the disk cache (offline), helpers.
#include <QtTest/QtTest>

#include <atomic>

#include "hub_test_support.hpp"

using namespace hubtest;
using namespace wingspan::hub;
namespace fs = std::filesystem;

class TestHubImport : public QObject {
    Q_OBJECT

    QTemporaryDir scratch_;
    int cache_counter_ = 0;

    fs::path root() const { return fs::path(scratch_.path().toStdString()); }
    fs::path fresh_cache() { return root() / ("cache-" + std::to_string(++cache_counter_)); }

    static std::string all_warnings(const ImportedModel& m) {
        std::string s;
        for (const auto& w : m.warnings) s += w + "\n";
        return s;
    }

    static void check_fixture_counts(const ImportedModel& m, const Fixture& f) {
        QCOMPARE(f.count(), f.expected_params);   // the fixture itself is right
        QVERIFY(m.has_checkpoint);
        QCOMPARE(m.checkpoint_parameters, f.expected_params);
        QCOMPARE(m.architecture_parameters, f.expected_params);
        QCOMPARE(m.arch.parameter_count(), f.expected_params);
        QCOMPARE(m.parameters, f.expected_params);
        std::uint64_t bytes = 0;
        auto want = f.by_dtype();
        QCOMPARE(m.by_dtype.size(), want.size());
        for (const auto& [dtype, eb] : want) {
            QVERIFY2(m.by_dtype.count(dtype), dtype.c_str());
            QCOMPARE(m.by_dtype.at(dtype).elements, eb.first);
            QCOMPARE(m.by_dtype.at(dtype).bytes, eb.second);
            bytes += eb.second;
        }
        QCOMPARE(m.checkpoint_bytes, bytes);
        QVERIFY(!m.quantized_checkpoint);
        QCOMPARE(m.profile.family, std::string("imported"));
        QCOMPARE(m.profile.arch.parameter_count(), f.expected_params);
    }

private slots:
    void initTestCase() {
        QVERIFY(scratch_.isValid());
        isolate_environment(root());
    }

    void defaultsComeFromTheEnvironment() {
        ::setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
        ::setenv("HF_TOKEN", "  hf_from_env  ", 1);
        ::setenv("HF_HUB_OFFLINE", "1", 1);
        HubOptions o;
        QCOMPARE(o.endpoint, std::string("http://127.0.0.1:9"));
        QCOMPARE(o.token, std::string("hf_from_env"));
        QVERIFY(o.offline);
        QCOMPARE(o.revision, std::string("main"));
        QCOMPARE(o.cache_dir, root() / "xdg-cache" / "wingspan" / "hub");
        ::unsetenv("HF_TOKEN");
        ::unsetenv("HF_HUB_OFFLINE");
        // The token file huggingface-cli login writes.
        {
            std::ofstream(root() / "token-file") << "hf_from_file\n";
        }
        ::setenv("HF_TOKEN_PATH", (root() / "token-file").c_str(), 1);
        QCOMPARE(token_from_environment(), std::string("hf_from_file"));
        isolate_environment(root());
        QCOMPARE(token_from_environment(), std::string());
        ::unsetenv("HF_ENDPOINT");
        QCOMPARE(default_endpoint(), std::string("https://huggingface.co"));
        isolate_environment(root());
    }

    void denseShardedExact() {
        TestHttpServer s;
        Fixture f = dense_llama();
        serve(s, f);
        auto opt = options_for(s.url(), fresh_cache());
        ImportedModel m = import_from_hub(f.repo, opt);
        check_fixture_counts(m, f);
        QCOMPARE(m.parameters, std::int64_t(115008));
        QCOMPARE(m.by_dtype.at("BF16").bytes, std::uint64_t(230016));
        QCOMPARE(m.weight_files.size(), size_t(2));
        QCOMPARE(m.weight_files[0], std::string("model-00001-of-00002.safetensors"));
        QCOMPARE(m.source, std::string("hub"));
        QCOMPARE(m.repo_id, f.repo);
        QCOMPARE(m.profile.id, std::string("hf-testorg--tiny-llama"));
        QCOMPARE(m.profile.name, std::string("tiny-llama"));
        QCOMPARE(m.profile.hf_repo, f.repo);
        QCOMPARE(m.config["model_type"].get<std::string>(), std::string("llama"));
        QVERIFY2(m.warnings.empty(), all_warnings(m).c_str());
        QVERIFY(!m.used_cache);

        // Only headers were read: every shard request is a range request, two per shard.
        for (int i = 0; i < 2; ++i) {
            std::string path = resolve_path(f.repo, f.shard_name(i));
            QCOMPARE(s.count(path), 2);
        }
        for (const auto& r : s.requests()) {
            if (contains(r.path, ".safetensors") && !contains(r.path, "index.json"))
                QVERIFY2(r.header("range").rfind("bytes=", 0) == 0, r.path.c_str());
            QVERIFY(r.header("authorization").empty());   // no token given
            QVERIFY(contains(r.header("user-agent"), "wingspan/"));
        }
        std::vector<std::string> ranges;
        for (const auto& r : s.requests())
            if (r.path == resolve_path(f.repo, f.shard_name(0))) ranges.push_back(r.header("range"));
        QCOMPARE(ranges.front(), std::string("bytes=0-7"));
        QVERIFY(ranges.back().rfind("bytes=8-", 0) == 0);
    }

    void gqaSingleFileExact() {
        TestHttpServer s;
        Fixture f = gqa_qwen2();
        serve(s, f);
        ImportedModel m = import_from_hub(f.repo, options_for(s.url(), fresh_cache()));
        check_fixture_counts(m, f);
        QCOMPARE(m.parameters, std::int64_t(299136));
        QCOMPARE(m.arch.kv_heads, std::int64_t(2));
        QCOMPARE(m.arch.heads, std::int64_t(6));
        QVERIFY(m.arch.tied_embeddings);
        QCOMPARE(m.by_dtype.at("F32").elements, std::int64_t(672));
        QCOMPARE(m.by_dtype.at("F32").bytes, std::uint64_t(2688));
        QCOMPARE(m.by_dtype.at("BF16").elements, std::int64_t(298464));
        QCOMPARE(m.by_dtype.at("BF16").bytes, std::uint64_t(596928));
        QCOMPARE(m.weight_files, std::vector<std::string>{"model.safetensors"});
        QVERIFY2(m.warnings.empty(), all_warnings(m).c_str());
        // The index was asked for (404), then only the header of model.safetensors.
        QCOMPARE(s.count(resolve_path(f.repo, "model.safetensors.index.json")), 1);
        QCOMPARE(s.count(resolve_path(f.repo, "model.safetensors")), 2);
    }

    void moeShardedExact() {
        TestHttpServer s;
        Fixture f = moe_mixtral();
        serve(s, f);
        ImportedModel m = import_from_hub(f.repo, options_for(s.url(), fresh_cache()));
        check_fixture_counts(m, f);
        QCOMPARE(m.parameters, std::int64_t(205632));
        QVERIFY(m.arch.is_moe());
        QCOMPARE(m.arch.experts, std::int64_t(4));
        QCOMPARE(m.arch.experts_per_token, std::int64_t(2));
        QCOMPARE(m.weight_files.size(), size_t(3));
        QVERIFY2(m.warnings.empty(), all_warnings(m).c_str());
    }

    void progressIsReported() {
        TestHttpServer s;
        Fixture f = moe_mixtral();
        serve(s, f);
        std::vector<Progress> seen;
        import_from_hub(f.repo, options_for(s.url(), fresh_cache()),
                        [&](const Progress& p) { seen.push_back(p); });
        QVERIFY(seen.size() >= 5);
        QCOMPARE(seen.front().file, std::string("config.json"));
        QCOMPARE(seen.back().steps, 2 + 3);
        QCOMPARE(seen.back().step, 2 + 3);
        for (size_t i = 1; i < seen.size(); ++i) QVERIFY(seen[i].step >= seen[i - 1].step);
    }

    void hubUrlsAndRevisions() {
        TestHttpServer s;
        Fixture f = dense_llama("TestOrg/rev-model", 1);
        // A revision with '/' is sent percent-encoded as one path segment.
        serve(s, f, "refs%2Fpr%2F1");
        auto opt = options_for(s.url(), fresh_cache());
        opt.revision = "refs/pr/1";
        ImportedModel m = import_from_hub(s.url() + "/TestOrg/rev-model/tree/main", opt);
        QCOMPARE(m.repo_id, std::string("TestOrg/rev-model"));
        QCOMPARE(m.revision, std::string("refs/pr/1"));
        QCOMPARE(m.profile.id, std::string("hf-testorg--rev-model@refs--pr--1"));
        QCOMPARE(m.parameters, f.expected_params);
    }

    void tokenIsSentAndNeverStored() {
        TestHttpServer s;
        Fixture f = gqa_qwen2("Gated/needs-token");
        const std::string token = "hf_SECRETsecret0123456789";
        for (const auto& [name, bytes] : f.files()) {
            Route r;
            r.body = bytes;
            r.require_bearer = token;
            s.route(resolve_path(f.repo, name), r);
        }
        const fs::path cache = fresh_cache();
        auto opt = options_for(s.url(), cache);
        opt.token = token;
        ImportedModel m = import_from_hub(f.repo, opt);
        QCOMPARE(m.parameters, f.expected_params);
        for (const auto& r : s.requests()) QCOMPARE(r.header("authorization"), "Bearer " + token);
        QVERIFY(count_files(cache) >= 3);
        for (auto& e : fs::recursive_directory_iterator(cache)) {
            if (!e.is_regular_file()) continue;
            QVERIFY2(!contains(slurp(e.path()), token), e.path().c_str());
            QVERIFY(!contains(e.path().string(), token));
        }
        QVERIFY(!contains(m.to_json().dump(), token));
        QVERIFY(!contains(m.to_json().dump(), "SECRET"));
    }

    void redirectsAreFollowedTokenStaysHome() {
        TestHttpServer hub, cdn;
        Fixture f = dense_llama("TestOrg/redirected", 2);
        const std::string token = "hf_redirect_token";
        auto files = f.files();
        // config.json: same-origin relative redirect (the Hub does this for renamed repos).
        {
            Route r;
            r.status = 307;
            r.location = "/api/resolve-cache/TestOrg/redirected/config.json";
            hub.route(resolve_path(f.repo, "config.json"), r);
            hub.file("/api/resolve-cache/TestOrg/redirected/config.json", files["config.json"]);
        }
        hub.file(resolve_path(f.repo, "model.safetensors.index.json"), files["model.safetensors.index.json"]);
        // Shards: 302 to another origin (the CDN), as the Hub does for LFS files.
        for (int i = 0; i < 2; ++i) {
            std::string name = f.shard_name(i);
            Route r;
            r.status = 302;
            r.location = cdn.url() + "/lfs/" + name + "?X-Signature=abc";
            hub.route(resolve_path(f.repo, name), r);
            cdn.file("/lfs/" + name, files[name]);
        }
        auto opt = options_for(hub.url(), fresh_cache());
        opt.token = token;
        ImportedModel m = import_from_hub(f.repo, opt);
        QCOMPARE(m.parameters, f.expected_params);
        QCOMPARE(hub.count("/api/resolve-cache/TestOrg/redirected/config.json"), 1);
        for (const auto& r : hub.requests()) QCOMPARE(r.header("authorization"), "Bearer " + token);
        QCOMPARE(cdn.requests().size(), size_t(4));   // two ranges per shard
        for (const auto& r : cdn.requests()) {
            QVERIFY2(r.header("authorization").empty(), "the token must not go to another host");
            QVERIFY(r.header("range").rfind("bytes=", 0) == 0);
        }
    }

    void serverIgnoringRangeStillWorks() {
        TestHttpServer s;
        Fixture f = gqa_qwen2("TestOrg/no-ranges");
        serve(s, f);
        Route r;
        r.body = f.files()["model.safetensors"];
        r.honour_range = false;   // answers 200 with the whole file
        s.route(resolve_path(f.repo, "model.safetensors"), r);
        auto opt = options_for(s.url(), fresh_cache());
        opt.max_response_bytes = 64 * 1024;   // less than the file: only the asked bytes are kept
        QVERIFY(f.files()["model.safetensors"].size() > opt.max_response_bytes);
        ImportedModel m = import_from_hub(f.repo, opt);
        QCOMPARE(m.parameters, f.expected_params);
    }

    void cacheWorksOffline() {
        const fs::path cache = fresh_cache();
        Fixture f = moe_mixtral("TestOrg/cached-moe");
        std::string endpoint;
        {
            TestHttpServer s;
            serve(s, f);
            endpoint = s.url();
            ImportedModel m = import_from_hub(f.repo, options_for(endpoint, cache));
            QCOMPARE(m.parameters, f.expected_params);
            QVERIFY(!m.used_cache);
            s.stop();
            // Network down (connection refused): the cache answers, with a warning.
            ImportedModel again = import_from_hub(f.repo, options_for(endpoint, cache));
            QCOMPARE(again.parameters, f.expected_params);
            QCOMPARE(again.checkpoint_parameters, f.expected_params);
            QVERIFY(again.used_cache);
            QVERIFY2(contains(all_warnings(again), "Could not reach"), all_warnings(again).c_str());
            QVERIFY(contains(all_warnings(again), "cached"));
        }
        // Explicit offline mode: no connection at all, answers from the cache.
        TestHttpServer watcher;
        auto opt = options_for(endpoint, cache);
        opt.offline = true;
        ImportedModel off = import_from_hub(f.repo, opt);
        QCOMPARE(off.parameters, f.expected_params);
        QVERIFY(off.used_cache);
        QVERIFY(contains(all_warnings(off), "Offline mode"));
        // A single-file model cached once also works offline (no index in the cache).
        Fixture g = gqa_qwen2("TestOrg/cached-single");
        serve(watcher, g);
        auto online = options_for(watcher.url(), cache);
        QCOMPARE(import_from_hub(g.repo, online).parameters, g.expected_params);
        watcher.clear_requests();
        online.offline = true;
        QCOMPARE(import_from_hub(g.repo, online).parameters, g.expected_params);
        QVERIFY(watcher.requests().empty());
        // prefer_cache: served from the cache without asking.
        online.offline = false;
        online.prefer_cache = true;
        QCOMPARE(import_from_hub(g.repo, online).parameters, g.expected_params);
        QVERIFY(watcher.requests().empty());
    }

    void serverErrorFallsBackToCache() {
        TestHttpServer s;
        Fixture f = dense_llama("TestOrg/flaky", 1);
        serve(s, f);
        const fs::path cache = fresh_cache();
        QCOMPARE(import_from_hub(f.repo, options_for(s.url(), cache)).parameters, f.expected_params);
        Route broken;
        broken.status = 503;
        s.route(resolve_path(f.repo, "config.json"), broken);
        ImportedModel m = import_from_hub(f.repo, options_for(s.url(), cache));
        QCOMPARE(m.parameters, f.expected_params);
        QVERIFY(m.used_cache);
        QVERIFY(contains(all_warnings(m), "503"));
    }

    void cacheEntriesAreWholeAndKeyed() {
        TestHttpServer s;
        Fixture f = gqa_qwen2("TestOrg/keyed");
        serve(s, f);
        const fs::path cache = fresh_cache();
        import_from_hub(f.repo, options_for(s.url(), cache));
        // config.json, model.safetensors@bytes=0-7, model.safetensors@bytes=8-N; no temp files.
        QCOMPARE(count_files(cache), 3);
        auto cfg = detail::cache_path(cache, s.url(), f.repo, "main", "config.json", "");
        QVERIFY(fs::exists(cfg));
        auto prefix = detail::cache_path(cache, s.url(), f.repo, "main", "model.safetensors", "bytes=0-7");
        QVERIFY(fs::exists(prefix));
        for (auto& e : fs::recursive_directory_iterator(cache))
            QVERIFY(!contains(e.path().filename().string(), ".tmp"));
        // Another revision is another key.
        QVERIFY(!fs::exists(detail::cache_path(cache, s.url(), f.repo, "v2", "config.json", "")));
    }

    void bestEffortWarnings() {
        TestHttpServer s;
        // Unknown model_type: read best-effort, with a warning naming it.
        Fixture f = dense_llama("TestOrg/new-arch", 1);
        f.config["model_type"] = "fancy_new_arch";
        serve(s, f);
        ImportedModel m = import_from_hub(f.repo, options_for(s.url(), fresh_cache()));
        QCOMPARE(m.parameters, f.expected_params);
        QVERIFY2(contains(all_warnings(m), "fancy_new_arch"), all_warnings(m).c_str());

        // No safetensors at all: the count comes from config.json, with a warning.
        Fixture g = dense_llama("TestOrg/bin-only", 1);
        s.file(resolve_path(g.repo, "config.json"), g.config.dump());
        ImportedModel n = import_from_hub(g.repo, options_for(s.url(), fresh_cache()));
        QVERIFY(!n.has_checkpoint);
        QCOMPARE(n.parameters, g.expected_params);
        QVERIFY(contains(all_warnings(n), "No safetensors"));

        // Checkpoint and config disagree (config says tied, the file has a head): both shown.
        Fixture h = gqa_qwen2("TestOrg/extra-head");
        h.tensors.push_back({"lm_head.weight", "BF16", {320, 96}});
        serve(s, h);
        ImportedModel k = import_from_hub(h.repo, options_for(s.url(), fresh_cache()));
        QCOMPARE(k.checkpoint_parameters, h.expected_params + 30720);
        QCOMPARE(k.architecture_parameters, h.expected_params);
        QCOMPARE(k.parameters, h.expected_params + 30720);
        QVERIFY2(contains(all_warnings(k), "+30,720"), all_warnings(k).c_str());

        // A quantized checkpoint: packed tensors, so the architecture's count is used.
        Fixture q = dense_llama("TestOrg/quantized", 1);
        q.config["quantization_config"] = {{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}};
        for (auto& t : q.tensors)
            if (t.shape.size() == 2 && t.name.find("proj") != std::string::npos) {
                t.dtype = "U8";
                t.shape = {t.elements() / 2, 1};
            }
        serve(s, q);
        ImportedModel qm = import_from_hub(q.repo, options_for(s.url(), fresh_cache()));
        QVERIFY(qm.quantized_checkpoint);
        QCOMPARE(qm.parameters, q.expected_params);
        QVERIFY(contains(all_warnings(qm), "quantized (bitsandbytes)"));

        // Multimodal: the language model comes from text_config; the vision tower counts in
        // the checkpoint only; the remembered profile holds the text config.
        Fixture mm = dense_llama("TestOrg/tiny-llava", 1);
        nlohmann::json text = mm.config;
        mm.config = {{"architectures", {"LlavaForConditionalGeneration"}},
                     {"model_type", "llava"},
                     {"text_config", text},
                     {"vision_config", {{"model_type", "clip_vision_model"}, {"hidden_size", 64}}}};
        mm.tensors.push_back({"vision_tower.patch_embed.weight", "F32", {100, 64}});
        serve(s, mm);
        ImportedModel v = import_from_hub(mm.repo, options_for(s.url(), fresh_cache()));
        QCOMPARE(v.architecture_parameters, mm.expected_params);
        QCOMPARE(v.checkpoint_parameters, mm.expected_params + 6400);
        QVERIFY2(contains(all_warnings(v), "multimodal"), all_warnings(v).c_str());
        QCOMPARE(v.arch_config["hidden_size"].get<int>(), 64);
        QCOMPARE(v.config["model_type"].get<std::string>(), std::string("llava"));
        const fs::path user = root() / "user-mm";
        save_imported_profile(v, user);
        wingspan::ProfileLibrary lib;
        lib.load_user_profiles(user);
        QCOMPARE(lib.model(v.profile.id).arch.parameter_count(), mm.expected_params);
    }

    void rememberedProfileLoadsBack() {
        TestHttpServer s;
        Fixture f = moe_mixtral("TestOrg/remember-me");
        serve(s, f);
        auto opt = options_for(s.url(), fresh_cache());
        opt.token = "hf_never_in_profiles";
        ImportedModel m = import_from_hub(f.repo, opt);
        const fs::path user = root() / "user-config";
        fs::path file = save_imported_profile(m, user);
        QCOMPARE(file, user / "models" / "hf-testorg--remember-me.json");
        QVERIFY(!contains(slurp(file), "hf_never_in_profiles"));
        wingspan::ProfileLibrary lib;
        lib.load_user_profiles(user);
        const wingspan::ModelProfile& p = lib.model("hf-testorg--remember-me");
        QCOMPARE(p.arch.parameter_count(), f.expected_params);
        QCOMPARE(p.family, std::string("imported"));
        QCOMPARE(p.hf_repo, f.repo);
        auto j = nlohmann::json::parse(slurp(file));
        QCOMPARE(j["import"]["parameters"].get<std::int64_t>(), f.expected_params);
        QCOMPARE(j["import"]["repo_id"].get<std::string>(), f.repo);
        // Importing again replaces the file.
        QCOMPARE(save_imported_profile(m, user), file);
        QCOMPARE(count_files(user), 1);
    }

    void folderImport() {
        Fixture dense = dense_llama("x/dense", 2);
        fs::path d1 = root() / "models" / "My Dense Model";
        write_folder(d1, dense);
        ImportedModel a = import_from_folder(d1);
        check_fixture_counts(a, dense);
        QCOMPARE(a.source, std::string("folder"));
        QCOMPARE(a.profile.id, std::string("local-my-dense-model"));
        QCOMPARE(a.folder, fs::absolute(d1));
        QCOMPARE(a.weight_files.size(), size_t(2));
        QVERIFY2(a.warnings.empty(), all_warnings(a).c_str());

        Fixture gqa = gqa_qwen2();
        fs::path d2 = root() / "models" / "qwen";
        write_folder(d2, gqa);
        check_fixture_counts(import_from_folder(d2), gqa);
        // Given the config.json file instead of the folder.
        QCOMPARE(import_from_folder(d2 / "config.json").parameters, gqa.expected_params);

        // Without index or model.safetensors: every *.safetensors file.
        Fixture moe = moe_mixtral("x/moe", 2);
        fs::path d3 = root() / "models" / "moe";
        write_folder(d3, moe);
        fs::remove(d3 / "model.safetensors.index.json");
        ImportedModel c = import_from_folder(d3);
        check_fixture_counts(c, moe);

        std::vector<Progress> seen;
        import_from_folder(d3, [&](const Progress& p) { seen.push_back(p); });
        QVERIFY(seen.size() >= 3);
    }

    void helpers() {
        QCOMPARE(normalize_repo_id("  Qwen/Qwen2.5-7B "), std::string("Qwen/Qwen2.5-7B"));
        QCOMPARE(normalize_repo_id("https://huggingface.co/Qwen/Qwen2.5-7B"), std::string("Qwen/Qwen2.5-7B"));
        QCOMPARE(normalize_repo_id("https://huggingface.co/Qwen/Qwen2.5-7B/tree/main"), std::string("Qwen/Qwen2.5-7B"));
        QCOMPARE(normalize_repo_id("https://huggingface.co/gpt2"), std::string("gpt2"));
        QCOMPARE(normalize_repo_id("http://127.0.0.1:5/a/b/blob/main/config.json", "http://127.0.0.1:5/"),
                 std::string("a/b"));
        QCOMPARE(normalize_repo_id("gpt2"), std::string("gpt2"));
        for (const char* bad : {"", "a/b/c", "../etc", "a b/c", "owner/", "/name", "x/..", "https://example.com/a/b"}) {
            auto e = capture([&] { normalize_repo_id(bad); });
            QVERIFY2(e.has_value(), bad);
            QCOMPARE(e->kind(), HubErrorKind::InvalidId);
            QVERIFY(contains(e->what(), std::string("'") + bad + "'"));
        }
        QCOMPARE(profile_id_for_repo("Qwen/Qwen2.5-7B"), std::string("hf-qwen--qwen2.5-7b"));
        QCOMPARE(profile_id_for_repo("Qwen/Qwen2.5-7B", "v1.0"), std::string("hf-qwen--qwen2.5-7b@v1.0"));
        QCOMPARE(profile_id_for_folder("/data/My Model!"), std::string("local-my-model"));
        QCOMPARE(resolve_url("https://hf.co/", "a/b", "refs/pr/1", "sub dir/x.json"),
                 std::string("https://hf.co/a/b/resolve/refs%2Fpr%2F1/sub%20dir/x.json"));

        using namespace std::chrono;
        auto now = system_clock::from_time_t(784111777);   // Sun, 06 Nov 1994 08:49:37 GMT
        QCOMPARE(detail::parse_retry_after("17", now), std::optional<long>(17));
        QCOMPARE(detail::parse_retry_after(" 0 ", now), std::optional<long>(0));
        QCOMPARE(detail::parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now), std::optional<long>(60));
        QCOMPARE(detail::parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), std::optional<long>(0));
        QVERIFY(!detail::parse_retry_after("soon", now));
        QVERIFY(!detail::parse_retry_after("-5", now));

        // Cache paths never escape the cache folder, whatever the names hold.
        fs::path base = "/cache";
        auto p = detail::cache_path(base, "http://h:1", "../..", "../../x", "../../../etc/passwd", "bytes=0-7");
        QCOMPARE(p.lexically_normal().string().rfind("/cache/v1/", 0), size_t(0));
        int depth = 0;
        for (auto it = p.begin(); it != p.end(); ++it) ++depth;
        QCOMPARE(depth, 7);   // "/", cache, v1, endpoint, repo, revision, leaf
        for (const auto& part : p) QVERIFY(part != ".." && part != ".");
        QCOMPARE(detail::escape_component(".hidden").front(), '%');
        QVERIFY(detail::escape_component(std::string(1000, 'a')).size() < 200);
        QVERIFY(detail::escape_component(std::string(1000, 'a')) != detail::escape_component(std::string(999, 'a')));
    }
};

QTEST_GUILESS_MAIN(TestHubImport)
#include "test_hub_import.moc"
