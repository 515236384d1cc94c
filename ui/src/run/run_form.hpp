#pragma once
// The run panel's form (issue 27): what trains (model, method, setup, data, output, device,
// ceiling, memory cap, ranks), filled from the planner until the user edits a field, read back
// as RunOptions (whose trainer_arguments fill core's TrainerInvocation). It also asks the
// trainer which devices it has. Private to ui/src: the panel is its only user.
#include <optional>

#include <QPointer>
#include <QString>
#include <QStringList>

#include "run/pair_grid.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/ui/run_device.hpp"
#include "wingspan/ui/run_model.hpp"
#include "wingspan/ui/run_session.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProcess;
class QPushButton;
class QSpinBox;

namespace wingspan::ui {

class RunForm : public PairGrid {
    Q_OBJECT
public:
    // `sample_data`: the bundled data file a run without --data trains on (for the tooltip).
    RunForm(const ProfileLibrary* lib, const QString& sample_data, QWidget* parent = nullptr);
    ~RunForm() override;

    // The plan the settings follow (while followsPlanner()); the model list is the plan's.
    void setPlan(const Plan& plan);
    bool hasPlan() const { return has_plan_; }
    const Plan& plan() const { return plan_; }
    // Why this plan cannot be trained (Serve plans), empty when it can or there is no plan.
    QString trainBlockedReason() const;
    PlanRunComparison planComparison() const;
    bool followsPlanner() const { return follow_planner_; }
    void setFollowsPlanner(bool on) { follow_planner_ = on; }
    void followPlanner();   // fills the settings from the plan again

    RunOptions options() const;
    void setOptions(const RunOptions& options);
    // "built-in · LoRA r16 · seq 128 × 4 · 60 steps · fp32 · checkpointing": the folded form.
    QString summaryText() const;
    // True while code fills the fields (their signals are not the user's edits).
    bool filling() const { return syncing_; }

    // The plan's model and where its weights are (empty folder: not on this machine).
    const PlannedModel& plannedModel() const { return planned_; }
    bool offersModelSource(RunOptions::ModelSource source) const;
    // For this run only: the model list shows `source` (the download offer's answer).
    void chooseModelSource(RunOptions::ModelSource source);
    // The plan's model was just downloaded into `snapshot` (or the cache): train it.
    void modelDownloaded(const QString& snapshot);

    // Devices from `wingspan-train devices` (the CPU alone when the trainer cannot list them).
    const DeviceChoice& devices() const { return devices_; }
    void refreshDevices(const TrainerLocation& trainer);   // asks again (asynchronously)
    bool devicesPending() const { return bool(devices_process_); }

    void setUnit(ByteUnit unit) { unit_ = unit; }   // the machine list's sizes, at the next plan
    // A live run: every field is read-only until it ends.
    void setRunning(bool running);

signals:
    void changed();          // what trains changed (an edit or a fill): the run header follows
    void devicesChanged();

private:
    void addModelRows();
    void addSetupRows();
    void addPathRow(const QString& sample_data);
    void addMachineRow();
    void addRanksRow();
    void connectEdits();
    void populateModelSources();
    void populateDevices();
    void updateEnabled();
    void onEdited();   // a field changed by the user
    void notifyChanged();
    void chooseModelFolder();
    void chooseDataFile();
    void chooseOutDir();

    const ProfileLibrary* lib_ = nullptr;
    Plan plan_;
    bool has_plan_ = false;
    ByteUnit unit_ = ByteUnit::GB;
    bool running_ = false;
    bool follow_planner_ = true;
    bool syncing_ = false;                                  // the form is being filled by code, not the user
    QString last_model_dir_;
    std::optional<RunOptions::ModelSource> model_choice_;   // what the user chose to train
    PlannedModel planned_;
    DeviceChoice devices_;
    QString device_choice_;                                 // the device id the user chose
    QPointer<QProcess> devices_process_;
    QStringList extra_args_;                                // kept from setOptions (no field)
    int threads_ = 0;

    QComboBox* model_ = nullptr;
    QPushButton* model_browse_ = nullptr;
    QLabel* model_note_ = nullptr;
    QComboBox* method_ = nullptr;
    QSpinBox* rank_ = nullptr;
    QSpinBox* seq_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QSpinBox* accum_ = nullptr;
    QSpinBox* steps_ = nullptr;
    QComboBox* precision_ = nullptr;
    QCheckBox* ckpt_ = nullptr;
    QLineEdit* data_ = nullptr;
    QLineEdit* out_ = nullptr;
    QComboBox* machine_ = nullptr;
    QComboBox* cap_mode_ = nullptr;
    QDoubleSpinBox* cap_gb_ = nullptr;
    QComboBox* device_ = nullptr;
    QSpinBox* processes_ = nullptr;
    QComboBox* sharding_ = nullptr;
};

}  // namespace wingspan::ui
