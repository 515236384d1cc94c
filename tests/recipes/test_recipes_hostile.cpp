// Recipes never run a file name (issue 34, class 3): every framework's recipe written with
// hostile free text in every field (the model's id and name, the data file and its folder, the
// output folder) parses as Python, YAML and JSON with each value read back exactly and nothing
// executed (check_hostile_recipe.py). Also class 20: numbers past int64 and a bad --plan.
#include <QtTest>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../core/cli_result.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/quoting.hpp"
#include "wingspan/recipe.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFrameworks = {"hf-transformers", "unsloth", "torchtune", "mlx-lm", "axolotl", "llama-factory"};

// Each breaks a different quoting: Python string, YAML line and key, shell word and expansion,
// bytes that are not UTF-8, YAML indicators, Unicode line breaks, template braces.
const std::vector<std::string> kHostile = {
    "d\" + __import__(\"os\").system(\"touch PWNED\") + \".jsonl",
    "x\nbase_model: attacker/model\ninjected_key: 1\n# ",
    "it's 'q' \\ back\\slash \\\" $(touch PWNED) `touch PWNED` ${HOME} '''\"\"\"",
    "caf\xe9-\xff\xfe-\xc3\x28-\xed\xa0\x80",
    "{{model}} #c: - *a &b !!python/object/apply:os.system %TAG \t\r\xc2\x85\xe2\x80\xa8 end \x7f\x1b[31m",
};

std::string hex(const std::string& s) {
    std::string out;
    char buf[3];
    for (unsigned char c : s) std::snprintf(buf, sizeof buf, "%02x", c), out += buf;
    return out;
}

int run_python(const std::vector<std::string>& args, std::string* output) {
    std::string cmd = WINGSPAN_TEST_PYTHON;
    for (const auto& a : args) cmd += " " + wingspan::quoting::shell_word(a);
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    std::string text;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
    const int status = pclose(p);
    *output = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A file name cannot hold '/': the value with it replaced.
std::string as_name(std::string s) {
    std::replace(s.begin(), s.end(), '/', '_');
    return s;
}

}  // namespace

class RecipeHostileTest : public QObject {
    Q_OBJECT
    fs::path tmp_;

private slots:
    void initTestCase() {
        tmp_ = fs::temp_directory_path() / ("wingspan-recipes-hostile-" + std::to_string(::getpid()));
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
    }
    void cleanupTestCase() { fs::remove_all(tmp_); }

    void quotingFunctionsRoundTrip() {
        using namespace wingspan::quoting;
        QCOMPARE(python_string("a\"b\\c\nd"), std::string("\"a\\\"b\\\\c\\nd\""));
        QCOMPARE(shell_word("it's"), std::string("'it'\\''s'"));
        QCOMPARE(shell_word("a\nb\xff"), std::string("$'a\\x0ab\\xff'"));
        QCOMPARE(json_string("\xff"), std::string("\"\\udcff\""));
        QCOMPARE(one_line("a\nb\xff"), std::string("a b\xEF\xBF\xBD"));
    }

    // Every framework, every hostile value in every free-text field at once.
    void hostileValuesStayValues() {
        const auto lib = wingspan::ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
        const auto& m = lib.model("llama-3.1-8b");
        const fs::path recipes = wingspan::recipe::default_dir();
        int n = 0;
        for (const std::string& bad : kHostile) {
            const fs::path data_dir = tmp_ / ("data-" + std::to_string(n)) / as_name(bad);
            fs::create_directories(data_dir);
            const fs::path data = data_dir / (as_name(bad) + ".jsonl");
            std::ofstream(data) << R"({"messages": [{"role": "user", "content": "hi"}]})" << "\n";
            for (const auto& framework : kFrameworks) {
                wingspan::recipe::Request req;
                req.framework = framework;
                req.model_id = m.id;
                req.model_name = bad;
                req.family = m.family;
                req.arch = m.arch;
                req.setup.method = framework == "axolotl" ? wingspan::Method::Qlora : wingspan::Method::Lora;
                req.model_repo = bad;
                req.data_path = data.string();
                req.training.output_dir = bad;
                const auto recipe = wingspan::recipe::make(recipes, lib, req);
                const fs::path out = tmp_ / (framework + "-" + std::to_string(n));
                wingspan::recipe::write(recipe, out);
                const fs::path values = out / "hostile-values.json";
                std::ofstream(values) << json{{"model", hex(bad)}, {"data_path", hex(data.string())},
                                              {"data_dir", hex(data_dir.string())}, {"output_dir", hex(bad)}}
                                             .dump();
                std::string output;
                const int rc = run_python({std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/check_hostile_recipe.py",
                                           framework, out.string(), values.string()},
                                          &output);
                QVERIFY2(rc == 0, (framework + " with value " + std::to_string(n) + ":\n" + output).c_str());
                QVERIFY(!fs::exists(out / "PWNED") && !fs::exists("PWNED"));
            }
            ++n;
        }
    }

