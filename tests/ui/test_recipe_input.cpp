// Run ▸ Recipe… reads a recipe folder anyone may have edited or sent: its recipe.json and
// predicted.json go through core's bounded reader, and what does not name a command of strings is
// refused with a sentence (a number in the command, or a number as the framework, threw
// nlohmann's type_error out of start() before), never a crash or a hang. Offscreen.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <string>

#include <QSignalSpy>

#include "wingspan/run_record.hpp"
#include "wingspan/ui/recipe_dialog.hpp"

namespace fs = std::filesystem;

class RecipeInputTest : public QObject {
    Q_OBJECT

    fs::path tmp_;

    fs::path recipe(const std::string& name, const std::string& recipe_json, const std::string& predicted_json = {}) {
        const fs::path dir = tmp_ / name;
        fs::create_directories(dir);
        std::ofstream(dir / "recipe.json") << recipe_json;
        if (!predicted_json.empty()) std::ofstream(dir / "predicted.json") << predicted_json;
        return dir;
    }

private slots:
    void initTestCase() {
        tmp_ = fs::temp_directory_path() / ("wingspan-recipe-input-" + std::to_string(QCoreApplication::applicationPid()));
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
    }
    void cleanupTestCase() { fs::remove_all(tmp_); }

    void aCommandThatIsNotStringsIsRefused() {
        wingspan::ui::RunRecipeDialog dlg(tmp_ / "runs");
        for (const auto& [name, text] : {std::pair<std::string, std::string>{"numbers", R"({"command": [1, 2]})"},
                                         {"mixed", R"({"command": ["true", {"a": 1}]})"},
                                         {"empty", R"({"command": []})"},
                                         {"not-an-object", R"(["true"])"},
                                         {"not-json", "{\"command\": [\"true\""},
                                         {"deep", std::string(100000, '[') + std::string(100000, ']')}}) {
            QVERIFY2(!dlg.start(recipe(name, text)), name.c_str());
            QVERIFY2(dlg.error().contains("names no command"), qPrintable(QString::fromStdString(name) + ": " + dlg.error()));
        }
    }

    void aFrameworkThatIsNotAStringAndABrokenPredictionStillRun() {
        // Only the command is needed: a number as the framework, and a predicted.json that is
        // not JSON, leave the run without them.
        wingspan::ui::RunRecipeDialog dlg(tmp_ / "runs");
        QSignalSpy finished(&dlg, &wingspan::ui::RunRecipeDialog::finished);
        QVERIFY2(dlg.start(recipe("odd", R"({"command": ["true"], "framework": 7})", "{not json")), qPrintable(dlg.error()));
        QVERIFY(finished.wait(20000));
        // `true` ran and exited 0 (with no training step the run reads failed: not this test's).
        const wingspan::RunRecord rec = wingspan::RunStore::load(dlg.runFolder());
        QCOMPARE(rec.exit_code(), 0);
        QCOMPARE(rec.exit_signal(), 0);
    }
};

QTEST_MAIN(RecipeInputTest)
#include "test_recipe_input.moc"
