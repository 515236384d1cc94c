// The planner window in use: save and open, the last plan remembered, the train hook, hover and
// keyboard, a 1280 × 720 screen, the status line, scale and theme options, a missing profiles
// folder, and the user machine dialog's validation and saving. Runs offscreen.
#include "main_window_fixture.hpp"

using namespace wingspan;
using namespace wingspan::ui;
using namespace wingspan::ui::window_test;

class MainWindowUseTest : public QObject, public MainWindowFixture {
    Q_OBJECT

private slots:
    void initTestCase() { startCase(); }
    void init() { openWindow(); }
    void cleanup() { w.reset(); }

    void saveOpenRoundTrip() {
        child<QSpinBox>(w.get(), "seqSpin")->setValue(2048);
        click(child<QRadioButton>(w.get(), "methodQlora"));
        child<QSpinBox>(w.get(), "examples")->setValue(5000);
        auto* list = child<QTreeWidget>(w.get(), "machineList");
        list->findItems("L4", Qt::MatchExactly, 0).front()->setCheckState(0, Qt::Checked);
        QTemporaryDir dir;
        const QString path = dir.filePath("course.wingspan.json");
        QString error;
        QVERIFY2(w->savePlan(path, &error), qPrintable(error));
        const nlohmann::json saved = w->plan().to_json();
        {
            std::ifstream in(path.toStdString());
            const auto j = nlohmann::json::parse(in);
            QCOMPARE(j["format"].get<std::string>(), std::string("wingspan-plan"));
            QCOMPARE(j["model"]["id"].get<std::string>(), std::string("llama-3.1-8b"));
            QCOMPARE(j["machines"].size(), size_t(7));
        }
        MainWindow other(QString(), quiet());
        QVERIFY(other.openPlan(path, &error));
        QCOMPARE(other.plan().to_json().dump(), saved.dump());
        QCOMPARE(child<QSpinBox>(&other, "seqSpin")->value(), 2048);
        QVERIFY(child<QRadioButton>(&other, "methodQlora")->isChecked());
        QCOMPARE(child<QSpinBox>(&other, "examples")->value(), 5000);
        QCOMPARE(other.machineChart().bars.size(), w->machineChart().bars.size());
        // A broken file is refused with the reason, and the window keeps its plan.
        const QString bad = dir.filePath("bad.wingspan.json");
        std::ofstream(bad.toStdString()) << R"({"format":"wingspan-plan","model":{"id":"no-such-model"}})";
        QVERIFY(!other.openPlan(bad, &error));
        QVERIFY(error.contains("no-such-model"));
        QCOMPARE(other.plan().to_json().dump(), saved.dump());
        std::ofstream(bad.toStdString()) << "{ not json";
        QVERIFY(!other.openPlan(bad, &error));
        QVERIFY(error.contains("not valid JSON"));
    }

    void remembersTheLastPlan() {
        QSettings().clear();
        {
            MainWindow first(QString(), MainWindow::Options{true, true});
            child<QSpinBox>(&first, "seqSpin")->setValue(4096);
            first.setUnit(ByteUnit::GiB);
            first.close();
        }
        MainWindow second(QString(), MainWindow::Options{true, false});
        QCOMPARE(second.plan().setup.seq_len, std::int64_t(4096));
        QCOMPARE(second.unit(), ByteUnit::GiB);
        QSettings().clear();
    }

    void trainHook() {
        auto* train = child<QPushButton>(w.get(), "trainButton");
        QVERIFY(!train->isVisible());   // nothing to run it yet
        QSignalSpy spy(w.get(), &MainWindow::trainRequested);
        Plan received;
        connect(w.get(), &MainWindow::trainRequested, this, [&](const Plan& p) { received = p; });
        QVERIFY(!train->isVisible());   // a connection alone does not show it: whoever trains takes the action
        w->trainAction()->setVisible(true);
        QVERIFY(train->isVisible());
        w->trainAction()->setEnabled(false);
        w->trainAction()->setToolTip("not now");
        QVERIFY(!train->isEnabled());
        QCOMPARE(train->toolTip(), QString("not now"));
        w->trainAction()->setEnabled(true);
        QTest::mouseClick(train, Qt::LeftButton);
        QCOMPARE(spy.count(), 1);
        QCOMPARE(received.to_json().dump(), w->plan().to_json().dump());
        auto* tab = new QLabel("run panel");
        QCOMPARE(w->addRunTab(tab, "Run"), 4);
        QCOMPARE(tab->window(), w.get());
        delete w->tabs()->widget(4);
    }

