#pragma once
// The planner window's tests share this: the window each test starts from (the lesson's plan at
// 1500 × 950, a user folder of its own), the setup it should hold kept apart from it, and what
// core says each machine's bar must hold (test_main_window.cpp, test_main_window_use.cpp).
#include <QtTest>

#include <QApplication>
#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolTip>
#include <QDockWidget>
#include <QHeaderView>
#include <QTableWidget>
#include <QTreeWidget>

#include <fstream>

#include "wingspan/errors.hpp"
#include "wingspan/ui/machine_dialog.hpp"
#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/run_panel.hpp"

namespace wingspan::ui::window_test {

inline MainWindow::Options quiet() { return {false, false}; }

// Radio buttons and check boxes take clicks on their indicator and label, not their whole width.
inline void click(QAbstractButton* b) { QTest::mouseClick(b, Qt::LeftButton, {}, QPoint(8, b->height() / 2)); }

template <typename T>
T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(name);
    if (!c) qFatal("no child %s", name);
    return c;
}

// What core says a machine's bar must hold, computed here without the window: the machine's
// framework's defaults for what the user left open (as `wingspan plan` takes them), then the
// machine's adaptation.
inline std::map<Component, std::int64_t> core_components(const ProfileLibrary& lib, const Architecture& arch,
                                                         const TrainingSetup& setup, const ChosenFields& chosen,
                                                         const std::string& machine_id) {
    const MachineProfile& m = lib.machine(machine_id);
    const TrainingSetup adapted = adapt_setup(apply_framework_defaults(setup, lib.framework_for(m), chosen), m);
    std::map<Component, std::int64_t> out;
    for (const auto& [c, b] : estimate_memory(arch, adapted, lib.framework_for(m)).components)
        if (b > 0) out[c] = b;
    return out;
}

inline std::map<Component, std::int64_t> bar_components(const ChartBar& bar) {
    std::map<Component, std::int64_t> out;
    for (const auto& s : bar.segments)
        if (s.component) out[*s.component] += s.bytes;
    return out;
}

inline const ChartBar& bar_of(const MainWindow& w, const char* id) {
    const ChartBar* b = w.machineChart().bar(id);
    if (!b) qFatal("no bar %s", id);
    return *b;
}

class MainWindowFixture {
protected:
    std::unique_ptr<MainWindow> w;
    QTemporaryDir home;

    // The setup the window should now hold, kept independently of it.
    TrainingSetup expected;

    void checkChartIsCore(const Architecture& arch) {
        QCOMPARE(w->plan().setup.to_json().dump(), expected.to_json().dump());
        QVERIFY(w->evaluation().ok());
        for (const char* id : {"rtx-4090", "t4", "mac-studio-m3-ultra-96gb", "cpu-laptop-8gb"}) {
            const auto want = core_components(w->library(), arch, expected, chosen_fields(w->plan()), id);
            auto got = bar_components(bar_of(*w, id));
            if (want != got) {
                for (const auto& [c, b] : want) qWarning() << id << component_name(c).data() << b << got[c];
                QFAIL("the chart's segments differ from estimate_memory");
            }
        }
    }
    const Architecture& llama8b() { return w->library().model("llama-3.1-8b").arch; }
    // The setup a machine runs, as `wingspan plan` takes it: its framework's defaults for what
    // the plan leaves open (mlx-lm on the Mac: the last 16 layers, no checkpointing).
    TrainingSetup on_machine(const TrainingSetup& s, const MachineProfile& m) {
        return apply_framework_defaults(s, w->library().framework_for(m), chosen_fields(w->plan()));
    }

    void startCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName("WingspanTests");
        QCoreApplication::setApplicationName("WingspanUiTests");
        QVERIFY(home.isValid());
    }

    void openWindow() {
        w = std::make_unique<MainWindow>(QString(), quiet());
        QVERIFY2(w->hasLibrary(), qPrintable(w->loadError()));
        w->setUserDir((home.path() + "/config").toStdString());
        w->setPlan(Plan::lesson_default());
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        expected = Plan::lesson_default().setup;
    }
};

}  // namespace wingspan::ui::window_test
