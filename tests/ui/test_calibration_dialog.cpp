// "Calibrate from my runs…": the dialog lists the run history, fits core's calibration to the
// checked runs, shows the error before and after, and saves the user framework profile.
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include <cmath>

#include "wingspan/profiles.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/run_record.hpp"
#include "wingspan/ui/calibration_dialog.hpp"

using namespace wingspan;
using namespace wingspan::ui;
using protocol::encode;
using protocol::EventType;
namespace fs = std::filesystem;

namespace {

// A finished run whose process held `baseline` + 1.1 × its allocated peak, predicted with the
// bundled overheads (200 MiB + 5 %).
fs::path add_run(RunStore& store, const std::string& label, std::int64_t peak, std::int64_t baseline,
                 bool completed = true) {
    const fs::path dir = store.create({{"method", "lora"}}, label);
    const std::int64_t rss = baseline + std::llround(1.1 * double(peak));
    const std::int64_t predicted_total = 209715200 + std::llround(1.05 * double(peak));
    RunRecord r;
    for (const std::string& line :
         {encode(EventType::Hello, 0, {{"plan", {{"method", "lora"}}}}),
          encode(EventType::Predicted, 0.01, {{"components", {{"activations", peak}}}, {"peak_bytes", peak},
                                              {"total_bytes", predicted_total}}),
          encode(EventType::Memory, 0.1, {{"components", {{"activations", peak}}}, {"allocated_bytes", peak},
                                          {"peak_bytes", peak}, {"rss_bytes", rss}, {"rss_peak_bytes", rss}}),
          completed ? encode(EventType::Done, 1, {{"reason", "completed"}, {"peak_bytes", peak}, {"rss_peak_bytes", rss}})
                    : encode(EventType::Error, 1, {{"code", "internal"}, {"message", "boom"}})}) {
        RunStore::append_line(dir, line);
        r.ingest_line(line);
    }
    r.finish(completed ? 0 : 1);
    RunStore::write_result(dir, r);
    return dir;
}

}  // namespace

class CalibrationDialogTest : public QObject {
    Q_OBJECT
private slots:
    void fitsChecksAndSaves() {
        QTemporaryDir runs, user;
        QVERIFY(runs.isValid() && user.isValid());
        RunStore store(runs.path().toStdString());
        const std::int64_t baseline = 300'000'000;
        add_run(store, "small", 50'000'000, baseline);
        add_run(store, "medium", 400'000'000, baseline);
        add_run(store, "large", 1'500'000'000, baseline);
        add_run(store, "crashed", 80'000'000, baseline, false);
        const ProfileLibrary lib = ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);

        CalibrationDialog dlg(lib, runs.path().toStdString(), user.path().toStdString());
        QCOMPARE(dlg.runList()->topLevelItemCount(), 4);
        QCOMPARE(dlg.usableRuns(), 3);
        QCOMPARE(dlg.frameworkCombo()->currentData().toString(), QString("libtorch-cpu"));
        // A screen reader names the two controls.
        QCOMPARE(dlg.runList()->accessibleName(), QString("Finished runs to calibrate from"));
        QCOMPARE(dlg.frameworkCombo()->accessibleName(), QString("Framework to calibrate"));
        // The failed run is listed, not checkable, and says why.
        int failed = 0;
        for (int i = 0; i < 4; ++i) {
            QTreeWidgetItem* item = dlg.runList()->topLevelItem(i);
            if (!(item->flags() & Qt::ItemIsEnabled)) {
                ++failed;
                QCOMPARE(item->text(1), QString("failed"));
            }
        }
        QCOMPARE(failed, 1);

        // The fit recovers the baseline and the slack, and the error falls.
        QVERIFY(dlg.calibration().has_value());
        const Calibration& c = *dlg.calibration();
        QCOMPARE(c.runs, size_t(3));
        QVERIFY(std::fabs(double(c.profile.context_bytes) - double(baseline)) < 1e6);
        QVERIFY(std::fabs(c.profile.allocator_slack - 0.10) < 1e-3);
        QVERIFY(c.error_after_percent < 0.5);
        QVERIFY(c.error_before_percent > c.error_after_percent + 5);
        QVERIFY(dlg.resultLabel()->text().contains("before"));
        QVERIFY(dlg.saveButton()->isEnabled());

        // Unchecking every run leaves nothing to fit; checking one back fits again.
        for (int i = 0; i < 4; ++i) {
            QTreeWidgetItem* item = dlg.runList()->topLevelItem(i);
            if (item->flags() & Qt::ItemIsUserCheckable) item->setCheckState(0, Qt::Unchecked);
        }
        QVERIFY(!dlg.calibration().has_value());
        QVERIFY(!dlg.saveButton()->isEnabled());
        QVERIFY(!dlg.resultLabel()->text().isEmpty());
        for (int i = 0; i < 4; ++i) {
            QTreeWidgetItem* item = dlg.runList()->topLevelItem(i);
            if (item->flags() & Qt::ItemIsUserCheckable) item->setCheckState(0, Qt::Checked);
        }
        QVERIFY(dlg.calibration().has_value());

        // Save writes the profile the library then loads as the user's framework.
        QSignalSpy saved(&dlg, &CalibrationDialog::saved);
        QVERIFY2(dlg.save(), qPrintable(dlg.error()));
        QCOMPARE(saved.count(), 1);
        const fs::path file = fs::path(user.path().toStdString()) / "frameworks" / "libtorch-cpu-calibrated.json";
        QVERIFY(fs::exists(file));
        QCOMPARE(dlg.savedPath(), file);
        ProfileLibrary with_user = ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
        with_user.load_user_profiles(user.path().toStdString());
        const FrameworkProfile& f = with_user.framework("libtorch-cpu-calibrated");
        QCOMPARE(f.context_bytes, c.profile.context_bytes);
        QCOMPARE(f.allocator_slack, c.profile.allocator_slack);
        // The implementation fields travel with the calibrated copy.
        QCOMPARE(f.loss_in_place, lib.framework("libtorch-cpu").loss_in_place);
    }

    void noRunsSaysWhatToDo() {
        QTemporaryDir runs, user;
        const ProfileLibrary lib = ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
        CalibrationDialog dlg(lib, fs::path(runs.path().toStdString()) / "none", user.path().toStdString());
        QCOMPARE(dlg.runList()->topLevelItemCount(), 0);
        QVERIFY(!dlg.calibration().has_value());
        QVERIFY(!dlg.saveButton()->isEnabled());
        QVERIFY(dlg.resultLabel()->text().contains("No runs"));
        QVERIFY(!dlg.save());
    }
};

QTEST_MAIN(CalibrationDialogTest)
#include "test_calibration_dialog.moc"
