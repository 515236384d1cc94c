#pragma once
// The "Which machine trains what" tab: the data set a run trains on (time and cost only) and
// the current plan's per-machine table (fit, margin, largest batch and sequence, speed, cost).
#include <QWidget>

#include "wingspan/ui/plan.hpp"
#include "wingspan/ui/widgets.hpp"

class QLabel;
class QSpinBox;
class QTableView;

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

signals:
    void datasetEdited();

private:
    QSpinBox* examples_ = nullptr;
    QSpinBox* tokens_ = nullptr;
    QSpinBox* epochs_ = nullptr;
    QLabel* total_ = nullptr;
    TableModel* model_ = nullptr;
    QTableView* view_ = nullptr;
    bool syncing_ = false;
};

// A read-only table view over a TableModel, the way every planner table looks.
QTableView* make_table_view(TableModel* model, const QString& object_name);

}  // namespace wingspan::ui
