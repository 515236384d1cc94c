#pragma once
// The "Which machine trains what" tab: the lesson's answer as a live grid (model sizes ×
// methods, the winning machine in each cell; click one to load that plan), the data set a run
// trains on (time and cost only) and the current plan's per-machine table below.
#include <QWidget>

#include "wingspan/ui/machine_grid.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/ui/widgets.hpp"

class QComboBox;
class QLabel;
class QSpinBox;
class QTableView;
class QTableWidget;

namespace wingspan::ui {

class WhichMachinePage : public QWidget {
    Q_OBJECT
public:
    explicit WhichMachinePage(QWidget* parent = nullptr);
    void showDataset(const Dataset& d);   // no signal
    void readDataset(Dataset& d) const;
    void setMachineTable(Table t, double dataset_tokens);
    const Table& machineTable() const { return model_->table(); }
    QTableView* machineTableView() const { return view_; }
    // The machines the grid compares: two pickers over the library's machines, the course's
    // RTX 4090 and Mac Studio until the user picks others (a machine that is gone falls back).
    void setMachineChoices(const ProfileLibrary& lib);
    std::vector<std::string> compared() const;
    void setCompared(const std::vector<std::string>& ids);
    void setGrid(MachineGrid grid, ByteUnit unit);
    const MachineGrid& grid() const { return grid_; }
    QTableWidget* gridView() const { return grid_view_; }

signals:
    void datasetEdited();
    void comparedChanged();
    // A grid cell was clicked (or Enter pressed on it): load that plan.
    void cellChosen(int row, int column);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    // Rows as tall as their text; taller, sharing the view, where the view has room (1920×1080).
    void fitRows();

    QSpinBox* examples_ = nullptr;
    QSpinBox* tokens_ = nullptr;
    QSpinBox* epochs_ = nullptr;
    QLabel* total_ = nullptr;
    TableModel* model_ = nullptr;
    QTableView* view_ = nullptr;
    QTableWidget* grid_view_ = nullptr;
    QComboBox* compare_[2] = {nullptr, nullptr};
    QLabel* grid_caption_ = nullptr;
    MachineGrid grid_;
    bool syncing_ = false;
    bool fitting_rows_ = false;
};

// A read-only table view over a TableModel, the way every planner table looks.
QTableView* make_table_view(TableModel* model, const QString& object_name);

}  // namespace wingspan::ui
