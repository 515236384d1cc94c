// The window's recipe dialogs: Export recipe… writes what `wingspan recipe` writes for the same
// plan, Run a recipe… records a run in the run history and stops one cleanly.
#include <QtTest>

#include <signal.h>
#include <unistd.h>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.hpp"
#include "wingspan/recipe.hpp"
#include "wingspan/ui/recipe_dialog.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}
}  // namespace

class RecipeDialogTest : public QObject {
    Q_OBJECT
    fs::path tmp_;
    std::optional<wingspan::ProfileLibrary> lib_;

    // A recipe folder whose command is `command` (what Run a recipe… runs), with a prediction.
    fs::path scripted_recipe(const std::string& name, const json& command) {
        const fs::path dir = tmp_ / name;
        std::ostringstream out, err;
        const int code = wingspan::cli::run({"recipe", "--framework", "torchtune", "--out", dir.string(), "--model",
                                             "smollm2-135m", "--profiles", WINGSPAN_TEST_PROFILES_DIR},
                                            out, err);
        if (code != 0) qWarning("%s", err.str().c_str());
        std::ofstream(dir / wingspan::recipe::kRecipeFile) << json{{"framework", "torchtune"}, {"command", command}}.dump();
        return dir;
    }

private slots:
    void initTestCase() {
        tmp_ = fs::temp_directory_path() / ("wingspan-recipe-dialog-" + std::to_string(::getpid()));
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
        lib_ = wingspan::ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
    }
    void cleanupTestCase() { fs::remove_all(tmp_); }

    void exportWritesWhatTheCommandLineWrites() {
        const wingspan::Plan plan = wingspan::Plan::lesson_default();
        wingspan::ui::RecipeDialog dlg(*lib_, plan, wingspan::recipe::default_dir());
        QCOMPARE(dlg.frameworkCombo()->count(), 6);
        dlg.frameworkCombo()->setCurrentIndex(dlg.frameworkCombo()->findData("axolotl"));
        QVERIFY(dlg.notesLabel()->text().contains("axolotl train config.yaml"));
        // README's picture of the dialog (WINGSPAN_SCREENSHOT_DIR=docs when it changes).
        if (const char* dir = std::getenv("WINGSPAN_SCREENSHOT_DIR")) {
            dlg.frameworkCombo()->setCurrentIndex(dlg.frameworkCombo()->findData("mlx-lm"));
            dlg.folderEdit()->setText("/home/you/llama-8b-mlx");
            dlg.adjustSize();
            QVERIFY(dlg.grab().save(QString(dir) + "/recipe-dialog.png"));
            dlg.frameworkCombo()->setCurrentIndex(dlg.frameworkCombo()->findData("axolotl"));
        }
        dlg.folderEdit()->setText(QString::fromStdString((tmp_ / "from-window").string()));
        QVERIFY2(dlg.write(), qPrintable(dlg.error()));
        const json spec = json::parse(read(tmp_ / "from-window" / "recipe.json"));
        QCOMPARE(spec["command"], json({"env", "PYTHONPATH=.", "axolotl", "train", "config.yaml"}));
        // The same plan through `wingspan recipe` gives the same files.
        std::ostringstream out, err;
        QCOMPARE(wingspan::cli::run({"recipe", "--framework", "axolotl", "--out", (tmp_ / "from-cli").string(), "--model",
                                     "llama-3.1-8b", "--method", "lora", "--seq", "1024", "--batch", "1", "--rank", "16",
                                     "--alpha", "32", "--grad-checkpointing", "on", "--profiles", WINGSPAN_TEST_PROFILES_DIR},
                                    out, err),
                 0);
        for (const char* f : {"config.yaml", "README.md", "predicted.json", "recipe.json", "wingspan_reporter.py"})
            QVERIFY2(read(tmp_ / "from-window" / f) == read(tmp_ / "from-cli" / f), f);
        // A folder that cannot be written is an error, not a crash.
        dlg.folderEdit()->setText("");
        QVERIFY(!dlg.write());
        QVERIFY(!dlg.error().isEmpty());
    }

