// "Plan from a data file…" (issue 26): the histogram with the cap and the peak batch's bin marked,
// from a long-tailed file read with a model folder's own tokenizer.
#include <QBarSet>
#include <QChart>
#include <QStackedBarSeries>
#include <QTemporaryDir>
#include <QtTest>

#include "data_fixtures.hpp"
#include "wingspan/ui/data_dialog.hpp"

using namespace wingspan;
using namespace wingspan::ui;
namespace fs = std::filesystem;

class DataDialogTest : public QObject {
    Q_OBJECT
private slots:
    void histogramMarksTheCapAndThePeak() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        const fs::path model = testing::write_tiny_model(root / "tiny");
        std::string rows;   // 40 rows of 30 tokens, one of 400
        for (int i = 0; i < 41; ++i) rows += testing::text_row(i == 17 ? 399 : 29);
        testing::write(root / "tail.jsonl", rows);
        Plan plan = Plan::lesson_default();
        plan.framework = "hf-transformers";
        plan.setup.seq_len = 256;
        plan.setup.micro_batch = 4;
        DataDialog d(plan);
        QString error;
        QVERIFY2(d.read(QString::fromStdString(model.string()), QString::fromStdString((root / "tail.jsonl").string()), &error),
                 qPrintable(error));
        QVERIFY(d.summary().has_value());
        QCOMPARE(d.summary()->examples, std::int64_t(41));
        QCOMPARE(d.summary()->truncated_examples, std::int64_t(1));      // 400 > 256
        QCOMPARE(d.summary()->peak.tokens(), std::int64_t(4 * 256));     // TRL pads dynamically, capped
        QVERIFY(d.summaryText().contains("The peak batch is 4 × 256 = 1024 tokens"));
        // Bins of 50 tokens: the 30-token rows in the first, the 400-token one in the last; the cap
        // and the peak batch's rows (256 tokens each) fall in the 250 bin, which holds no example.
        auto* series = qobject_cast<QStackedBarSeries*>(d.chart()->series().value(0));
        QVERIFY(series);
        QCOMPARE(series->count(), 3);
        const QBarSet* plain = series->barSets()[0];
        const QBarSet* peak = series->barSets()[2];
        QCOMPARE(plain->at(0), 40.0);
        QCOMPARE(peak->at(5), 0.0);   // the 250 bin holds no example: the 400-token one is in the 400 bin
        QCOMPARE(plain->at(8), 1.0);
        // A folder without a tokenizer is refused, and the old figures are gone.
        QVERIFY(!d.read(QString::fromStdString(root.string()), QString::fromStdString((root / "tail.jsonl").string()), &error));
        QVERIFY(error.contains("has no tokenizer.json"));
        QVERIFY(!d.summary().has_value());
    }
};

QTEST_MAIN(DataDialogTest)
#include "test_data_dialog.moc"
