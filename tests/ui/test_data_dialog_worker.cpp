// "Plan from a data file…" reads on a worker thread (issue 26): while a large file is read the
// window's event loop keeps running and the bar moves; Cancel stops the reading well before its
// end, and the dialog reads again afterwards.
#include <QElapsedTimer>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "data_fixtures.hpp"
#include "wingspan/ui/data_dialog.hpp"

using namespace wingspan;
using namespace wingspan::ui;
namespace fs = std::filesystem;

class DataDialogWorkerTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        root_ = dir_.path().toStdString();
        model_ = testing::write_tiny_model(root_ / "tiny");
        // ~80 MB: 400,000 rows of 200 bytes, about 3 s of tokenizing at load 8.
        std::string rows;
        const std::string row = testing::text_row(199);
        rows.reserve(row.size() * 400000);
        for (int i = 0; i < 400000; ++i) rows += row;
        big_ = root_ / "big.jsonl";
        testing::write(big_, rows);
        small_ = root_ / "small.jsonl";
        testing::write(small_, testing::text_row(29) + testing::text_row(99) + testing::text_row(49));
    }

    void eventLoopRunsWhileReadingAndCancelStopsIt() {
        Plan plan = Plan::lesson_default();
        plan.framework = "hf-transformers";
        plan.setup.seq_len = 256;
        plan.setup.micro_batch = 2;
        DataDialog d(plan);
        d.show();
        auto* bar = d.findChild<QProgressBar*>("dataProgress");
        auto* cancel = d.findChild<QPushButton*>("dataCancel");
        auto* text = d.findChild<QLabel*>("dataSummary");
        QVERIFY(bar && cancel && text);
        int ticks = 0;
        QTimer tick;
        connect(&tick, &QTimer::timeout, this, [&] { ++ticks; });
        tick.start(5);
        QSignalSpy finished(&d, &DataDialog::readFinished);
        QElapsedTimer clock;
        clock.start();
        d.startRead(QString::fromStdString(model_.string()), QString::fromStdString(big_.string()));
        QVERIFY(d.reading());
        QVERIFY(cancel->isEnabled());
        // The bar moves while the worker reads: the window's thread keeps handling events.
        QTRY_VERIFY_WITH_TIMEOUT(bar->value() > 0, 20000);
        const int before = ticks;
        QTest::qWait(200);
        QVERIFY2(d.reading(), "the file was read too quickly to test the worker: make it larger");
        QVERIFY2(ticks - before >= 10, qPrintable(QString("the event loop ran %1 timer ticks in 200 ms").arg(ticks - before)));
        const int at_cancel = bar->value();
        QVERIFY(at_cancel < 1000);
        QElapsedTimer stopping;
        stopping.start();
        cancel->click();
        QTRY_VERIFY_WITH_TIMEOUT(!d.reading(), 5000);
        qInfo("read %.1f %% in %lld ms; cancel took %lld ms", at_cancel / 10.0, (long long)(clock.elapsed() - stopping.elapsed()),
              (long long)stopping.elapsed());
        QVERIFY(stopping.elapsed() < 2000);
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.at(0).at(0).toBool(), false);
        QCOMPARE(finished.at(0).at(1).toString(), QString("cancelled"));
        QVERIFY(!d.summary().has_value());
        QCOMPARE(text->text(), QString("Reading cancelled."));
        QVERIFY(bar->isHidden());
        QVERIFY(!cancel->isEnabled());
        // Read again: the dialog works after a cancel.
        QString error;
        QVERIFY2(d.read(QString::fromStdString(model_.string()), QString::fromStdString(small_.string()), &error),
                 qPrintable(error));
        QCOMPARE(d.summary()->examples, std::int64_t(3));
        QCOMPARE(d.summary()->longest, std::int64_t(100));
    }

    // Closing the dialog while it reads stops the worker (no thread left running on a freed dialog).
    void closingWhileReadingStopsTheWorker() {
        Plan plan = Plan::lesson_default();
        QElapsedTimer clock;
        {
            DataDialog d(plan);
            d.startRead(QString::fromStdString(model_.string()), QString::fromStdString(big_.string()));
            QTest::qWait(100);
            QVERIFY(d.reading());
            clock.start();
        }
        QVERIFY(clock.elapsed() < 2000);
    }

private:
    QTemporaryDir dir_;
    fs::path root_, model_, big_, small_;
};

QTEST_MAIN(DataDialogWorkerTest)
#include "test_data_dialog_worker.moc"
