#pragma once
// "Train ▶" on a plan whose model is not on this machine: asks the Hub what the download
// would fetch (core's hub::list_download) and shows its exact size; the person then chooses
// to download and train it, or to train random weights or the built-in demo instead. The
// download (core's hub::download_snapshot, as `wingspan download`) runs on a worker thread
// with progress and Cancel; the window never waits for the network.
#include <QDialog>
#include <QString>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "wingspan/hub_download.hpp"

class QLabel;
class QProgressBar;
class QPushButton;

namespace wingspan::ui {

class ModelDownloadDialog : public QDialog {
    Q_OBJECT
public:
    enum class Choice { None, Downloaded, RandomWeights, BuiltIn };

    // `repo`: OWNER/NAME on the Hub; `name`: the plan's model in words. `can_random`: the plan's
    // architecture can be built with random weights.
    ModelDownloadDialog(const QString& repo, const QString& name, bool can_random, QWidget* parent = nullptr);
    ~ModelDownloadDialog() override;   // a worker still going is cancelled and joined

    // Endpoint, token, cache: from the environment by default (HF_ENDPOINT, HF_TOKEN, HF_HOME).
    void setOptions(const hub::DownloadOptions& options) { options_ = options; }
    const hub::DownloadOptions& downloadOptions() const { return options_; }

    void list();                 // asks the Hub for the files and sizes (started by exec/show)
    void download();             // the "Download and train" button
    void cancelDownload();

    Choice choice() const { return choice_; }
    const std::optional<hub::DownloadListing>& listing() const { return listing_; }
    QString snapshotFolder() const { return snapshot_; }   // after a download
    QString sizeText() const;    // what the dialog says about the size
    QString statusText() const;
    bool busy() const { return worker_.joinable() && !worker_done_; }

signals:
    void listed();               // listing() holds the answer (or statusText() says why not)
    void downloadFinished(bool ok);

protected:
    void showEvent(QShowEvent* e) override;
    void reject() override;

private:
    void stopWorker();
    void onListed(std::optional<hub::DownloadListing> listing, QString error);
    void onProgress(const hub::DownloadProgress& p);
    void onDownloaded(QString snapshot, QString error, bool cancelled);
    void choose(Choice c);

    QString repo_, name_;
    hub::DownloadOptions options_;
    std::optional<hub::DownloadListing> listing_;
    QString snapshot_;
    Choice choice_ = Choice::None;
    bool listing_started_ = false;
    std::thread worker_;
    bool worker_done_ = true;
    std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);

    QLabel* size_ = nullptr;
    QLabel* status_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* download_ = nullptr;
    QPushButton* cancel_button_ = nullptr;
    QPushButton* random_ = nullptr;
    QPushButton* builtin_ = nullptr;
};

// "1.23 GB (1,234,567,890 bytes)": the size a person agrees to, exact.
QString download_size_text(std::uint64_t bytes);

}  // namespace wingspan::ui
