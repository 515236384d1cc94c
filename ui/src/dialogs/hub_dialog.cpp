#include "wingspan/ui/hub_dialog.hpp"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QApplication>
#include <QVBoxLayout>

#include "wingspan/units.hpp"

namespace wingspan::ui {

HubImportDialog::HubImportDialog(Source source, QWidget* parent) : QDialog(parent), source_(source) {
    setWindowTitle(source == Source::Hub ? "Add a model from the Hugging Face Hub" : "Add a model from a folder");
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    input_ = new QLineEdit;
    input_->setObjectName("hubInput");
    input_->setAccessibleName(source == Source::Hub ? "Hugging Face repository (owner/name)" : "Model folder");
    auto* row = new QHBoxLayout;
    row->addWidget(input_);
    if (source == Source::Hub) {
        input_->setPlaceholderText("owner/name, e.g. Qwen/Qwen2.5-7B");
        input_->setToolTip("Reads config.json and the safetensors headers only (a few kB, never the weights).\n"
                           "Gated models need a token: set HF_TOKEN before starting Wingspan.\n"
                           "HF_ENDPOINT points at a mirror; imports are cached and work offline afterwards.");
        auto* label = new QLabel("&Model id:");
        label->setBuddy(input_);
        form->addRow(label, row);
    } else {
        input_->setPlaceholderText("a folder with config.json and *.safetensors");
        auto* browse = new QPushButton("&Browse…");
        connect(browse, &QPushButton::clicked, this, [this] {
            const QString dir = QFileDialog::getExistingDirectory(this, "Model folder", input_->text());
            if (!dir.isEmpty()) input_->setText(dir);
        });
        row->addWidget(browse);
        auto* label = new QLabel("&Folder:");
        label->setBuddy(input_);
        form->addRow(label, row);
    }
    layout->addLayout(form);
    progress_ = new QProgressBar;
    progress_->setAccessibleName("Import progress");
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setTextVisible(false);
    layout->addWidget(progress_);
    status_ = new QLabel(source == Source::Hub ? "Nothing is downloaded but the model's description." : " ");
    status_->setObjectName("hubStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setMinimumWidth(520);
    status_->setMinimumHeight(status_->fontMetrics().lineSpacing() * 5);
    status_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    layout->setSizeConstraint(QLayout::SetMinimumSize);
    layout->addWidget(status_);
    auto* buttons = new QDialogButtonBox;
    import_ = buttons->addButton("&Import", QDialogButtonBox::AcceptRole);
    import_->setDefault(true);
    close_ = buttons->addButton(QDialogButtonBox::Cancel);
    connect(import_, &QPushButton::clicked, this, &HubImportDialog::start);
    connect(close_, &QPushButton::clicked, this, &HubImportDialog::reject);
    layout->addWidget(buttons);
}

HubImportDialog::~HubImportDialog() { stopWorker(); }

void HubImportDialog::setInput(const QString& text) { input_->setText(text); }

QString HubImportDialog::errorText() const { return status_->text(); }

void HubImportDialog::start() {
    const std::string what = input_->text().trimmed().toStdString();
    if (what.empty()) {
        status_->setText(source_ == Source::Hub ? "Type a model id such as Qwen/Qwen2.5-7B." : "Choose a folder.");
        return;
    }
    stopWorker();
    cancel_->store(false);
    finished_ = false;
    result_.reset();
    import_->setEnabled(false);
    input_->setEnabled(false);
    progress_->setRange(0, 0);   // busy until the first file count arrives
    status_->setText("Starting…");
    QPointer<HubImportDialog> self(this);
    auto cancel = cancel_;
    const Source source = source_;
    const hub::HubOptions options = options_;
    worker_ = std::thread([self, cancel, source, options, what] {
        auto progress = [self](const hub::Progress& p) {
            QMetaObject::invokeMethod(qApp, [self, p] {
                if (self) self->onProgress(p);
            }, Qt::QueuedConnection);
        };
        std::optional<hub::ImportedModel> model;
        QString error;
        try {
            model = source == Source::Hub ? hub::import_from_hub(what, options, progress, cancel.get())
                                          : hub::import_from_folder(what, progress, cancel.get());
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(qApp, [self, model = std::move(model), error]() mutable {
            if (self) self->onFinished(std::move(model), error);
        }, Qt::QueuedConnection);
    });
}

void HubImportDialog::onProgress(const hub::Progress& p) {
    if (p.steps > 0) {
        progress_->setRange(0, p.steps);
        progress_->setValue(p.step);
    }
    status_->setText(QString::fromStdString(p.message) + (p.from_cache ? " (from the cache)" : ""));
}

void HubImportDialog::onFinished(std::optional<hub::ImportedModel> model, QString error) {
    finished_ = true;
    if (worker_.joinable()) worker_.join();
    import_->setEnabled(true);
    input_->setEnabled(true);
    progress_->setAccessibleName("Import progress");
    progress_->setRange(0, 1);
    if (!model) {
        progress_->setValue(0);
        status_->setText(cancel_->load() ? "Cancelled; nothing was kept." : error);
        if (!cancel_->load()) emit failed(error);
        return;
    }
    progress_->setValue(1);
    result_ = std::move(model);
    QString text = QString::fromStdString(result_->profile.name) + ": " +
                   QString::fromStdString(format_count(result_->parameters)) + " parameters";
    for (const auto& w : result_->warnings) text += "\nwarning: " + QString::fromStdString(w);
    status_->setText(text);
    emit imported();
    accept();
}

void HubImportDialog::cancel() { cancel_->store(true); }

void HubImportDialog::reject() {
    stopWorker();
    QDialog::reject();
}

void HubImportDialog::stopWorker() {
    if (!worker_.joinable()) return;
    cancel_->store(true);   // the client checks this at least once a second
    worker_.join();
}

}  // namespace wingspan::ui
