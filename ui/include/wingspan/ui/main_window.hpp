#pragma once
#include "wingspan/hub.hpp"
// The planner window, a thin assembly of its parts: the inputs form (left dock), the charts and
// tables (middle tabs), the machines list with verdicts (right dock, folds away on small
// screens). Every number on screen comes from core.
#include <optional>

#include <QMainWindow>
#include <QPointer>

#include "wingspan/ui/chart.hpp"
#include "wingspan/ui/chart_view.hpp"
#include "wingspan/ui/inputs_panel.hpp"
#include "wingspan/ui/machines_panel.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/ui/which_machine_page.hpp"
#include "wingspan/ui/widgets.hpp"

class QAction;
class QActionGroup;
class QComboBox;
class QLabel;
class QDockWidget;
class QPushButton;
class QStackedWidget;
class QTabWidget;
class QTimer;
class QWidget;

namespace wingspan::ui {

class ServeGgufPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        bool restore_settings = true;   // the last plan, unit, theme and geometry from QSettings
        bool save_settings = true;
    };
    // Loads the bundled profiles (next to `executable`, or $WINGSPAN_PROFILES) and the user's
    // own machines. When the profiles cannot be loaded the window shows why, and how to fix it.
    explicit MainWindow(const QString& executable, Options options, QWidget* parent = nullptr);
    explicit MainWindow(const QString& executable = {}, QWidget* parent = nullptr)
        : MainWindow(executable, Options{}, parent) {}
    ~MainWindow() override;

    bool hasLibrary() const { return lib_.has_value(); }
    const ProfileLibrary& library() const { return *lib_; }
    QString loadError() const { return load_error_; }

    const Plan& plan() const { return plan_; }
    void setPlan(const Plan& plan);            // controls follow, everything recomputes
    const Evaluation& evaluation() const { return eval_; }
    const ChartData& machineChart() const;
    ChartData methodsChart() const;
    ByteUnit unit() const { return unit_; }
    void setUnit(ByteUnit unit);
    void setTheme(Theme theme);
    Theme theme() const { return theme_; }

    // Tables, brought up to date first (the window refreshes them lazily, off the slider path).
    const Table& machineTable();
    const Table& methodTable();
    const Table& sizeTable();
    // "Which machine trains what" for every size of the family and every method.
    const MachineGrid& machineGrid();
    // Loads the plan of a grid cell (the model and method it stands for) and shows its chart.
    void loadGridCell(int row, int column);
    // The chart view the scale applies to ("auto", "full" or "log"; remembered).
    void setChartScale(ChartScale scale);
    ChartScale chartScale() const { return scale_; }

    bool openPlan(const QString& path, QString* error = nullptr);
    // A framework's training config (axolotl, LLaMA-Factory, torchtune, TRL/PEFT, mlx-lm) as the
    // plan; `report` gets what was read, assumed and ignored, or the error.
    bool openTrainingConfig(const QString& path, QString* report = nullptr);
    bool savePlan(const QString& path, QString* error = nullptr);
    QString planPath() const { return plan_path_; }

    // Reloads the user's machines from their config folder (after the dialog saved one).
    void reloadUserMachines();
    // The user's config folder (machines/ lives there); tests point it elsewhere.
    void setUserDir(const std::filesystem::path& dir);
    std::filesystem::path userDir() const { return user_dir_; }

    // For a run panel (issue 5): adds a tab beside the charts and returns its index.
    int addRunTab(QWidget* widget, const QString& title);
    QTabWidget* tabs() const { return tabs_; }
    // "Train ▶" (the button shows it): triggered, emits trainRequested. Hidden until a run panel
    // takes it (install_run_panel); the run controller then sets its state and tooltip.
    QAction* trainAction() const { return train_action_; }
    MemoryChartWidget* machineChartWidget() const { return machine_chart_; }
    ServeGgufPanel* serveGgufPanel() const { return serve_gguf_; }

    // Recomputes the plan and redraws the main chart now; the tables follow lazily.
    void recompute();

signals:
    // "Train ▶": a run panel connects here and launches wingspan-train with this plan.
    void trainRequested(const wingspan::Plan& plan);
    void planChanged();

public slots:
    void openPlanDialog();
    void openTrainingConfigDialog();
    void explainOomDialog();
    void savePlanDialog();
    void savePlanAsDialog();
    void exportChartDialog();
    void exportTableDialog();
    void exportCoursePackDialog();
    void addMachineDialog();
    void editMachineDialog();
    void removeUserMachine();
    // "Calibrate from my runs…": fits the framework's fixed costs to finished runs (RunStore).
    void calibrateDialog();
    void requestTrain();
    void importFromHubDialog();
    void importFromFolderDialog();
    // A model imported by core's Hub client: saved as a user profile, listed, selected.
    void addImportedModel(const hub::ImportedModel& model);

protected:
    void closeEvent(QCloseEvent* e) override;
    void dragEnterEvent(QDragEnterEvent* e) override;   // a plan or a training config dropped on the window
    void dropEvent(QDropEvent* e) override;

private:
    void buildUi();
    void buildErrorPage();
    void buildMenus();
    QWidget* buildActionBar();
    void connectParts();
    void syncControls();          // plan_ -> every part
    void readControls();          // every part -> plan_, then recompute
    void onModelChosen(const ModelChoice& choice, bool from_slider);
    void updateSummary();
    void updateSidePanels();
    void markTablesDirty();
    void refreshVisibleTables();
    void refreshTable(int which);
    void saveSettings();
    void keepOnScreen();   // the window within the available area of its screen
    void restoreSettings();
    void setModel(const std::string& id);
    void importConfigDialog();
    void showStatus(const QString& text, int ms = 6000);
    QString currentChartName() const;

    std::optional<ProfileLibrary> lib_;
    QString load_error_;
    QString executable_;
    Options options_;
    std::filesystem::path user_dir_;
    Plan plan_;
    Evaluation eval_;
    ChartData machines_data_;
    ByteUnit unit_ = ByteUnit::GB;
    ChartScale scale_ = ChartScale::Auto;
    Theme theme_ = Theme::System;
    QString plan_path_;
    bool syncing_ = false;

    // Lazily refreshed tables: 0 methods, 1 sizes, 2 machines.
    bool dirty_[3] = {true, true, true};
    TableModel* table_models_[2] = {};
    QTimer* table_timer_ = nullptr;
    QTimer* settings_timer_ = nullptr;
    QTimer* side_timer_ = nullptr;   // verdict list and summary while a slider moves
    bool from_slider_ = false;

    // The parts the window is assembled from.
    InputsPanel* inputs_ = nullptr;
    MachinesPanel* machines_ = nullptr;
    WhichMachinePage* which_ = nullptr;
    QDockWidget* inputs_dock_ = nullptr;
    QDockWidget* machines_dock_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    MemoryChartWidget* machine_chart_ = nullptr;
    ServeGgufPanel* serve_gguf_ = nullptr;   // serve mode: llama.cpp's view under the chart
    MemoryChartWidget* methods_chart_ = nullptr;
    MemoryChartWidget* sizes_chart_ = nullptr;
    QAction* train_action_ = nullptr;
    QPushButton* train_ = nullptr;   // shows train_action_
    QComboBox* scale_box_ = nullptr;
    QLabel* focus_line_ = nullptr;   // what the chart's keyboard focus is on
    QActionGroup* unit_group_ = nullptr;
    QActionGroup* theme_group_ = nullptr;
};

}  // namespace wingspan::ui
