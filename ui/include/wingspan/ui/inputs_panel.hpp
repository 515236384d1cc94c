#pragma once
// The planner's inputs form: the model (search, family size slider, imports), the method,
// LoRA rank and targets, sequence and batch, and the advanced settings. It shows a Plan and
// writes the user's edits back into one; the window recomputes.
#include <string>

#include <QWidget>

#include "wingspan/plan.hpp"

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;
class QToolButton;

namespace wingspan::ui {

class InputsPanel : public QWidget {
    Q_OBJECT
public:
    explicit InputsPanel(const ProfileLibrary& lib, QWidget* parent = nullptr);
    // After the library was reloaded (a user machine or model added).
    void setLibrary(const ProfileLibrary& lib);
    void populateModels();

    // plan -> controls (no signals are emitted while it runs).
    void showPlan(const Plan& plan);
    // controls -> plan: the setup and the forced framework (not the model, machines or data set).
    void readInto(Plan& plan);
    // The size label and parameter line follow every evaluation.
    void showEvaluation(const Plan& plan, const Evaluation& eval);
    // A model name typed or imported outside the list (an imported config.json).
    void showImportedName(const QString& text);
    void focusModelSearch();

    // The family the size slider walks for this plan (empty for imported configs).
    void updateSizeSlider(const Plan& plan);

signals:
    // A setup control changed; from_slider: a slider moved (the window throttles side panels).
    void setupEdited(bool from_slider);
    // The user picked a model (list, search, size slider).
    void modelChosen(const wingspan::ModelChoice& choice, bool from_slider);
    void importConfigRequested();
    void importFromHubRequested();
    void statusMessage(const QString& text);

private:
    QWidget* buildModelBox();
    QWidget* buildMethodBox();
    QWidget* buildBatchBox();
    QWidget* buildAdvancedBox();
    void onSizeSlider(int pos);
    void onModelActivated(int index);
    void edited() {
        if (!syncing_) emit setupEdited(false);
    }
    void editedBySlider();
    void enableForMethod(const TrainingSetup& s);

    const ProfileLibrary* lib_;
    FamilyRange family_;
    std::string current_model_id_;
    bool syncing_ = false;

    QComboBox* model_ = nullptr;
    QLabel* model_info_ = nullptr;
    QSlider* size_ = nullptr;
    QLabel* size_label_ = nullptr;
    QButtonGroup* method_ = nullptr;
    QSlider* rank_ = nullptr;
    QLabel* rank_label_ = nullptr;
    QCheckBox* targets_[8] = {};   // q, k, v, o, gate, up, down, head
    QComboBox* quant_ = nullptr;
    QWidget* lora_box_ = nullptr;
    QWidget* quant_row_ = nullptr;
    QSlider* seq_ = nullptr;
    QSpinBox* seq_spin_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QSpinBox* accum_ = nullptr;
    QCheckBox* ckpt_ = nullptr;
    QComboBox* precision_ = nullptr;
    QComboBox* optimizer_ = nullptr;
    QComboBox* attention_ = nullptr;
    QSpinBox* devices_ = nullptr;
    QComboBox* sharding_ = nullptr;
    QCheckBox* offload_ = nullptr;
    QCheckBox* optimizer_in_backward_ = nullptr;
    QCheckBox* activation_offload_ = nullptr;
    QCheckBox* compile_ = nullptr;
    QSpinBox* loss_chunk_ = nullptr;
    QCheckBox* train_embeddings_ = nullptr;
    QComboBox* framework_ = nullptr;
    QToolButton* advanced_toggle_ = nullptr;
    QWidget* advanced_box_ = nullptr;
};

}  // namespace wingspan::ui
