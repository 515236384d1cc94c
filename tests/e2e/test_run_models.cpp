// Train ▶ on a plan whose model is not on this machine, and Try it, with the real
// wingspan-train and a loopback Hub serving a tiny Llama (random weights, the small
// SentencePiece tokenizer, the Llama 2 chat template): the offer shows the download's exact
// size and starts nothing until the user agrees; "Download and train" fills the Hugging Face
// cache and trains that folder; Try it sends a prompt through the fine-tuned model; Cancel
// stops a download without a half file in the snapshot; the demo only when chosen.
#include "e2e_support.hpp"

#include <QLocale>
#include <QPushButton>
#include <QSettings>

#include <cstdlib>
#include <fstream>

#include "../hub/tiny_llama_repo.hpp"
#include "wingspan/ui/model_download_dialog.hpp"

using namespace wingspan;
using namespace wingspan::ui;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = "TestOrg/tiny-sp-llama";
const std::string kCommit = "feedfacefeedfacefeedfacefeedfacefeedface";

// Everything the Hub client reads from the environment points at the test's own server and
// folders: no proxy, no token, no cache of the person running the tests.
void isolate(const QString& scratch, const std::string& endpoint) {
    for (const char* v : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "HF_TOKEN",
                          "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "WINGSPAN_OFFLINE", "HF_HOME"})
        ::unsetenv(v);
    ::setenv("HF_ENDPOINT", endpoint.c_str(), 1);
    ::setenv("HF_HUB_CACHE", (scratch + "/hub").toUtf8().constData(), 1);
    ::setenv("HF_TOKEN_PATH", (scratch + "/no-token").toUtf8().constData(), 1);
    ::setenv("XDG_CACHE_HOME", (scratch + "/xdg").toUtf8().constData(), 1);
    // The panel remembers the user's model choice in QSettings: not the person's, not between runs.
    ::setenv("XDG_CONFIG_HOME", (scratch + "/config").toUtf8().constData(), 1);
}

Plan tiny_plan() {
    Plan p = Plan::lesson_default();
    p.model.config = hubtest::tiny_llama_config();
    p.model.config_name = kRepo;   // an imported model names its repository
    p.setup.method = Method::Lora;
    p.setup.lora_rank = 4;
    p.setup.lora_alpha = 8;
    p.setup.seq_len = 64;
    p.setup.micro_batch = 2;
    p.setup.grad_checkpointing = false;
    return p;
}

QString write_chat_data(const QString& dir) {
    const QString path = dir + "/chat.jsonl";
    std::ofstream data(path.toStdString());
    for (int i = 0; i < 24; ++i)
        data << nlohmann::json{{"messages", {{{"role", "user"}, {"content", "What is " + std::to_string(i) + " plus one?"}},
                                             {{"role", "assistant"}, {"content", "It is " + std::to_string(i + 1) + "."}}}}}
                    .dump()
             << "\n";
    return path;
}

}  // namespace

class TestRunModels : public QObject {
    Q_OBJECT

    QTemporaryDir scratch_;
    hubtest::TestHttpServer server_;
    std::map<std::string, std::string> files_;

    std::unique_ptr<RunPanel> make_panel(const QString& store) {
        QSettings().remove("run/modelChoice");   // the plan's own model, as for a new user
        auto panel = std::make_unique<RunPanel>(e2e::wingspan_exe(), &e2e::library());
        panel->setTrainerPath(REAL_TRAINER);
        panel->setStoreRoot(store.toStdString());
        panel->setPlan(tiny_plan());
        RunOptions o = panel->options();
        o.steps = 3;
        o.threads = 2;
        o.data_file = write_chat_data(scratch_.path());
        panel->setOptions(o);
        return panel;
    }

private slots:
    void initTestCase() {
        QVERIFY(scratch_.isValid());
        files_ = hubtest::tiny_llama_files(WINGSPAN_TOKENIZER_FIXTURES, WINGSPAN_CHAT_FIXTURES);
        hubtest::publish_repo(server_, kRepo, files_, kCommit);
        isolate(scratch_.path(), server_.url());
    }

