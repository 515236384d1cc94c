#pragma once
// Add or edit one of the user's own machines. Validation is core's: the form is turned into
// a machine profile JSON and given to parse_machine_profile; its ProfileError is shown
// beside the form and OK stays disabled until the machine is valid. Saved as
// <user_dir>/machines/<id>.json.
#include <optional>

#include <QDialog>

#include "wingspan/profiles.hpp"

class QLineEdit;
class QComboBox;
class QDoubleSpinBox;
class QCheckBox;
class QLabel;
class QDialogButtonBox;

namespace wingspan::ui {

class MachineDialog : public QDialog {
    Q_OBJECT
public:
    // `existing`: edit that machine (its id stays); otherwise a new one, prefilled from
    // `templ` when given. `taken_ids`: ids a new machine may not reuse.
    MachineDialog(const ProfileLibrary& lib, const MachineProfile* existing, QWidget* parent = nullptr);

    // The machine the form describes, or nullopt with the reason in error().
    std::optional<MachineProfile> machine() const;
    QString error() const { return error_; }
    // Writes the machine to <dir>/machines/<id>.json; false with error() on failure.
    bool save(const std::filesystem::path& user_dir);

    // The form fields, for tests and keyboard users.
    QLineEdit* idEdit() const { return id_; }
    QLineEdit* nameEdit() const { return name_; }
    QLineEdit* memoryEdit() const { return memory_; }
    QLineEdit* usableEdit() const { return usable_; }
    QLineEdit* tflopsEdit() const { return tflops_; }
    QLineEdit* priceEdit() const { return price_; }
    QComboBox* kindCombo() const { return kind_; }

private:
    void revalidate();
    nlohmann::json form_json(QString* error) const;

    const ProfileLibrary& lib_;
    bool editing_ = false;
    QLineEdit *id_, *name_, *memory_, *usable_, *host_, *bandwidth_, *tflops_, *tflops32_, *power_, *price_;
    QComboBox *kind_, *framework_;
    QCheckBox* bf16_;
    QLabel* status_;
    QDialogButtonBox* buttons_;
    QString error_;
};

}  // namespace wingspan::ui
