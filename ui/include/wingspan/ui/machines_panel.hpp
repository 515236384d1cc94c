#pragma once
// The machines list: tick the machines to compare, see each one's verdict, add or edit your
// own. The window puts it in a dock that folds away on small screens.
#include <map>
#include <string>
#include <vector>

#include <QWidget>

#include "wingspan/plan.hpp"

class QComboBox;
class QLabel;
class QTreeWidgetItem;
class QPushButton;
class QTreeWidget;

namespace wingspan::ui {

class MachinesPanel : public QWidget {
    Q_OBJECT
public:
    explicit MachinesPanel(QWidget* parent = nullptr);

    // Lists every machine of the library (GPUs, unified memory, CPU, then yours).
    void populate(const ProfileLibrary& lib, ByteUnit unit);
    // Ticks the plan's machines (no signal).
    void showPlan(const Plan& plan);
    // The ticked machines, keeping the order of `previous` and appending new ones in list order.
    std::vector<std::string> checkedMachines(const std::vector<std::string>& previous) const;
    // Frameworks chosen per machine (only those that differ from the machine's usual one).
    std::map<std::string, std::string> machineFrameworks() const { return frameworks_; }
    void setAllChecked(bool on);
    // The verdict column: "✓ 4.0 GB free", "✗ short 2.1 GB", coloured.
    void showVerdicts(const Evaluation& eval, ByteUnit unit);
    void setSummary(const QString& text);
    // The id of the selected row when it is one of the user's own machines, else empty.
    QString currentUserMachineId() const;
    QString currentMachineText() const;
    QTreeWidget* list() const { return list_; }
    // How many times a machine's name was wrapped to measure its row's height. The names are
    // measured when listed or when the column's width, font or style changes, never for a
    // verdict: tests check that relabelling the verdicts wraps none.
    int nameWraps() const;

signals:
    void selectionEdited();   // a machine was ticked or unticked, or its framework changed
    void lessonMachinesRequested();
    void addRequested();
    void editRequested();
    void removeRequested();

private:
    QTreeWidget* list_ = nullptr;
    QPushButton* edit_ = nullptr;
    QPushButton* remove_ = nullptr;
    QLabel* summary_ = nullptr;
    QComboBox* framework_ = nullptr;   // the selected machine's framework
    QLabel* framework_label_ = nullptr;
    const ProfileLibrary* lib_ = nullptr;
    std::map<std::string, std::string> frameworks_;
    void showFrameworkOf(QTreeWidgetItem* item);
    bool syncing_ = false;
};

}  // namespace wingspan::ui