    void offerShowsTheSizeThenDownloadsTrainsAndTries() {
        auto panel = make_panel(scratch_.path() + "/runs");
        QVERIFY(!panel->plannedModel().ok());
        QCOMPARE(panel->plannedModel().repo, QString::fromStdString(kRepo));
        QSignalSpy finished(panel.get(), &RunPanel::runFinished);
        panel->trainPlan(tiny_plan());

        // Nothing trains before the user agrees; the offer asks the Hub for the size.
        ModelDownloadDialog* dialog = panel->downloadDialog();
        QVERIFY2(dialog, qPrintable(panel->statusText()));
        QVERIFY(!panel->isRunning());
        QVERIFY2(e2e::wait_until([&] { return dialog->listing().has_value(); }, 20000), qPrintable(dialog->statusText()));
        std::uint64_t expected = 0;   // what a run needs: everything but the README
        for (const auto& [name, bytes] : files_)
            if (name != "README.md") expected += bytes.size();
        QCOMPARE(dialog->listing()->to_download(), expected);
        QCOMPARE(dialog->listing()->files.size(), size_t(4));
        QCOMPARE(dialog->listing()->commit, kCommit);
        const QString exact = QLocale().toString(qulonglong(expected)) + " bytes";
        QVERIFY2(dialog->sizeText().contains(exact), qPrintable(dialog->sizeText() + " lacks " + exact));
        QVERIFY(!panel->isRunning());

        // Agree: the download lands in the cache and that folder trains.
        auto* agree = dialog->findChild<QPushButton*>("downloadAndTrain");
        QVERIFY(agree && agree->isEnabled());
        QTest::mouseClick(agree, Qt::LeftButton);
        QVERIFY2(e2e::wait_until([&] { return panel->isRunning() || finished.count() > 0; }, 30000),
                 qPrintable(panel->statusText() + " | download: " + (panel->downloadDialog() ? panel->downloadDialog()->statusText() : QString("closed"))));
        const QString snapshot = scratch_.path() + "/hub/models--TestOrg--tiny-sp-llama/snapshots/" + QString::fromStdString(kCommit);
        QVERIFY(QFileInfo(snapshot + "/model.safetensors").exists());
        const QStringList args = panel->session()->arguments();
        QCOMPARE(QDir(args.value(args.indexOf("--model") + 1)).canonicalPath(), QDir(snapshot).canonicalPath());
        QCOMPARE(panel->session()->options().model_source, RunOptions::ModelSource::Planned);
        QVERIFY(e2e::wait_until([&] { return finished.count() == 1; }, 180000));
        const RunRecord& r = *panel->shownRecord();
        QVERIFY2(r.status() == RunStatus::Completed, r.status_text().c_str());

        // Try it: a prompt through the base model and the run's adapter, as a subprocess.
        TryItBox* tryit = panel->tryIt();
        QVERIFY2(tryit->target().unavailable.isEmpty(), qPrintable(tryit->target().unavailable));
        QVERIFY(tryit->target().chat);   // the model has a chat template
        QSignalSpy generated(tryit, &TryItBox::generationFinished);
        tryit->setPrompt("What is 3 plus one?");
        tryit->setMaxTokens(12);
        QString error;
        QVERIFY2(tryit->generate(&error), qPrintable(error));
        QVERIFY(tryit->isRunning());   // the window went on; the answer streams in
        const QStringList targs = tryit->arguments();
        QCOMPARE(targs.first(), QString("generate"));
        QCOMPARE(targs.value(targs.indexOf("--adapter") + 1), tryit->target().adapter_dir);
        QVERIFY(targs.contains("--chat"));
        QVERIFY(e2e::wait_until([&] { return generated.count() == 1; }, 120000));
        QVERIFY2(generated.first().first().toBool(), qPrintable(tryit->statusText()));
        QVERIFY2(!tryit->outputText().trimmed().isEmpty(), qPrintable(tryit->statusText()));
        qInfo().noquote() << "Try it answered:" << tryit->outputText().trimmed() << "|" << tryit->statusText();

        // Stop ends a generation at once, whatever it was doing.
        tryit->setMaxTokens(4096);
        QVERIFY(tryit->generate());
        tryit->stop();
        QVERIFY(e2e::wait_until([&] { return generated.count() == 2; }, 20000));
        QCOMPARE(generated.last().first().toBool(), false);
        QVERIFY(tryit->statusText().startsWith("Stopped"));
        QVERIFY(!tryit->isRunning());
    }

    void cancelledDownloadLeavesNoHalfFileAndDemoOnlyWhenChosen() {
        // A second repository whose weights arrive slowly: the download is cancelled midway.
        const std::string slow = "TestOrg/slow-llama";
        hubtest::publish_repo(server_, slow, files_, kCommit);
        hubtest::Route r;
        r.body = files_.at("model.safetensors");
        r.body_delay_ms = 60000;
        server_.route("/" + slow + "/resolve/" + kCommit + "/model.safetensors", r);

        Plan plan = tiny_plan();
        plan.model.config_name = slow;
        auto panel = make_panel(scratch_.path() + "/runs2");
        panel->setPlan(plan);
        panel->startOrOfferDownload();   // Start ▶ offers the same
        ModelDownloadDialog* dialog = panel->downloadDialog();
        QVERIFY(dialog);
        QVERIFY(e2e::wait_until([&] { return dialog->listing().has_value(); }, 20000));
        QSignalSpy done(dialog, &ModelDownloadDialog::downloadFinished);
        dialog->download();
        QVERIFY(dialog->busy());
        dialog->findChild<QPushButton*>("downloadCancel")->click();   // cancels the download, keeps the dialog
        QVERIFY(e2e::wait_until([&] { return done.count() == 1; }, 20000));
        QCOMPARE(done.first().first().toBool(), false);
        QVERIFY2(dialog->statusText().contains("cancelled"), qPrintable(dialog->statusText()));
        QVERIFY(dialog->isVisible());
        QVERIFY(!panel->isRunning());
        const fs::path snap = (scratch_.path() + "/hub/models--TestOrg--slow-llama/snapshots/").toStdString() + kCommit;
        QVERIFY(!fs::exists(snap / "model.safetensors"));

        // The built-in demo only when chosen: then it trains, and says so.
        QSignalSpy finished(panel.get(), &RunPanel::runFinished);
        dialog->findChild<QPushButton*>("downloadBuiltinInstead")->click();
        QVERIFY(panel->isRunning());
        QCOMPARE(panel->session()->options().model_source, RunOptions::ModelSource::BuiltIn);
        QVERIFY(!panel->session()->arguments().contains("--model"));
        QVERIFY(e2e::wait_until([&] { return finished.count() == 1; }, 120000));
        // Try it says why a demo run cannot be tried.
        QVERIFY(panel->tryIt()->target().unavailable.contains("built-in demo"));
        QString error;
        QVERIFY(!panel->tryIt()->generate(&error));
        QVERIFY(error.contains("built-in demo"));
    }
};

QTEST_MAIN(TestRunModels)
#include "test_run_models.moc"
