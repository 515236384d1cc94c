// The memory chart's labels where a user reads them: a bar's total and verdict never sit on a
// dashed ceiling line, long machine names break over two lines instead of eliding where the
// slot has room, a slider move changes the chart's values in place (no new series, bar or label
// items: the bars' rectangles move), the bars are drawn under their dashed ceilings and clipped
// to the plot, and the machines list's framework choice names a machine from the start. Offscreen.
#include <QtTest>

#include <QApplication>
#include <QComboBox>
#include <QGraphicsScene>
#include <QGraphicsLayout>
#include <QImage>
#include <QPainter>
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

// Where the chart drew each layer of each bar (chart coordinates; null: not drawn), bar by bar.
std::vector<QRectF> drawn_layers(const MemoryQChart& c, int bars) {
    std::vector<QRectF> rects;
    for (int i = 0; i < bars; ++i)
        for (int k = 0; k <= int(kAllComponents.size()); ++k) rects.push_back(c.drawnLayerRect(i, k));
    return rects;
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
        // chart keeps its series, only their values change.
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
        QVERIFY(series.size() > 17);   // the axes' frame and a ceiling per machine
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

    void oneSliderStepMovesTheBarsInPlace() {
        // The chart draws its bars itself, a rectangle per component of each bar: a step that
        // changes several components moves those rectangles, and the rectangles drawn stack up
        // to exactly the bars the chart reports.
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(w.hasLibrary());
        show_every_machine(w);
        QCOMPARE(w.plan().machines.size(), w.library().machines().size());
        QApplication::processEvents();
        MemoryQChart* c = w.machineChartWidget()->memoryChart();
        const int n = int(w.machineChart().bars.size());
        auto* seq = w.findChild<QSlider*>("seqSlider");
        auto* size = w.findChild<QSlider*>("sizeSlider");
        QVERIFY(seq && size);
        const std::pair<QSlider*, int> steps[] = {{seq, seq->maximum()}, {seq, seq->minimum()}, {seq, (seq->minimum() + seq->maximum()) / 2},
                                                  {size, size->maximum()}, {size, (size->minimum() + size->maximum()) / 2}};
        for (const auto& [slider, to] : steps) {
            const std::vector<QRectF> before = drawn_layers(*c, n);
            QVERIFY(slider->value() != to);
            slider->setValue(to);
            QApplication::processEvents();
            const std::vector<QRectF> after = drawn_layers(*c, n);
            int moved = 0;
            for (size_t k = 0; k < after.size(); ++k) moved += after[k] != before[k];
            QVERIFY2(moved >= 2, qPrintable(QString("%1 layers moved").arg(moved)));
            // Each machine's drawn layers stack up to exactly the bar the chart reports.
            const size_t layers = kAllComponents.size() + 1;
            for (int i = 0; i < n; ++i) {
                // (A bar cut at the top of the axis is drawn past it, clipped to the plot.)
                const QRectF want = c->barRect(i).intersected(c->plotArea());
                QRectF got;
                for (size_t k = 0; k < layers; ++k) got |= after[size_t(i) * layers + k];
                got = got.intersected(c->plotArea());
                QVERIFY2(std::fabs(got.top() - want.top()) < 1.5 && std::fabs(got.bottom() - want.bottom()) < 1.5 &&
                             std::fabs(got.left() - want.left()) < 0.5 && std::fabs(got.right() - want.right()) < 0.5,
                         qPrintable(QString("bar %1: drawn %2..%3, expected %4..%5").arg(i).arg(got.top()).arg(got.bottom())
                                        .arg(want.top()).arg(want.bottom())));
            }
        }
    }

    void barsAreDrawnUnderTheirCeilingsAndClippedToThePlot() {
        // The dashed ceiling crossing a bar that does not fit is drawn over the bar, and a bar
        // cut at the top of the axis (400 GB beside 24 GB ceilings) ends at the plot's top edge.
        ChartData d;
        d.unit = ByteUnit::GB;
        d.title = "drawn";
        d.bars = {bar("a", "over its ceiling", 20 * GB, 10 * GB), bar("b", "cut", 400 * GB, 24 * GB)};
        const QSize size(800, 600);
        LaidOut l(d, QSizeF(size));
        const ChartStyle style = ChartStyle::light();
        QImage image(size, QImage::Format_ARGB32);
        image.fill(style.background);
        {
            QPainter painter(&image);
            l.scene.render(&painter, QRectF(QPointF(0, 0), QSizeF(size)), QRectF(QPointF(0, 0), QSizeF(size)));
        }
        const QRgb weights = component_qcolor(Component::FrozenWeights).rgb();
        auto is = [&](int x, int y, QRgb colour) { return image.rect().contains(x, y) && image.pixelColor(x, y).rgb() == colour; };
        const QRectF bar_a = l.chart->barRect(0);
        const QLineF ceiling = l.chart->ceilingLine(0);
        QVERIFY(ceiling.y1() > bar_a.top() + 10 && ceiling.y1() < bar_a.bottom() - 10);
        // Dashes of 8 px with gaps of 4 px (a 2 px pen): about two thirds of the bar's width.
        int dashed = 0, across = 0;
        for (int x = int(bar_a.left()) + 2; x < int(bar_a.right()) - 1; ++x, ++across) {
            const int y = int(std::lround(ceiling.y1()));
            dashed += is(x, y - 1, style.ceiling.rgb()) || is(x, y, style.ceiling.rgb());
        }
        QVERIFY2(across > 20 && dashed * 10 >= across * 4, qPrintable(QString("%1 of %2 px dashed").arg(dashed).arg(across)));
        QVERIFY(is(int(bar_a.center().x()), int((ceiling.y1() + bar_a.bottom()) / 2), weights));
        // The cut bar fills the plot to its top edge and nothing above it.
        const QRectF plot = l.chart->plotArea();
        const int cx = int(l.chart->barRect(1).center().x());
        QVERIFY(l.chart->barRect(1).top() <= plot.top() + 0.5);
        QVERIFY(is(cx, int(plot.center().y()), weights));
        for (int y = int(plot.top()) - 12; y < int(plot.top()) - 1; ++y) QVERIFY2(!is(cx, y, weights), qPrintable(QString::number(y)));
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
