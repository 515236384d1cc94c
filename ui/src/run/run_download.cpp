// Train ▶ on a plan whose model is not on this machine: the download offer (size shown) and
// what the person chose — the downloaded model, random weights, the built-in demo, or nothing.
#include <QComboBox>
#include <QLabel>

#include "wingspan/ui/model_download_dialog.hpp"
#include "wingspan/ui/run_guard.hpp"
#include "wingspan/ui/run_panel.hpp"

#include "run/run_form.hpp"
#include "run/run_status_line.hpp"

namespace wingspan::ui {

void RunPanel::startOrOfferDownload() {
    const RunOptions o = options();
    const PlannedModel& planned = form_->plannedModel();
    const bool missing = o.model_source == RunOptions::ModelSource::Planned && planned.folder.isEmpty();
    updateTrainerBanner();
    // A model that would not fit here is not worth downloading: start() refuses it and says why.
    const bool fits = check_run_fit(lib_, form_->hasPlan() ? &form_->plan() : nullptr, o).fits;
    if (!missing || !fits || planned.repo.isEmpty() || isRunning() || download_dialog_ || !controller_->trainer().ok()) {
        // A plan model without a Hub repository (an interpolated size) cannot be downloaded, and
        // nothing is worth downloading without a trainer: start() says what to do instead.
        QString error;
        if (!start(&error)) showStartError(error);
        return;
    }
    const bool can_random = form_->offersModelSource(RunOptions::ModelSource::PlanArchitecture);
    auto* dialog = new ModelDownloadDialog(planned.repo, planned.name, can_random, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    download_dialog_ = dialog;
    connect(dialog, &QDialog::finished, this, [this, dialog] { onDownloadChoice(dialog); });
    status_line_->setStatus("<b>" + planned.name.toHtmlEscaped() + "</b> is not on this machine: choose in the dialog whether "
                     "to download it (its size is shown) or what to train instead.");
    dialog->open();   // modal to the window, but no nested event loop: the window keeps drawing
}

void RunPanel::onDownloadChoice(ModelDownloadDialog* dialog) {
    using Choice = ModelDownloadDialog::Choice;
    const Choice choice = dialog->choice();
    const QString snapshot = dialog->snapshotFolder();
    download_dialog_ = nullptr;
    switch (choice) {
        case Choice::None:
            status_line_->setStatus("<b>Not started:</b> " + form_->plannedModel().name.toHtmlEscaped() +
                             " is not on this machine and nothing was chosen instead.");
            return;
        case Choice::RandomWeights: form_->chooseModelSource(RunOptions::ModelSource::PlanArchitecture); break;
        case Choice::BuiltIn: form_->chooseModelSource(RunOptions::ModelSource::BuiltIn); break;
        case Choice::Downloaded:
            form_->modelDownloaded(snapshot);
            break;
    }
    QString error;
    if (!start(&error)) showStartError(error);
}

}  // namespace wingspan::ui