    // A template that writes free text bare is refused, not rendered.
    void bareFreeTextIsRefused() {
        const std::map<std::string, std::string> vars = {{"model", "x\"y"}, {"rank", "16"}};
        const std::set<std::string> free_text = {"model"};
        QCOMPARE(wingspan::recipe::render_template("r={{rank}} m={{py:model}}", vars, free_text),
                 std::string("r=16 m=\"x\\\"y\""));
        QVERIFY_THROWS_EXCEPTION(wingspan::InputError, wingspan::recipe::render_template("m=\"{{model}}\"", vars, free_text));
        QVERIFY_THROWS_EXCEPTION(wingspan::InputError, wingspan::recipe::render_template("{{perl:model}}", vars, free_text));
    }

    // Class 20: counts past what an int64 (and a double, exactly) holds are refused, not wrapped.
    void hugeCountsAreRefused() {
        for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
                 {"--max-steps", "1e19"}, {"--seed", "1e19"}, {"--seed", "9223372036854775808"},
                 {"--max-steps", "1e300"}, {"--seed", "-1"}, {"--max-steps", "1.5"}}) {
            const auto out = tmp_ / "huge";
            const auto r = wingspan::test::run_cli({"recipe", "--framework", "hf-transformers", "--model", "llama-3.1-8b",
                                                    "--out", out.string(), flag, value, "--profiles",
                                                    WINGSPAN_TEST_PROFILES_DIR});
            QVERIFY2(r.code == 2, (flag + " " + value + ": " + r.err).c_str());
            QVERIFY2(r.err.find(flag) != std::string::npos, r.err.c_str());
            QVERIFY(!fs::exists(out));
        }
        const auto ok = wingspan::test::run_cli({"recipe", "--framework", "hf-transformers", "--model", "llama-3.1-8b",
                                                 "--out", (tmp_ / "big-ok").string(), "--seed", "4294967295", "--max-steps",
                                                 "1000000000000", "--profiles", WINGSPAN_TEST_PROFILES_DIR});
        QVERIFY2(ok.code == 0, ok.err.c_str());
        std::ifstream in(tmp_ / "big-ok" / "config.yaml");
        const std::string settings((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QVERIFY(settings.find("seed: 4294967295\n") != std::string::npos);
        QVERIFY(settings.find("max_steps: 1000000000000\n") != std::string::npos);
    }

    // Class 20: `recipe --plan` with a plan that fails after its scratch folder was made leaves
    // no folder behind.
    void badPlanLeavesNoScratchFolder() {
        const fs::path own_tmp = tmp_ / "tmpdir";
        fs::create_directories(own_tmp);
        const QByteArray old = qgetenv("TMPDIR");
        qputenv("TMPDIR", QByteArray::fromStdString(own_tmp.string()));
        int k = 0;
        for (const std::string plan : {R"({"model": {"config": {"model_type": "llama"}}, "setup": {"method": "bogus"}})",
                                       R"({"model": {"config": {"model_type": "nonsense", "hidden_size": -1}}})",
                                       R"({"model": {"config": {}}, "setup": {"seq_len": "long"}})"}) {
            const fs::path file = tmp_ / ("bad-plan-" + std::to_string(k++) + ".json");
            std::ofstream(file) << plan;
            const auto r = wingspan::test::run_cli({"recipe", "--framework", "axolotl", "--plan", file.string(), "--out",
                                                    (tmp_ / "from-bad-plan").string(), "--profiles", WINGSPAN_TEST_PROFILES_DIR});
            QVERIFY2(r.code != 0, plan.c_str());
            std::string left;
            for (const auto& e : fs::directory_iterator(own_tmp)) left += " " + e.path().string();
            QVERIFY2(left.empty(), (plan + " left" + left).c_str());
        }
        if (old.isNull()) qunsetenv("TMPDIR");
        else qputenv("TMPDIR", old);
    }
};

QTEST_GUILESS_MAIN(RecipeHostileTest)
#include "test_recipes_hostile.moc"
