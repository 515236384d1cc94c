#pragma once
// "Calibrate from my runs…": lists the finished runs of the run history (RunStore), fits the
// chosen framework's fixed costs (process baseline and allocator slack) to the checked runs with
// core's calibrate(), shows the error of the predicted process total before and after, and saves
// the result as a user framework profile (<user_dir>/frameworks/<id>-calibrated.json), the same
// file `wingspan calibrate` writes.
#include <filesystem>
#include <optional>
#include <vector>

#include <QDialog>

#include "wingspan/profiles.hpp"
#include "wingspan/run_record.hpp"

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QPushButton;
class QTreeWidget;

namespace wingspan::ui {

class CalibrationDialog : public QDialog {
    Q_OBJECT
public:
    CalibrationDialog(const ProfileLibrary& lib, std::filesystem::path runs_root, std::filesystem::path user_dir,
                      QWidget* parent = nullptr);

    // The fit over the checked runs, or nullopt (no usable run checked; the reason in error()).
    const std::optional<Calibration>& calibration() const { return calibration_; }
    QString error() const { return error_; }
    // Writes the calibrated profile; false with error() on failure.
    bool save();
    std::filesystem::path savedPath() const { return saved_path_; }

    // For tests and keyboard users: one row per run (checkable when it can be used).
    QTreeWidget* runList() const { return list_; }
    QComboBox* frameworkCombo() const { return framework_; }
    QLabel* resultLabel() const { return result_; }
    QPushButton* saveButton() const { return save_; }
    int usableRuns() const;

signals:
    // A profile was written (the window reloads the user's profiles).
    void saved(const QString& path);

private:
    void loadRuns();
    void refit();

    const ProfileLibrary& lib_;
    std::filesystem::path runs_root_, user_dir_;
    struct Entry {
        std::filesystem::path dir;
        RunRecord record;
        bool usable = false;
    };
    std::vector<Entry> runs_;
    QTreeWidget* list_;
    QComboBox* framework_;
    QLabel *result_, *where_;
    QPushButton* save_;
    QDialogButtonBox* buttons_;
    std::optional<Calibration> calibration_;
    QString error_;
    std::filesystem::path saved_path_;
};

}  // namespace wingspan::ui
