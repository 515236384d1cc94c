#pragma once
// "Add from Hub…" / "Add from folder…": imports a model's real architecture and exact size
// through core's Hub client on a worker thread, with progress and cancel. The window never
// blocks; closing the dialog cancels the import and nothing partial is cached.
#include <QDialog>
#include <QPointer>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "wingspan/hub.hpp"

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace wingspan::ui {

class HubImportDialog : public QDialog {
    Q_OBJECT
public:
    enum class Source { Hub, Folder };
    explicit HubImportDialog(Source source, QWidget* parent = nullptr);
    ~HubImportDialog() override;

    // The repo id or folder typed; start() imports it.
    void setInput(const QString& text);
    void setOptions(const hub::HubOptions& options) { options_ = options; }
    const std::optional<hub::ImportedModel>& result() const { return result_; }
    QString errorText() const;
    bool busy() const { return worker_.joinable() && !finished_; }

public slots:
    void start();
    void cancel();

signals:
    void imported();        // result() holds the model
    void failed(const QString& message);

protected:
    void reject() override;

private:
    void onProgress(const hub::Progress& p);
    void onFinished(std::optional<hub::ImportedModel> model, QString error);
    void stopWorker();

    Source source_;
    hub::HubOptions options_;
    QLineEdit* input_ = nullptr;
    QLabel* status_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* import_ = nullptr;
    QPushButton* close_ = nullptr;
    std::thread worker_;
    std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
    bool finished_ = false;
    std::optional<hub::ImportedModel> result_;
};

}  // namespace wingspan::ui