    void hoverShowsBytesAndFormula() {
        auto* chart = w->machineChartWidget();
        chart->repaint();
        const QRectF bar = chart->barRect(0);
        const QPoint inside = QPoint(int(bar.center().x()), int(bar.bottom() - 5));   // frozen weights
        const auto hit = chart->hit(inside);
        QVERIFY(hit.has_value());
        QCOMPARE(hit->bar, 0);
        QVERIFY(hit->segment >= 0);
        const QString tip = hit_tooltip(chart->data(), *hit, ByteUnit::GB);
        QVERIFY(tip.contains("Frozen weights"));
        QVERIFY(tip.contains("16,060,522,496 bytes"));
        QVERIFY(tip.contains("8,030,261,248"));   // the formula's inputs
        QHelpEvent help(QEvent::ToolTip, inside, chart->mapToGlobal(inside));
        QApplication::sendEvent(chart, &help);
        QTRY_VERIFY(QToolTip::isVisible());
        QVERIFY(QToolTip::text().contains("Frozen weights"));
        QToolTip::hideText();
    }

    void keyboardNavigation() {
        auto* chart = w->machineChartWidget();
        chart->setFocus(Qt::TabFocusReason);
        QTRY_VERIFY(chart->hasFocus());
        QCOMPARE(chart->focusedBar(), 0);
        QTest::keyClick(chart, Qt::Key_Right);
        QTest::keyClick(chart, Qt::Key_Right);
        QCOMPARE(chart->focusedBar(), 2);
        QTest::keyClick(chart, Qt::Key_End);
        QCOMPARE(chart->focusedBar(), 5);
        // Tab reaches the inputs; Ctrl+3 opens the Sizes tab.
        auto* model = child<QComboBox>(w.get(), "modelSearch");
        model->setFocus(Qt::TabFocusReason);
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_Tab);
        QVERIFY(QApplication::focusWidget() != nullptr);
        QTest::keyClick(w.get(), Qt::Key_3, Qt::ControlModifier);
        QCOMPARE(w->tabs()->currentIndex(), 2);
        // Space toggles a machine in the list.
        auto* list = child<QTreeWidget>(w.get(), "machineList");
        list->setFocus();
        list->setCurrentItem(list->findItems("H200", Qt::MatchExactly, 0).front());
        QTest::keyClick(list, Qt::Key_Space);
        QCOMPARE(w->plan().machines.back(), std::string("h200"));
    }

    void fitsA1280x720Screen() {
        // A laptop screen: the window shrinks to it and Train ▶, Export and the verdicts stay inside.
        // With the run panel in its tab, as the program has it.
        install_run_panel(*w, QString());
        w->resize(1280, 720);
        QTRY_COMPARE(w->size(), QSize(1280, 720));
        QApplication::processEvents();
        const QRect window(QPoint(0, 0), w->size());
        auto inside = [&](QWidget* widget) {
            if (!widget || !widget->isVisible()) return false;
            const QRect r(widget->mapTo(w.get(), QPoint(0, 0)), widget->size());
            return window.contains(r);
        };
        QVERIFY(inside(child<QPushButton>(w.get(), "trainButton")));
        QVERIFY(inside(child<QPushButton>(w.get(), "exportChartButton")));
        QVERIFY(inside(child<QPushButton>(w.get(), "exportTableButton")));
        auto* chart = w->machineChartWidget();
        QVERIFY(inside(chart));
        // Every bar and its verdict are in view, on the chart and in the machines list.
        for (int i = 0; i < int(w->machineChart().bars.size()); ++i) {
            const QRectF bar = chart->barRect(i);
            QVERIFY(bar.isValid());
            QVERIFY(QRectF(chart->rect()).contains(bar));
        }
        auto* list = child<QTreeWidget>(w.get(), "machineList");
        QVERIFY(inside(list));
        QVERIFY(list->header()->sectionViewportPosition(1) + list->header()->sectionSize(1) <= list->viewport()->width() + 2);
        // The side panels fold away and come back.
        auto* dock = w->findChild<QDockWidget*>("machinesDock");
        QVERIFY(dock);
        dock->close();
        QTRY_VERIFY(!list->isVisible());
        dock->show();
        QTRY_VERIFY(list->isVisible());
    }

    void keyboardStatusLine() {
        auto* chart = w->machineChartWidget();
        chart->setFocus(Qt::TabFocusReason);
        QTRY_VERIFY(chart->hasFocus());
        QTest::keyClick(chart, Qt::Key_Up);   // the bottom segment of the first bar: frozen weights
        QCOMPARE(chart->focusedSegment(), 0);
        auto* line = child<QLabel>(w.get(), "chartFocusLine");
        QVERIFY(line->text().contains("Frozen weights"));
        QVERIFY(line->text().contains("16,060,522,496 bytes"));
        QTest::keyClick(chart, Qt::Key_Down);
        QCOMPARE(chart->focusedSegment(), -1);
        QVERIFY(line->text().contains("RTX 4090"));
        QVERIFY(!chart->accessibleName().isEmpty());
    }

    void scaleOption() {
        // 70B full at 32k: the bars pass every ceiling. Log scale keeps them whole on the axis.
        Plan p = Plan::lesson_default();
        p.model = ModelChoice{};
        p.model.model_id = "llama-3.1-70b";
        p.setup.method = Method::Full;
        p.setup.seq_len = 32768;
        p.machines = {"rtx-4090", "t4", "a100-80gb"};
        w->setPlan(p);
        w->setChartScale(ChartScale::Log);
        const ChartAxis log_axis = chart_axis(w->machineChart());
        QVERIFY(log_axis.log);
        for (const auto& b : w->machineChart().bars) QVERIFY(double(b.total) <= log_axis.max_bytes);
        // One unit for the whole chart: terabytes on every label when the axis reaches them.
        w->setChartScale(ChartScale::Full);
        const ChartAxis full = chart_axis(w->machineChart());
        QCOMPARE(full.unit_suffix, QString(" TB"));
        QVERIFY(chart_verdict_text(w->machineChart().bars[0], full).startsWith("✗ short"));
        QVERIFY(chart_verdict_text(w->machineChart().bars[0], full).endsWith(" TB"));
        // With a bar that fits, auto cuts the tall ones and lists what it hides.
        p.machines.push_back("h200");
        p.model.model_id = "llama-3.2-1b";
        p.setup.seq_len = 1024;
        w->setPlan(p);
        w->setChartScale(ChartScale::Auto);
        ChartData d = w->machineChart();
        d.bars[0].total *= 40;   // one bar far past the others
        d.bars[0].segments[0].bytes = d.bars[0].total;
        const ChartAxis cut = chart_axis(d);
        QVERIFY(cut.clipped);
        const QStringList hidden = hidden_segments(d, cut);
        QCOMPARE(hidden.size(), 1);
        QVERIFY(hidden.front().contains("above the axis"));
    }

    void missingProfilesPage() {
        const QByteArray saved = qgetenv("WINGSPAN_PROFILES");
        qputenv("WINGSPAN_PROFILES", "/nonexistent/wingspan-profiles");
        MainWindow broken(QString(), quiet());
        qputenv("WINGSPAN_PROFILES", saved);
        QVERIFY(!broken.hasLibrary());
        QVERIFY(broken.loadError().contains("/nonexistent/wingspan-profiles"));
        auto* text = broken.findChild<QLabel*>("loadError");
        QVERIFY(text);
        QVERIFY(text->text().contains("WINGSPAN_PROFILES"));
        broken.show();   // draws without a library
        QVERIFY(QTest::qWaitForWindowExposed(&broken));
    }

    void darkPalette() {
        w->setTheme(Theme::Dark);
        QVERIFY(QApplication::palette().color(QPalette::Base).lightness() < 100);
        QTRY_VERIFY(w->machineChartWidget()->palette().color(QPalette::Base).lightness() < 100);
        const QImage img = w->machineChartWidget()->grab().toImage();
        QVERIFY(img.pixelColor(5, 5).lightness() < 100);
        w->setTheme(Theme::Light);
        QVERIFY(QApplication::palette().color(QPalette::Base).lightness() > 200);
    }
};

class MachineDialogTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir;

private slots:
    void validation() {
        MainWindow w(QString(), quiet());
        MachineDialog d(w.library(), nullptr);
        auto* save = d.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Save);
        QVERIFY(!save->isEnabled());
        auto* status = d.findChild<QLabel*>("machineStatus");

        d.idEdit()->setText("my-card");
        QVERIFY(!save->isEnabled());
        QVERIFY(status->text().contains("Memory is required"));
        d.memoryEdit()->setText("lots");
        QVERIFY(status->text().contains("Memory"));
        d.memoryEdit()->setText("10 GB");
        // No compute at all: core's validation names the field.
        QVERIFY(!save->isEnabled());
        QVERIFY(status->text().contains("TFLOPS"));
        d.tflopsEdit()->setText("29.8");
        d.usableEdit()->setText("12 GB");   // more than it has
        QVERIFY(!save->isEnabled());
        QVERIFY(status->text().contains("Usable: must be positive and at most memory"));
        d.usableEdit()->setText("9.5 GB");
        d.priceEdit()->setText("cheap");
        QVERIFY(!save->isEnabled());
        QVERIFY(status->text().contains("Price"));
        d.priceEdit()->clear();
        QVERIFY(save->isEnabled());
        QVERIFY(status->text().contains("ready to save"));
        // Bundled ids are not yours to replace.
        d.idEdit()->setText("rtx-4090");
        QVERIFY(!save->isEnabled());
        QVERIFY(status->text().contains("bundled"));
    }

    void saveLoadAndChart() {
        MainWindow w(QString(), quiet());
        const std::filesystem::path user = (dir.path() + "/cfg").toStdString();
        w.setUserDir(user);
        MachineDialog d(w.library(), nullptr);
        d.idEdit()->setText("my-3080");
        d.nameEdit()->setText("My RTX 3080 10 GB");
        d.memoryEdit()->setText("10 GiB");
        d.usableEdit()->setText("9.5 GiB");
        d.tflopsEdit()->setText("59.5");
        d.priceEdit()->setText("0.2");
        const auto m = d.machine();
        QVERIFY2(m.has_value(), qPrintable(d.error()));
        QCOMPARE(m->memory_bytes, std::int64_t(10) << 30);
        QVERIFY(d.save(user));
        const auto file = user / "machines" / "my-3080.json";
        QVERIFY(std::filesystem::exists(file));
        std::ifstream in(file);
        const MachineProfile back = parse_machine_profile(nlohmann::json::parse(in), file.string());
        QCOMPARE(back.usable_bytes, std::int64_t(9.5 * (1 << 30)));
        QVERIFY(back.user_defined);

        w.reloadUserMachines();
        auto* list = w.findChild<QTreeWidget*>("machineList");
        const auto items = list->findItems("My RTX 3080 10 GB  (yours)", Qt::MatchExactly, 0);
        QCOMPARE(items.size(), 1);
        items.front()->setCheckState(0, Qt::Checked);
        const ChartBar* bar = w.machineChart().bar("my-3080");
        QVERIFY(bar);
        QCOMPARE(*bar->ceiling, std::int64_t(9.5 * (1 << 30)));
        QCOMPARE(*bar->fit, Fit::No);   // an 8B LoRA needs ~21 GB

        // Editing keeps the id and re-validates.
        MachineDialog edit(w.library(), &w.library().machine("my-3080"));
        QVERIFY(edit.idEdit()->isReadOnly());
        QCOMPARE(edit.memoryEdit()->text(), QString("10 GiB"));
        QVERIFY(edit.machine().has_value());
    }
};

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    int status = 0;
    {
        MainWindowUseTest t;
        status |= QTest::qExec(&t, argc, argv);
    }
    {
        MachineDialogTest t;
        status |= QTest::qExec(&t, argc, argv);
    }
    return status;
}

#include "test_main_window_use.moc"
