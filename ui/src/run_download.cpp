// Train ▶ on a plan whose model is not on this machine: the download offer (size shown) and
// what the person chose — the downloaded model, random weights, the built-in demo, or nothing.
#include <QComboBox>
#include <QLabel>

#include "wingspan/ui/model_download_dialog.hpp"
#include "wingspan/ui/run_guard.hpp"
#include "wingspan/ui/run_panel.hpp"

namespace wingspan::ui {

void RunPanel::startOrOfferDownload() {
    const RunOptions o = options();
    const bool missing = o.model_source == RunOptions::ModelSource::Planned && planned_.folder.isEmpty();
    updateTrainerBanner();
    // A model that would not fit here is not worth downloading: start() refuses it and says why.
    const bool fits = check_run_fit(lib_, has_plan_ ? &plan_ : nullptr, o).fits;
    if (!missing || !fits || planned_.repo.isEmpty() || isRunning() || download_dialog_ || !trainer_.ok()) {
        // A plan model without a Hub repository (an interpolated size) cannot be downloaded, and
        // nothing is worth downloading without a trainer: start() says what to do instead.
        QString error;
        if (!start(&error)) showStartError(error);
        return;
    }
    bool can_random = false;
    for (int i = 0; i < model_->count(); ++i)
        can_random |= model_->itemData(i).toInt() == int(RunOptions::ModelSource::PlanArchitecture);
    auto* dialog = new ModelDownloadDialog(planned_.repo, planned_.name, can_random, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    download_dialog_ = dialog;
    connect(dialog, &QDialog::finished, this, [this, dialog] { onDownloadChoice(dialog); });
    status_->setText("<b>" + planned_.name.toHtmlEscaped() + "</b> is not on this machine: choose in the dialog whether "
                     "to download it (its size is shown) or what to train instead.");
    dialog->open();   // modal to the window, but no nested event loop: the window keeps drawing
}

void RunPanel::chooseModelSource(RunOptions::ModelSource source) {
    // For this run only: the next Train ▶ of a plan whose model is missing asks again, so the
    // demo or random weights never become a silent default.
    const int i = model_->findData(int(source));
    if (i >= 0) model_->setCurrentIndex(i);
    updateRunHeader();
}

void RunPanel::onDownloadChoice(ModelDownloadDialog* dialog) {
    using Choice = ModelDownloadDialog::Choice;
    const Choice choice = dialog->choice();
    const QString snapshot = dialog->snapshotFolder();
    download_dialog_ = nullptr;
    switch (choice) {
        case Choice::None:
            status_->setText("<b>Not started:</b> " + planned_.name.toHtmlEscaped() +
                             " is not on this machine and nothing was chosen instead.");
            return;
        case Choice::RandomWeights: chooseModelSource(RunOptions::ModelSource::PlanArchitecture); break;
        case Choice::BuiltIn: chooseModelSource(RunOptions::ModelSource::BuiltIn); break;
        case Choice::Downloaded:
            // The cache now has it: the plan's model is found there like any cached model.
            populateModelSources();
            if (planned_.folder.isEmpty()) planned_.folder = snapshot;   // a cache folder set elsewhere
            chooseModelSource(RunOptions::ModelSource::Planned);
            break;
    }
    QString error;
    if (!start(&error)) showStartError(error);
}

}  // namespace wingspan::ui
