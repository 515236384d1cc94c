// "Add from Hub…" / "Add from folder…": the import runs on a worker thread through core's Hub
// client; the dialog reports errors as answers and the imported model joins the window.
#include <QApplication>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "wingspan/ui/hub_dialog.hpp"
#include "wingspan/ui/main_window.hpp"

using namespace wingspan;
using namespace wingspan::ui;

class HubDialogTest : public QObject {
    Q_OBJECT
private slots:
    void folderImportJoinsTheWindow() {
        QTemporaryDir home;
        const QString folder = home.path() + "/SmolLM2-135M";
        QDir().mkpath(folder);
        MainWindow w(QString(), MainWindow::Options{false, false});
        w.setUserDir((home.path() + "/config").toStdString());
        std::ofstream(folder.toStdString() + "/config.json")
            << w.library().model("smollm2-135m").arch.to_hf_config().dump();
        HubImportDialog dialog(HubImportDialog::Source::Folder);
        QCOMPARE(dialog.findChild<QLineEdit*>("hubInput")->accessibleName(), QString("Model folder"));
        dialog.setInput(folder);
        QSignalSpy imported(&dialog, &HubImportDialog::imported);
        dialog.start();
        QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 1, 10000);
        QVERIFY(dialog.result().has_value());
        QCOMPARE(dialog.result()->parameters, 134'515'008);
        w.addImportedModel(*dialog.result());
        const std::string id = dialog.result()->profile.id;
        QCOMPARE(w.library().model(id).arch.parameter_count(), 134'515'008);
        QCOMPARE(QString::fromStdString(w.plan().model.model_id), QString::fromStdString(id));
        // Remembered: the saved profile is in the user's models folder.
        QVERIFY(QDir(home.path() + "/config/models").entryList({"*.json"}, QDir::Files).size() == 1);
    }

    void offlineWithoutCacheIsAnAnswer() {
        QTemporaryDir cache;
        hub::HubOptions options;
        options.offline = true;
        options.cache_dir = cache.path().toStdString();
        HubImportDialog dialog(HubImportDialog::Source::Hub);
        dialog.setOptions(options);
        dialog.setInput("someone/never-imported");
        QSignalSpy failed(&dialog, &HubImportDialog::failed);
        dialog.start();
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
        QVERIFY(!dialog.result());
        QVERIFY2(dialog.errorText().contains("someone/never-imported"), qPrintable(dialog.errorText()));
        QVERIFY(!dialog.busy());
    }

    void emptyInputAsksForOne() {
        HubImportDialog dialog(HubImportDialog::Source::Hub);
        dialog.start();
        QVERIFY(dialog.errorText().contains("model id"));
        QVERIFY(!dialog.busy());
    }
};

QTEST_MAIN(HubDialogTest)
#include "test_hub_dialog.moc"
