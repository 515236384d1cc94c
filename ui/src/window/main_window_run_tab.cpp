// The window installs its run tab: the run panel as a tab, Train ▶ and the plan wired to it. Here,
// beside the window, so that the panel never includes the window that includes it.
#include <QTabWidget>

#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/run_panel.hpp"

namespace wingspan::ui {

RunPanel* install_run_panel(MainWindow& window, const QString& executable) {
    auto* panel = new RunPanel(executable, window.hasLibrary() ? &window.library() : nullptr);
    const int index = window.addRunTab(panel, "R&un");
    if (index < 0) {
        delete panel;
        return nullptr;
    }
    panel->setUnit(window.unit());
    if (window.hasLibrary()) panel->setPlan(window.plan());
    // The settings follow the planner while the run tab is out of sight, applied when it shows.
    panel->setPlanSource([&window] { return window.plan(); }, [&window] { return window.unit(); });
    QObject::connect(&window, &MainWindow::planChanged, panel, &RunPanel::planSourceChanged);
    QObject::connect(&window, &MainWindow::trainRequested, panel, [&window, panel, index](const Plan& plan) {
        window.tabs()->setCurrentIndex(index);
        panel->setUnit(window.unit());
        panel->trainPlan(plan);
    });
    panel->setTrainAction(window.trainAction());
    panel->guardClose(&window);
    return panel;
}

}  // namespace wingspan::ui
