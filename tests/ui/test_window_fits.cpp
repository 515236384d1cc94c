// Issue 32, items 7 and 8, on a 1280×720 screen with real widgets, offscreen: no chart text is
// drawn over another (a bar's total over a ceiling's name, two ceilings' names over each other)
// in the Machines, Methods and Sizes charts at any scale; the Run tab fits the window without a
// horizontal scrollbar; every dialog the menus and buttons open fits the screen and shows its
// text whole (the download dialog's long URL included); `--screenshot-dialog` finds them by name.
#include <QtTest>

#include <QAbstractButton>
#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QChartView>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTextDocumentFragment>
#include <QTableView>
#include <QTimer>
#include <QTreeWidget>

#include "window_test_support.hpp"
#include "wingspan/ui/chart_view.hpp"
#include "wingspan/ui/machines_panel.hpp"
#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/memory_qchart.hpp"
#include "wingspan/ui/model_download_dialog.hpp"
#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/screenshot.hpp"
#include "wingspan/ui/serve_gguf_panel.hpp"

using namespace wingspan;
using namespace wingspan::ui;

namespace {

using ui_test::child;

const char* const kCharts[] = {"machineChart", "methodsChart", "sizesChart"};

void show_tab_of(MainWindow& w, QWidget* page) {
    QTabWidget* tabs = w.tabs();
    for (int i = 0; i < tabs->count(); ++i)
        if (tabs->widget(i) == page || tabs->widget(i)->isAncestorOf(page)) tabs->setCurrentIndex(i);
    QApplication::processEvents();
    QTest::qWait(30);
}

// A label whose text needs more room than it has: cut at its right or bottom edge.
QString clipped_label(QWidget* dialog) {
    for (QLabel* l : dialog->findChildren<QLabel*>()) {
        if (!l->isVisible() || l->text().isEmpty() || !l->pixmap().isNull()) continue;
        const QSize need = l->wordWrap() ? QSize(l->minimumSizeHint().width(), l->heightForWidth(l->width()))
                                         : l->sizeHint();
        if (need.width() > l->width() + 1 || need.height() > l->height() + 1)
            return QString("'%1' needs %2×%3 px, has %4×%5")
                .arg(l->text().left(60)).arg(need.width()).arg(need.height()).arg(l->width()).arg(l->height());
        if (!dialog->rect().contains(l->mapTo(dialog, l->rect().bottomRight())))
            return "'" + l->text().left(60) + "' reaches past the dialog";
    }
    return {};
}

// The first shown table under `page` that scrolls sideways (its object name), or empty.
QString sideways_table(QWidget* page, int* shown = nullptr) {
    int count = 0;
    for (QTableView* table : page->findChildren<QTableView*>()) {
        if (!table->isVisible()) continue;
        ++count;
        if (table->horizontalScrollBar()->isVisible()) return table->objectName() + " scrolls sideways";
    }
    if (shown) *shown += count;
    return {};
}

// The window filling the 1280×720 screen, shown, with the run panel when `run_panel`.
bool shown(MainWindow& w, bool run_panel = false) {
    if (!w.hasLibrary()) return false;
    if (run_panel) install_run_panel(w, QString());
    w.resize(1280, 720);
    w.show();
    return QTest::qWaitForWindowExposed(&w);
}

}  // namespace

class WindowFitsTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY2(ui_test::start_window_test("WingspanWindowFits", {1280, 720}), "a 1280×720 screen"); }

    // Items 7 and 8: the lessons' plan, one at batch 64 (bars past the top) and one at seq
    // 131,072 (terabytes), at each scale: no text over another in any of the three charts.
    void noChartTextOverAnother() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w));
        Plan batch64 = Plan::lesson_default();
        batch64.setup.micro_batch = 64;
        Plan long_seq = Plan::lesson_default();
        long_seq.setup.seq_len = 131072;
        auto* scale = child<QComboBox>(&w, "chartScale");
        int charts_checked = 0;
        for (const auto& [plan, what] : {std::pair{Plan::lesson_default(), "lesson"}, std::pair{batch64, "batch 64"},
                                         std::pair{long_seq, "seq 131,072"}}) {
            w.setPlan(plan);
            for (int s = 0; s < scale->count(); ++s) {
                scale->setCurrentIndex(s);
                for (const char* name : kCharts) {
                    auto* view = child<MemoryChartWidget>(&w, name);
                    show_tab_of(w, view);
                    const MemoryQChart& c = *view->memoryChart();
                    const QStringList over = overlapping_chart_texts(c);
                    QVERIFY2(over.isEmpty(), qPrintable(QString("%1, %2, %3: %4").arg(what, scale->currentText(), name)
                                                            .arg(over.join("; "))));
                    // Each ceiling's name is on its line (just above or under it), inside the plot and
                    // over no bar; where its line has no such spot, the key above the plot names it.
                    for (int i = 0; i < int(c.content().lines.size()); ++i) {
                        const QString& label = c.content().lines[size_t(i)].label;
                        if (c.lineInKey(i)) {
                            QVERIFY2(c.keyText().contains(QString(label).replace(" GB", "\u00A0GB")), qPrintable(label + " / " + c.keyText()));
                            QVERIFY(c.lineLabelRect(i).isNull());
                            continue;
                        }
                        const QRectF r = c.lineLabelRect(i);
                        QVERIFY2(c.plotArea().contains(r), qPrintable(label));
                        for (int b = 0; b < int(c.content().bars.size()); ++b)
                            QVERIFY2(!r.intersects(c.barRect(b).adjusted(0.5, 0.5, -0.5, -0.5)),
                                     qPrintable(QString("%1 over bar %2 (%3, %4)").arg(label).arg(b).arg(what, name)));
                    }
                    // Every bar's name whole (across, or turned to read upwards), never "1…".
                    for (int b = 0; b < int(c.content().bars.size()); ++b)
                        QVERIFY2(c.captionShown(b, 0).remove('\n').remove(QChar(0x00A0)).remove(' ') ==
                                     QString(c.content().bars[size_t(b)].label).remove(' '),
                                 qPrintable(c.captionShown(b, 0) + " / " + c.content().bars[size_t(b)].label));
                    ++charts_checked;
                }
            }
        }
        QCOMPARE(charts_checked, 3 * 3 * 3);
        scale->setCurrentIndex(0);
    }

    // Item 8: the lessons' Methods chart names its four ceilings (this machine, RTX 4090, T4,
    // the CPU laptop; the first two 0.4 GB apart) each on its own line, none over a total.
    void closeCeilingsKeepTheirNamesApart() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w));
        auto* view = child<MemoryChartWidget>(&w, "methodsChart");
        show_tab_of(w, view);
        const MemoryQChart& c = *view->memoryChart();
        const auto& lines = c.content().lines;
        QVERIFY(lines.size() >= 3);
        for (size_t i = 0; i < lines.size(); ++i) {
            const QRectF r = c.lineLabelRect(int(i));
            for (size_t j = i + 1; j < lines.size(); ++j)
                QVERIFY2(!r.intersects(c.lineLabelRect(int(j))), qPrintable(lines[i].label + " / " + lines[j].label));
            for (int b = 0; b < int(c.content().bars.size()); ++b) QVERIFY(!r.intersects(c.totalRect(b)));
        }
    }

    // The Sizes tab at 1280×720 (issue 32): its 18 bars are ~20 px apart, so the size names turn
    // to read upwards, and the machines' lines under the bars' tops are named in the key.
    void sizesTabNamesEveryBarAndLine() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w));
        auto* view = child<MemoryChartWidget>(&w, "sizesChart");
        show_tab_of(w, view);
        const MemoryQChart& c = *view->memoryChart();
        QCOMPARE(int(c.content().bars.size()), 18);
        QVERIFY(c.captionsTurned());
        QVERIFY2(c.plotArea().height() >= 150, qPrintable(QString::number(c.plotArea().height())));
        int in_key = 0;
        for (int i = 0; i < int(c.content().lines.size()); ++i) in_key += c.lineInKey(i) ? 1 : 0;
        QVERIFY(in_key > 0);
        QVERIFY2(c.keyText().contains("top to bottom"), qPrintable(c.keyText()));
        // At 1920×1080 the same names read across.
        w.resize(1920, 1080);
        QApplication::processEvents();
        QTest::qWait(50);
        if (w.width() >= 1900) QTRY_VERIFY(!c.captionsTurned());
    }

    // Every tab at 1280×720: the window no wider than the screen, and no table scrolls sideways
    // (the Methods table's 17 columns needed ~1,500 px; it is turned a quarter now).
    void everyTabFitsTheScreenWidth() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w, true));
        QTabWidget* tabs = w.tabs();
        int tables = 0;
        for (int i = 0; i < tabs->count(); ++i) {
            tabs->setCurrentIndex(i);
            QApplication::processEvents();
            QTest::qWait(30);
            const QString tab = tabs->tabText(i);
            QVERIFY2(w.frameGeometry().width() <= 1280 && w.minimumSizeHint().width() <= 1280,
                     qPrintable(QString("%1: %2 px, needs %3").arg(tab).arg(w.width()).arg(w.minimumSizeHint().width())));
            // Every table of every tab, the which-machine tab's per-machine table too (issue 32).
            const QString sideways = sideways_table(tabs->widget(i), &tables);
            QVERIFY2(sideways.isEmpty(), qPrintable(tab + ": " + sideways));
        }
        // Methods, Sizes, the which-machine grid and its per-machine table at least.
        QVERIFY2(tables >= 4, qPrintable(QString("%1 tables shown").arg(tables)));
        // The per-machine table's folded columns are said on hover over the machine's name.
        auto* per_machine = child<QTableView>(&w, "machineTable");
        const QString tip = per_machine->model()->index(0, 0).data(Qt::ToolTipRole).toString();
        for (const char* folded : {"Framework: ", "Usable: ", "Margin: ", "Max sequence: ", "Tokens/s: "})
            QVERIFY2(tip.contains(folded) && per_machine->isColumnHidden(int(QStringList({"Machine", "Framework", "Needs",
                         "Usable", "Verdict", "Margin", "Max batch", "Max sequence", "Tokens/s"}).indexOf(QString(folded).chopped(2)))),
                     qPrintable(tip));
        auto* methods = child<QTableView>(&w, "methodTable");
        QAbstractItemView* cells = methods;   // sizeHintForColumn is public here
        tabs->setCurrentIndex(1);
        QApplication::processEvents();
        QTest::qWait(30);
        QVERIFY(methods->isVisible());
        QCOMPARE(methods->model()->columnCount(), 4);   // the component, then full, LoRA and QLoRA
        QCOMPARE(methods->model()->headerData(2, Qt::Horizontal).toString(), QString("LoRA (16-bit base)"));
        // No cell cut: each column as wide as its widest text.
        for (int col = 0; col < methods->model()->columnCount(); ++col)
            QVERIFY2(cells->sizeHintForColumn(col) <= methods->columnWidth(col) + 1,
                     qPrintable(QString("column %1 needs %2 px, has %3").arg(col).arg(cells->sizeHintForColumn(col))
                                    .arg(methods->columnWidth(col))));
    }

    // Item 8: the Run tab inside the window at 1280×720: no horizontal scrollbar, with the
    // settings open and closed.
    void runTabHasNoHorizontalScrollbar() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w, true));
        auto* panel = w.findChild<RunPanel*>();
        QVERIFY(panel);
        auto* scroll = child<QScrollArea>(&w, "runTabScroll");
        show_tab_of(w, scroll);
        QVERIFY(scroll->isVisible());
        QVERIFY2(w.width() <= 1280, qPrintable(QString::number(w.width())));
        for (int round = 0; round < 2; ++round) {
            QApplication::processEvents();
            QTest::qWait(30);
            const int need = panel->minimumSizeHint().width();
            QVERIFY2(need <= scroll->viewport()->width(),
                     qPrintable(QString("the run panel needs %1 px, the tab has %2").arg(need).arg(scroll->viewport()->width())));
            QVERIFY(!scroll->horizontalScrollBar()->isVisible());
            // The run charts' titles and their "no run yet" text: each line as wide as its card
            // at most (Qt Charts elides a wider one: "…the me…").
            for (QChartView* view : panel->findChildren<QChartView*>()) {
                if (!view->isVisible()) continue;
                const QFontMetricsF fm(view->chart()->titleFont());
                for (QString line : view->chart()->title().split("<br>")) {
                    line.remove(QRegularExpression("<[^>]*>"));
                    line = QTextDocumentFragment::fromHtml(line).toPlainText();
                    QVERIFY2(fm.horizontalAdvance(line) <= view->chart()->size().width() - 8,
                             qPrintable(QString("'%1' needs %2 px, the chart has %3").arg(line).arg(fm.horizontalAdvance(line))
                                            .arg(view->chart()->size().width())));
                }
            }
            child<QAbstractButton>(panel, "runSettingsToggle")->click();
        }
    }

    // Issue 32: the Machines panel shows every machine's name whole at 1280×720 ("Mac Studi…tra
    // 96 GB" did not say which one): a name wider than its column wraps, and its row is tall
    // enough for the wrapped lines.
    void machinesPanelShowsWholeNames() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w));
        QApplication::processEvents();
        QTest::qWait(30);
        auto* panel = w.findChild<MachinesPanel*>();
        QVERIFY(panel);
        QTreeWidget* list = panel->list();
        QVERIFY(list->isVisible());
        int wrapped = 0;
        for (int i = 0; i < list->topLevelItemCount(); ++i) {
            QTreeWidgetItem* item = list->topLevelItem(i);
            const QModelIndex index = list->indexFromItem(item, 0);
            const QRect cell = list->visualRect(index);
            QStyleOptionViewItem o;
            o.initFrom(list);
            o.rect = cell;
            o.features = QStyleOptionViewItem::HasCheckIndicator | QStyleOptionViewItem::HasDisplay |
                         QStyleOptionViewItem::WrapText;
            o.text = item->text(0);
            const int margin = list->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, list) + 1;
            const QRect room = list->style()->subElementRect(QStyle::SE_ItemViewItemText, &o, list).adjusted(margin, 0, -margin, 0);
            const QFontMetrics fm(list->font());
            const QRect need = fm.boundingRect(QRect(0, 0, room.width(), 1 << 16), Qt::TextWordWrap, item->text(0));
            for (const QString& word : item->text(0).split(' '))
                QVERIFY2(fm.horizontalAdvance(word) <= room.width(),
                         qPrintable(QString("'%1' of '%2' is wider than the column").arg(word, item->text(0))));
            QVERIFY2(need.height() <= room.height(),
                     qPrintable(QString("'%1' needs %2 px of height, its row has %3").arg(item->text(0)).arg(need.height())
                                    .arg(room.height())));
            wrapped += need.height() > fm.height();
        }
        QVERIFY2(wrapped >= 1, "at 1280×720 the Mac Studio's name is wider than the column: it wraps");
    }

    // The verdicts follow the slider ~11 times a second in all 34 rows, and each changed cell
    // makes the list ask its row's height again: that asks no name to be wrapped again (it was
    // most of the update's time), while a narrower column still re-wraps them all.
    void verdictUpdatesWrapNoNameAgain() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        Plan plan = Plan::lesson_default();
        plan.machines.clear();
        for (const auto& m : w.library().machines()) plan.machines.push_back(m.id);
        w.setPlan(plan);
        QVERIFY(shown(w));
        QApplication::processEvents();
        auto* panel = w.findChild<MachinesPanel*>();
        auto* seq = w.findChild<QSlider*>("seqSlider");
        QVERIFY(panel && seq);
        QTreeWidget* list = panel->list();
        QCOMPARE(list->topLevelItemCount(), int(plan.machines.size()));
        const auto verdicts = [&] {
            QStringList v;
            for (int i = 0; i < list->topLevelItemCount(); ++i) v << list->topLevelItem(i)->text(1);
            return v;
        };
        const int wraps = panel->nameWraps();
        QVERIFY2(wraps >= list->topLevelItemCount(), "listing the machines measured each name");
        const QStringList before = verdicts();
        for (int step : {2, 6, 12, 16}) {
            seq->setValue(step);
            QTest::qWait(120);   // past the side panels' throttle: the verdicts are relabelled
        }
        int changed = 0;
        const QStringList after = verdicts();
        for (int i = 0; i < after.size(); ++i) changed += after[i] != before[i];
        QVERIFY2(changed >= 10, qPrintable(QString("the sequence moved 128 → 16k tokens, %1 verdicts changed").arg(changed)));
        QCOMPARE(panel->nameWraps(), wraps);
        auto* dock = w.findChild<QDockWidget*>("machinesDock");
        QVERIFY(dock);
        const int column = list->columnWidth(0);
        w.resizeDocks({dock}, {dock->width() - 40}, Qt::Horizontal);
        QTest::qWait(30);
        QVERIFY2(list->columnWidth(0) < column, "the narrower dock narrows the name column");
        QVERIFY2(panel->nameWraps() >= wraps + list->topLevelItemCount(), "a narrower column wraps every name again");
    }

    // Serve mode adds llama.cpp's view under the Machines chart (issue 30): the window still fits
    // the screen and the chart keeps its labels apart.
    void serveModeFitsTheScreen() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w, true));
        Plan serve = Plan::lesson_default();
        serve.setup.method = Method::Serve;
        serve.setup.seq_len = 8192;
        w.setPlan(serve);
        QApplication::processEvents();
        QTest::qWait(30);
        QVERIFY(w.serveGgufPanel()->isVisible());
        QVERIFY2(w.width() <= 1280 && w.minimumSizeHint().width() <= 1280,
                 qPrintable(QString("%1 px, needs %2").arg(w.width()).arg(w.minimumSizeHint().width())));
        const QStringList over = overlapping_chart_texts(*w.machineChartWidget()->memoryChart());
        QVERIFY2(over.isEmpty(), qPrintable(over.join("; ")));
        // llama.cpp's components and machines tables: nothing sideways (issue 32).
        int tables = 0;
        const QString sideways = sideways_table(w.serveGgufPanel(), &tables);
        QVERIFY2(sideways.isEmpty() && tables == 2, qPrintable(sideways));
    }

    // Item 8: the download dialog at this screen: its text and the Hub's answer (here an error
    // naming a long URL) whole, the dialog inside the screen.
    void downloadDialogShowsItsTextWhole() {
        ModelDownloadDialog d("meta-llama/Llama-3.1-8B", "Llama 3.1 8B", true);
        hub::DownloadOptions o;
        o.hub.endpoint = "http://127.0.0.1:9";   // nothing listens: the listing fails at once with the URL
        o.hub.cache_dir.clear();
        o.hub.offline = false;
        o.hub_cache = QDir::temp().filePath("wingspan-fits-cache").toStdString();
        d.setOptions(o);
        QSignalSpy listed(&d, &ModelDownloadDialog::listed);
        d.show();
        QVERIFY(QTest::qWaitForWindowExposed(&d));
        QTRY_VERIFY_WITH_TIMEOUT(listed.count() > 0, 20000);   // it may come while the window is being exposed
        QApplication::processEvents();
        QTest::qWait(50);
        QVERIFY2(d.statusText().contains("127.0.0.1") || d.sizeText().contains("127.0.0.1"),
                 qPrintable(d.statusText() + " / " + d.sizeText()));
        const QRect screen = QGuiApplication::primaryScreen()->availableGeometry();
        QVERIFY2(d.width() <= screen.width() && d.height() <= screen.height(),
                 qPrintable(QString("%1×%2").arg(d.width()).arg(d.height())));
        const QString clipped = clipped_label(&d);
        QVERIFY2(clipped.isEmpty(), qPrintable(clipped));
    }

    // --screenshot-dialog's names: each dialog the menus open, by its item's text; every one
    // opened this way fits the screen with its text whole.
    void everyMenuDialogFitsTheScreen() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(shown(w, true));
        QCOMPARE(dialog_trigger_name("Add model from the &Hub…"), QString("add-model-from-the-hub"));
        QCOMPARE(dialog_trigger_name("Train ▶"), QString("train"));
        const QStringList names = dialog_trigger_names(w);
        const QStringList dialogs = {"add-model-from-the-hub", "export-recipe", "run-a-recipe", "export-gguf-llama-cpp-ollama",
                                     "calibrate-from-my-runs", "explain-an-out-of-memory-message", "keyboard-shortcuts",
                                     "units-and-verdicts", "about-wingspan", "add-your-machine", "export-chart",
                                     "export-table"};
        const QRect screen = QGuiApplication::primaryScreen()->availableGeometry();
        for (const QString& name : dialogs) {
            QVERIFY2(names.contains(name), qPrintable(name + " is not among " + names.join(", ")));
            QString seen;
            QTimer::singleShot(400, &w, [&] {
                QWidget* d = open_dialog(w);
                if (!d) return;
                seen = QString("%1×%2").arg(d->frameGeometry().width()).arg(d->frameGeometry().height());
                if (d->frameGeometry().width() > screen.width() || d->frameGeometry().height() > screen.height())
                    seen += " larger than the screen";
                else if (const QString c = clipped_label(d); !c.isEmpty())
                    seen += " " + c;
                else
                    seen += " ok";
                if (auto* dlg = qobject_cast<QDialog*>(d)) dlg->reject();
                else d->close();
            });
            QVERIFY(press_named_trigger(w, name));
            QTRY_VERIFY2_WITH_TIMEOUT(!seen.isEmpty(), qPrintable(name + " opened no dialog"), 5000);
            QVERIFY2(seen.endsWith(" ok"), qPrintable(name + ": " + seen));
        }
    }
};

int main(int argc, char** argv) {
    return ui_test::exec_on_screen(argc, argv, {1280, 720}, [&] {
        WindowFitsTest t;
        return QTest::qExec(&t, argc, argv);
    });
}

#include "test_window_fits.moc"
