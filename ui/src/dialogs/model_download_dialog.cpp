// The download offer of "Train ▶" (see model_download_dialog.hpp).
#include "wingspan/ui/model_download_dialog.hpp"

#include <QApplication>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "wingspan/ui/widgets.hpp"
#include "wingspan/units.hpp"

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString eta_text(double s) {
    const qint64 t = qint64(std::max(0.0, s));
    if (t < 60) return QString("%1 s").arg(t);
    if (t < 3600) return QString("%1 min %2 s").arg(t / 60).arg(t % 60);
    return QString("%1 h %2 min").arg(t / 3600).arg((t % 3600) / 60);
}

}  // namespace

QString download_size_text(std::uint64_t bytes) {
    return qs(format_bytes(double(bytes), ByteUnit::GB, 2)) + " (" + QLocale().toString(qulonglong(bytes)) + " bytes)";
}

ModelDownloadDialog::ModelDownloadDialog(const QString& repo, const QString& name, bool can_random, QWidget* parent)
    : QDialog(parent), repo_(repo), name_(name) {
    setObjectName("modelDownloadDialog");
    setWindowTitle("Download " + repo);
    setModal(true);
    auto* v = new QVBoxLayout(this);
    auto* head = new QLabel("<b>" + name.toHtmlEscaped() + " is not on this machine.</b> Train ▶ trains the plan's model "
                            "with its pretrained weights: download them from the Hugging Face Hub (<code>" +
                            repo.toHtmlEscaped() + "</code>) into the Hugging Face cache, shared with transformers, "
                            "or choose what to train instead.");
    head->setWordWrap(true);
    head->setTextFormat(Qt::RichText);
    size_ = new QLabel("Asking the Hub what the download holds…");
    size_->setObjectName("downloadSize");
    size_->setWordWrap(true);
    size_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    progress_ = new QProgressBar;
    progress_->setObjectName("downloadProgress");
    progress_->setAccessibleName("Download progress");
    progress_->setRange(0, 0);
    status_ = new QLabel;
    status_->setObjectName("downloadStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->addWidget(head);
    v->addWidget(size_);
    v->addWidget(progress_);
    v->addWidget(status_);

    auto* buttons = new QHBoxLayout;
    download_ = new QPushButton("Download and train");
    download_->setObjectName("downloadAndTrain");
    download_->setEnabled(false);   // until the size is known
    download_->setDefault(true);
    connect(download_, &QPushButton::clicked, this, &ModelDownloadDialog::download);
    random_ = new QPushButton("Random weights instead");
    random_->setObjectName("downloadRandomInstead");
    random_->setToolTip("Train the plan's architecture with random weights: the same memory, nothing learned from text");
    random_->setVisible(can_random);
    connect(random_, &QPushButton::clicked, this, [this] { choose(Choice::RandomWeights); });
    builtin_ = new QPushButton("Built-in demo instead");
    builtin_->setObjectName("downloadBuiltinInstead");
    builtin_->setToolTip("Train the built-in 3 M-parameter demo model (seconds, no download)");
    connect(builtin_, &QPushButton::clicked, this, [this] { choose(Choice::BuiltIn); });
    cancel_button_ = new QPushButton("Cancel");
    cancel_button_->setObjectName("downloadCancel");
    connect(cancel_button_, &QPushButton::clicked, this, [this] {
        if (busy() && listing_) cancelDownload();   // a download: stop it, stay to choose again
        else reject();
    });
    buttons->addWidget(download_);
    buttons->addWidget(random_);
    buttons->addWidget(builtin_);
    buttons->addStretch(1);
    buttons->addWidget(cancel_button_);
    v->addLayout(buttons);
    resize(620, sizeHint().height());
    grow_to_text(this);
}

ModelDownloadDialog::~ModelDownloadDialog() { stopWorker(); }

QString ModelDownloadDialog::sizeText() const { return size_->text(); }
QString ModelDownloadDialog::statusText() const { return status_->text(); }

void ModelDownloadDialog::showEvent(QShowEvent* e) {
    QDialog::showEvent(e);
    if (!listing_started_) list();
}

void ModelDownloadDialog::stopWorker() {
    if (!worker_.joinable()) return;
    cancel_->store(true);   // the client checks it at least once a second
    worker_.join();
    worker_done_ = true;
}

void ModelDownloadDialog::list() {
    if (busy()) return;
    stopWorker();
    listing_started_ = true;
    cancel_->store(false);
    worker_done_ = false;
    progress_->setRange(0, 0);
    QPointer<ModelDownloadDialog> self(this);
    const auto cancel = cancel_;
    const std::string repo = repo_.toStdString();
    const hub::DownloadOptions options = options_;
    worker_ = std::thread([self, cancel, repo, options] {
        std::optional<hub::DownloadListing> listing;
        QString error;
        try {
            listing = hub::list_download(repo, options, cancel.get());
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(qApp, [self, listing = std::move(listing), error]() mutable {
            if (self) self->onListed(std::move(listing), error);
        }, Qt::QueuedConnection);
    });
}

void ModelDownloadDialog::onListed(std::optional<hub::DownloadListing> listing, QString error) {
    if (worker_.joinable()) worker_.join();
    worker_done_ = true;
    progress_->setRange(0, 1);
    progress_->setValue(0);
    if (!listing) {
        size_->setText("Could not ask the Hub what " + repo_ + " holds.");
        status_->setText(error + "\nYou can download it later with `wingspan download " + repo_ +
                         "`, or train random weights or the built-in demo now.");
        grow_to_text(this);
        emit listed();
        return;
    }
    listing_ = std::move(listing);
    const auto& l = *listing_;
    QString text = QString("The download: <b>%1</b> in %2 file%3 (%4 commit %5)")
                       .arg(download_size_text(l.to_download()).toHtmlEscaped())
                       .arg(l.files.size() - std::count_if(l.files.begin(), l.files.end(), [](const auto& f) { return f.cached; }))
                       .arg(l.files.size() == 1 ? "" : "s")
                       .arg(qs(l.repo_id).toHtmlEscaped(), qs(l.commit.substr(0, 12)));
    if (l.cached_bytes > 0)
        text += QString(", besides %1 already in the cache").arg(download_size_text(l.cached_bytes).toHtmlEscaped());
    text += ", into <code>" + QString::fromStdString(options_.hub_cache.string()).toHtmlEscaped() + "</code>.";
    QStringList files;
    for (const auto& f : l.files)
        files << qs(f.name) + " · " + qs(format_bytes(double(f.size), ByteUnit::GB, 2)) + (f.cached ? " (cached)" : "");
    size_->setTextFormat(Qt::RichText);
    size_->setText(text);
    size_->setToolTip(files.join('\n'));
    status_->setText("A broken or cancelled download resumes where it stopped the next time.");
    download_->setEnabled(true);
    download_->setFocus();
    grow_to_text(this);
    emit listed();
}

void ModelDownloadDialog::download() {
    if (busy() || !listing_) return;
    stopWorker();
    cancel_->store(false);
    worker_done_ = false;
    download_->setEnabled(false);
    random_->setEnabled(false);
    builtin_->setEnabled(false);
    cancel_button_->setText("Cancel download");
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    status_->setText("Downloading…");
    QPointer<ModelDownloadDialog> self(this);
    const auto cancel = cancel_;
    const std::string repo = repo_.toStdString();
    const hub::DownloadOptions options = options_;
    worker_ = std::thread([self, cancel, repo, options] {
        auto progress = [self](const hub::DownloadProgress& p) {
            QMetaObject::invokeMethod(qApp, [self, p] {
                if (self) self->onProgress(p);
            }, Qt::QueuedConnection);
        };
        QString snapshot, error;
        bool cancelled = false;
        try {
            snapshot = QString::fromStdString(hub::download_snapshot(repo, options, progress, cancel.get()).snapshot.string());
        } catch (const hub::HubError& e) {
            cancelled = e.kind() == hub::HubErrorKind::Cancelled;
            error = QString::fromStdString(e.what());
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(qApp, [self, snapshot, error, cancelled] {
            if (self) self->onDownloaded(snapshot, error, cancelled);
        }, Qt::QueuedConnection);
    });
}

void ModelDownloadDialog::onProgress(const hub::DownloadProgress& p) {
    if (p.total_bytes > 0) progress_->setValue(int(1000.0 * double(p.done_bytes) / double(p.total_bytes)));
    QString text = p.file.empty() ? QString("Linking the snapshot…")
                                  : QString("[%1/%2] %3").arg(p.file_index).arg(p.files).arg(qs(p.file));
    text += " · " + qs(format_bytes(double(p.done_bytes), ByteUnit::GB, 2)) + " of " +
            qs(format_bytes(double(p.total_bytes), ByteUnit::GB, 2));
    if (p.bytes_per_second > 0) text += " · " + qs(format_bytes(p.bytes_per_second, ByteUnit::GB, 1)) + "/s";
    if (p.eta_seconds) text += " · " + eta_text(*p.eta_seconds) + " left";
    status_->setText(text);
    grow_to_text(this);   // a long file name may take a second line
}

void ModelDownloadDialog::onDownloaded(QString snapshot, QString error, bool cancelled) {
    if (worker_.joinable()) worker_.join();
    worker_done_ = true;
    cancel_button_->setText("Cancel");
    if (snapshot.isEmpty()) {
        progress_->setValue(0);
        status_->setText(cancelled ? "Download cancelled. What arrived is kept in the cache's blobs/ and resumes next time; "
                                     "nothing half-downloaded is in the snapshot."
                                   : "The download failed: " + error);
        download_->setEnabled(true);
        download_->setText(cancelled ? "Resume download" : "Try again");
        random_->setEnabled(true);
        builtin_->setEnabled(true);
        grow_to_text(this);
        emit downloadFinished(false);
        return;
    }
    progress_->setValue(1000);
    snapshot_ = snapshot;
    status_->setText("Downloaded into " + snapshot);
    emit downloadFinished(true);
    choose(Choice::Downloaded);
}

void ModelDownloadDialog::cancelDownload() {
    if (!busy()) return;
    cancel_->store(true);
    status_->setText("Cancelling…");
}

void ModelDownloadDialog::choose(Choice c) {
    stopWorker();
    choice_ = c;
    accept();
}

void ModelDownloadDialog::reject() {
    stopWorker();
    choice_ = Choice::None;
    QDialog::reject();
}

}  // namespace wingspan::ui