    void runRecordsTheRun() {
        const fs::path runs = tmp_ / "runs";
        const fs::path dir = scripted_recipe("scripted", {"sh", std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/scripted_run.sh"});
        wingspan::ui::RunRecipeDialog dlg(runs);
        QVERIFY(!dlg.start(tmp_ / "nowhere"));
        QVERIFY(dlg.error().contains("recipe.json"));
        QSignalSpy finished(&dlg, &wingspan::ui::RunRecipeDialog::finished);
        QVERIFY2(dlg.start(dir), qPrintable(dlg.error()));
        QVERIFY(finished.wait(30000));
        const wingspan::RunRecord rec = wingspan::RunStore::load(dlg.runFolder());
        QCOMPARE(rec.status(), wingspan::RunStatus::Completed);
        QCOMPARE(rec.step_events(), std::int64_t(2));
        QCOMPARE(rec.measured_rss_peak(), std::int64_t(2'100'000));
        QVERIFY(dlg.logView()->toPlainText().contains("loading model"));
        QVERIFY(dlg.statusLabel()->text().contains("completed"));
        QCOMPARE(wingspan::RunStore(runs).list().size(), size_t(1));
        QCOMPARE(json::parse(read(dlg.runFolder() / "plan.json"))["framework"].get<std::string>(), std::string("torchtune"));
    }

    void stopEndsTheRunCleanly() {
        const fs::path base = scripted_recipe("loop", json::array());
        const fs::path dir = scripted_recipe("forever", {WINGSPAN_TEST_PYTHON, std::string(WINGSPAN_TEST_RECIPE_TESTS_DIR) + "/cpu_loop.py",
                                                          base.string(), "0", "--forever"});
        wingspan::ui::RunRecipeDialog dlg(tmp_ / "runs");
        QSignalSpy finished(&dlg, &wingspan::ui::RunRecipeDialog::finished);
        QVERIFY2(dlg.start(dir), qPrintable(dlg.error()));
        QTRY_VERIFY_WITH_TIMEOUT(dlg.run()->record().step_events() > 0, 90000);
        dlg.stop();
        QVERIFY(finished.wait(30000));
        const wingspan::RunRecord rec = wingspan::RunStore::load(dlg.runFolder());
        QCOMPARE(rec.status(), wingspan::RunStatus::Interrupted);
        QCOMPARE(rec.done()->string_field("reason"), std::string("interrupted"));
    }

    // Output the dialog must not trust (issue 34): a 3 MiB line without a newline is kept cut at
    // 1 MiB (the window does not grow with it), a line that only looks like an event is shown and
    // recorded as a log line, and a stop reaches what the command started (its process group).
    void hostileOutputIsBoundedAndShown() {
        const std::string script =
            "head -c 3145728 /dev/zero | tr '\\0' x; echo; echo '{\"v\":1,\"event\":'; "
            "sleep 300 & echo $! > child.pid; sleep 300";
        const fs::path dir = scripted_recipe("hostile-output", {"sh", "-c", script});
        wingspan::ui::RunRecipeDialog dlg(tmp_ / "runs");
        QSignalSpy finished(&dlg, &wingspan::ui::RunRecipeDialog::finished);
        QVERIFY2(dlg.start(dir), qPrintable(dlg.error()));
        QTRY_VERIFY_WITH_TIMEOUT(fs::exists(dir / "child.pid") && dlg.logView()->toPlainText().contains("{\"v\":1"), 30000);
        const QString log = dlg.logView()->toPlainText();
        QVERIFY(log.contains("[cut: a line over 1 MiB]"));
        QVERIFY2(log.size() < (3 << 20), "the over-long line is not kept whole");
        QCOMPARE(dlg.run()->malformed_events(), std::int64_t(1));
        const pid_t child = std::stoi(read(dir / "child.pid"));
        dlg.stop();
        QVERIFY(finished.wait(30000));
        QTRY_VERIFY_WITH_TIMEOUT(::kill(child, 0) != 0, 10000);   // the background sleep got the stop too
    }
};

QTEST_MAIN(RecipeDialogTest)
#include "test_recipe_dialog.moc"
