// The memory chart's labels where a user reads them: a bar's total and verdict never sit on a
// dashed ceiling line, long machine names break over two lines instead of eliding where the
// slot has room, a slider move changes the chart's values in place (no new series or label
// items) and reaches Qt Charts' bar layout once, and the machines list's framework choice names
// a machine from the start. Offscreen.
#include <QtTest>

#include <QApplication>
#include <QAbstractBarSeries>
#include <QBarSet>
#include <QGraphicsRectItem>
#include <QSignalSpy>
#include <QComboBox>
#include <QGraphicsScene>
#include <QGraphicsLayout>
#include <QPushButton>
#include <QSlider>
#include <QStyle>
#include <QStyleOptionComboBox>
#include <QTreeWidget>

#include "wingspan/ui/chart_view.hpp"
#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/memory_qchart.hpp"

using namespace wingspan;
using namespace wingspan::ui;

namespace {

constexpr std::int64_t GB = 1'000'000'000;

ChartBar bar(const QString& id, const QString& label, std::int64_t total, std::int64_t ceiling) {
    ChartBar b;
    b.id = id;
    b.label = label;
    b.sublabel = "usable";
    ChartSegment s;
    s.component = Component::FrozenWeights;
    s.bytes = total;
    s.label = "Weights";
    b.segments.push_back(s);
    b.total = total;
    b.ceiling = ceiling;
    b.margin = ceiling - total;
    b.fit = total <= ceiling ? Fit::Fits : Fit::No;
    b.verdict = total <= ceiling ? "fits" : "does not fit";
    return b;
}

// A chart laid out at `size` in its own scene, as the exports do it.
struct LaidOut {
    QGraphicsScene scene;
    MemoryQChart* chart = new MemoryQChart;
    LaidOut(const ChartData& d, QSizeF size) {
        scene.addItem(chart);
        chart->setGeometry(QRectF(QPointF(0, 0), size));
        chart->setContent(d, ChartStyle::light());
        for (int pass = 0; pass < 3; ++pass) {
            chart->layout()->invalidate();
            chart->layout()->activate();
            chart->layoutDecorations();
        }
    }
};

// Does the label rectangle touch the dashed ceiling (2 px pen) of any bar it spans?
bool on_a_ceiling(const MemoryQChart& c, int bars, const QRectF& label) {
    if (label.isNull()) return false;
    for (int j = 0; j < bars; ++j) {
        const QLineF l = c.ceilingLine(j);
        if (l.isNull() || l.x2() < label.left() || l.x1() > label.right()) continue;
        if (l.y1() + 1 >= label.top() && l.y1() - 1 <= label.bottom()) return true;
    }
    return false;
}

// The window at 1600x1000 with every machine ticked ("All"): 17 bars.
void show_every_machine(MainWindow& w) {
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    for (auto* b : w.findChildren<QPushButton*>())
        if (b->text() == "All") b->click();
}

// Counts the events of one type that the objects it watches receive.
struct EventCounter : QObject {
    explicit EventCounter(QEvent::Type t) : type(t) {}
    QEvent::Type type;
    int count = 0;
    bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() == type) ++count;
        return false;
    }
};

}  // namespace

class ChartLayoutTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void labelsNeverSitOnACeiling() {
        // Totals just under their ceilings: drawn right over the bar, the total and verdict
        // would cross the dashed line (the RTX 4090 at the lessons' example).
        ChartData d;
        d.unit = ByteUnit::GB;
        d.title = "labels and ceilings";
        d.bars = {bar("a", "RTX 4090", std::int64_t(20.8 * GB), std::int64_t(24.9 * GB)),
                  bar("b", "T4", std::int64_t(20.8 * GB), std::int64_t(15.8 * GB)),
                  bar("c", "A100 80GB", std::int64_t(79 * GB), std::int64_t(80 * GB)),
                  bar("d", "CPU-only laptop", std::int64_t(35.4 * GB), std::int64_t(35.9 * GB))};
        for (QSizeF size : {QSizeF(560, 480), QSizeF(900, 600), QSizeF(1400, 800)}) {
            LaidOut l(d, size);
            for (int i = 0; i < int(d.bars.size()); ++i) {
                const QRectF total = l.chart->totalRect(i), verdict = l.chart->verdictRect(i);
                QVERIFY(total.isValid());
                QVERIFY(verdict.isValid());
                QVERIFY2(!on_a_ceiling(*l.chart, int(d.bars.size()), total), qPrintable(d.bars[size_t(i)].label));
                QVERIFY2(!on_a_ceiling(*l.chart, int(d.bars.size()), verdict), qPrintable(d.bars[size_t(i)].label));
                // Still above its own bar, and the verdict above the total.
                QVERIFY(total.bottom() <= l.chart->barRect(i).top() + 0.5);
                QVERIFY(verdict.bottom() <= total.top() + 0.5);
            }
            // The bar under its ceiling has its labels lifted over the line, not left on it.
            QVERIFY(l.chart->totalRect(0).bottom() < l.chart->ceilingLine(0).y1());
        }
    }

    void longNamesBreakInsteadOfEliding() {
        ChartData d;
        d.unit = ByteUnit::GB;
        d.title = "names";
        for (const char* name : {"RTX 4090", "Mac Studio M3 Ultra", "T4", "A100 80GB", "CPU-only laptop", "This machine"})
            d.bars.push_back(bar(name, name, 20 * GB, 24 * GB));
        LaidOut l(d, QSizeF(600, 480));   // about 90 px a bar: too narrow for one line
        const QString studio = l.chart->captionShown(1, 0);
        QCOMPARE(studio, QString("Mac Studio\nM3 Ultra"));
        for (int i = 0; i < int(d.bars.size()); ++i) {
            const QString shown = l.chart->captionShown(i, 0);
            QVERIFY2(!shown.contains(QChar(0x2026)), qPrintable(shown));
            QCOMPARE(QString(shown).replace('\n', ' '), d.bars[size_t(i)].label);
        }
        // Wide enough: one line each.
        LaidOut wide(d, QSizeF(1600, 600));
        QCOMPARE(wide.chart->captionShown(1, 0), QString("Mac Studio M3 Ultra"));
    }

    void theLessonsExampleAtALaptopSize() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY2(w.hasLibrary(), qPrintable(w.loadError()));
        w.setPlan(Plan::lesson_default());
        w.resize(1280, 720);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QApplication::processEvents();
        const MemoryQChart& c = *w.machineChartWidget()->memoryChart();
        const int n = int(w.machineChart().bars.size());
        QCOMPARE(n, 6);
        for (int i = 0; i < n; ++i) {
            QVERIFY(!on_a_ceiling(c, n, c.totalRect(i)));
            QVERIFY(!on_a_ceiling(c, n, c.verdictRect(i)));
            QVERIFY2(!c.captionShown(i, 0).contains(QChar(0x2026)), qPrintable(c.captionShown(i, 0)));
        }
        // The framework choice names a machine before any row is clicked: the first ticked one.
        auto* combo = w.findChild<QComboBox*>("machineFramework");
        auto* list = w.findChild<QTreeWidget*>("machineList");
        QVERIFY(combo && list);
        QVERIFY(combo->isEnabled());
        QVERIFY(combo->count() > 1);
        QVERIFY(list->currentItem());
        QCOMPARE(list->currentItem()->checkState(0), Qt::Checked);
        const MachineProfile& m = w.library().machine(list->currentItem()->data(0, Qt::UserRole).toString().toStdString());
        const QString usual = QString::fromStdString(w.library().framework_for(m).name);
        QCOMPARE(combo->itemData(0, Qt::ToolTipRole).toString(), usual);
        QVERIFY(combo->toolTip().contains(usual));
        QVERIFY(combo->currentText().startsWith("Usual: "));
        // Every choice reads whole in the box at this size (the full names are the tooltips).
        QStyleOptionComboBox opt;
        opt.initFrom(combo);
        const int field = combo->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, combo).width();
        for (int k = 0; k < combo->count(); ++k)
            QVERIFY2(combo->fontMetrics().horizontalAdvance(combo->itemText(k)) <= field,
                     qPrintable(combo->itemText(k) + " does not fit " + QString::number(field) + " px"));
    }

    void sliderMovesChangeValuesInPlace() {
        // Every machine, the sequence slider over its whole range and the size slider along the
        // family: components come and go (offload, master weights), the axis changes, and the
        // chart keeps its series and sets, only their values change.
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(w.hasLibrary());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QPushButton* all = nullptr;
        for (auto* b : w.findChildren<QPushButton*>())
            if (b->text() == "All") all = b;
        QVERIFY(all);
        all->click();   // every machine in the list
        QCOMPARE(w.plan().machines.size(), w.library().machines().size());
        MemoryQChart* c = w.machineChartWidget()->memoryChart();
        const QList<QAbstractSeries*> series = c->series();
        QVERIFY(series.size() > 17);   // the bars and a ceiling per machine
        auto* seq = w.findChild<QSlider*>("seqSlider");
        auto* size = w.findChild<QSlider*>("sizeSlider");
        QVERIFY(seq && size);
        for (int v = seq->minimum(); v <= seq->maximum(); ++v) {
            seq->setValue(v);
            QCOMPARE(c->series(), series);
        }
        for (int v = size->minimum(); v <= size->maximum(); v += std::max(1, (size->maximum() - size->minimum()) / 25)) {
            size->setValue(v);
            QCOMPARE(c->series(), series);
            // And the values shown are the evaluation's: the tallest bar's total on its label.
            const ChartData& d = w.machineChart();
            for (int i = 0; i < int(d.bars.size()); ++i)
                QVERIFY(c->totalRect(i).isValid());
        }
    }

    void oneSliderStepLaysTheBarsOutOnce() {
        // Qt Charts lays out every bar of the series on each value signal of each bar set; a
        // step that changes several components must reach it once, with all the new values.
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(w.hasLibrary());
        show_every_machine(w);
        QCOMPARE(w.plan().machines.size(), w.library().machines().size());
        QApplication::processEvents();
        MemoryQChart* c = w.machineChartWidget()->memoryChart();
        QAbstractBarSeries* bars = nullptr;
        for (QAbstractSeries* s : c->series())
            if (auto* b = qobject_cast<QAbstractBarSeries*>(s)) bars = b;
        QVERIFY(bars);
        // The signals that make the chart lay the bars out come from each set's private object.
        std::vector<std::unique_ptr<QSignalSpy>> relayouts;
        for (QBarSet* set : bars->barSets())
            for (QObject* child : set->children())
                if (qstrcmp(child->metaObject()->className(), "QBarSetPrivate") == 0)
                    for (const char* signal : {SIGNAL(valueAdded(int,int)), SIGNAL(valueRemoved(int,int)), SIGNAL(valueChanged(int))}) {
                        relayouts.push_back(std::make_unique<QSignalSpy>(child, signal));
                        QVERIFY(relayouts.back()->isValid());
                    }
        QCOMPARE(relayouts.size(), size_t(bars->count()) * 3);
        auto signals_sent = [&] {
            int n = 0;
            for (auto& spy : relayouts) n += int(spy->count());
            for (auto& spy : relayouts) spy->clear();
            return n;
        };
        auto values = [&] {
            std::vector<std::vector<qreal>> v;
            for (QBarSet* set : bars->barSets()) {
                v.emplace_back();
                for (int k = 0; k < set->count(); ++k) v.back().push_back(set->at(k));
            }
            return v;
        };
        auto sets_changed = [](const std::vector<std::vector<qreal>>& a, const std::vector<std::vector<qreal>>& b) {
            int n = 0;
            for (size_t s = 0; s < a.size(); ++s) n += a[s] != b[s];
            return n;
        };
        auto* seq = w.findChild<QSlider*>("seqSlider");
        auto* size = w.findChild<QSlider*>("sizeSlider");
        QVERIFY(seq && size);
        signals_sent();
        const std::pair<QSlider*, int> steps[] = {{seq, seq->maximum()}, {seq, seq->minimum()}, {seq, (seq->minimum() + seq->maximum()) / 2},
                                                  {size, size->maximum()}, {size, (size->minimum() + size->maximum()) / 2}};
        for (const auto& [slider, to] : steps) {
            const auto before = values();
            QVERIFY(slider->value() != to);
            slider->setValue(to);
            const int changed = sets_changed(before, values());
            QVERIFY2(changed >= 2, qPrintable(QString("%1 sets changed").arg(changed)));
            QCOMPARE(signals_sent(), 1);
            QApplication::processEvents();
            // The bars Qt Charts drew are the new values: each machine's visible bar pieces
            // stack up to exactly the bar the chart reports (its total).
            const ChartData& d = w.machineChart();
            QList<QRectF> pieces;
            for (QGraphicsItem* item : bars->chart()->scene()->items())
                // Qt's bar pieces live under the series' item; our legend swatches and focus
                // ring are the chart's own children.
                if (auto* r = dynamic_cast<QGraphicsRectItem*>(item); r && r->isVisible() && r->parentItem() != c)
                    pieces.push_back(r->mapRectToItem(c, r->rect()));
            for (int i = 0; i < int(d.bars.size()); ++i) {
                // (A bar cut at the top of the axis is drawn past it, clipped to the plot.)
                const QRectF want = c->barRect(i).intersected(c->plotArea());
                QRectF got;
                for (const QRectF& p : pieces)
                    if (p.center().x() > want.left() && p.center().x() < want.right() && p.height() > 0) got |= p;
                got = got.intersected(c->plotArea());
                QVERIFY2(std::fabs(got.top() - want.top()) < 1.5 && std::fabs(got.bottom() - want.bottom()) < 1.5,
                         qPrintable(QString("bar %1: drawn %2..%3, expected %4..%5").arg(i).arg(got.top()).arg(got.bottom())
                                        .arg(want.top()).arg(want.bottom())));
            }
        }
    }

    void aSliderStepPaintsTheChartOnceAndLeavesThePanelsAlone() {
        // A step is one paint of the chart, also when the value axis changes (its relayout
        // happens before the paint, not after it), and the plan inputs beside it keep their
        // layout (their labels change text, not size).
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(w.hasLibrary());
        show_every_machine(w);
        auto settle = [] {
            QApplication::processEvents();
            QApplication::processEvents();
            QApplication::sendPostedEvents(nullptr, QEvent::UpdateRequest);
        };
        settle();
        EventCounter paints(QEvent::Paint), relayouts(QEvent::LayoutRequest);
        MemoryChartWidget* view = w.machineChartWidget();
        view->viewport()->installEventFilter(&paints);
        auto* inputs = w.findChild<QWidget*>("inputsPanel");
        QVERIFY(inputs);
        for (QWidget* child : inputs->findChildren<QWidget*>()) child->installEventFilter(&relayouts);
        inputs->installEventFilter(&relayouts);
        auto* size = w.findChild<QSlider*>("sizeSlider");
        QVERIFY(size);
        int axis_changes = 0;
        for (int step = 0; step <= 40; ++step) {
            const double axis_before = view->memoryChart()->valueAxis().max_bytes;
            paints.count = relayouts.count = 0;
            size->setValue(size->minimum() + (size->maximum() - size->minimum()) * step / 40);
            settle();
            axis_changes += view->memoryChart()->valueAxis().max_bytes != axis_before;
            QCOMPARE(paints.count, 1);
            QCOMPARE(relayouts.count, 0);
        }
        QVERIFY2(axis_changes >= 3, qPrintable(QString::number(axis_changes)));
    }
};

QTEST_MAIN(ChartLayoutTest)
#include "test_chart_layout.moc"
