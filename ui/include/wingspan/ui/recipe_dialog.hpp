#pragma once
// Recipes in the window. RecipeDialog (File ▸ Export recipe…): the plan written for a training
// framework into a folder, by core's recipe::make (the same files `wingspan recipe` writes).
// RunRecipeDialog (File ▸ Run a recipe…): runs a recipe folder's command (recipe.json) the way
// `wingspan watch` does (core's WatchedRun), shows its progress and log live, stops it cleanly,
// and leaves the run in the run history, where the Run tab's history lists it.
#include <filesystem>
#include <memory>
#include <optional>

#include <QDialog>
#include <QProcess>

#include "wingspan/profiles.hpp"
#include "wingspan/recipe.hpp"
#include "wingspan/recipe_watch.hpp"
#include "wingspan/plan.hpp"

class QComboBox;
class QElapsedTimer;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace wingspan::ui {

class RecipeDialog : public QDialog {
    Q_OBJECT
public:
    RecipeDialog(const ProfileLibrary& lib, const Plan& plan, std::filesystem::path recipes_dir,
                 QWidget* parent = nullptr);

    // Writes the recipe into folder(); false with error() when the plan or the folder will not do.
    bool write();
    QString error() const { return error_; }
    std::filesystem::path writtenTo() const { return written_; }
    QString command() const { return command_; }

    QComboBox* frameworkCombo() const { return framework_; }
    QLineEdit* folderEdit() const { return folder_; }
    QLineEdit* dataEdit() const { return data_; }
    QLabel* notesLabel() const { return notes_; }

private:
    void preview();   // what the framework does differently, for the chosen framework
    std::optional<recipe::Recipe> build(QString* why) const;

    const ProfileLibrary& lib_;
    Plan plan_;
    std::filesystem::path recipes_dir_;
    QComboBox* framework_;
    QLineEdit* folder_;
    QLineEdit* data_;
    QLabel* notes_;
    QString error_, command_;
    std::filesystem::path written_;
};

class RunRecipeDialog : public QDialog {
    Q_OBJECT
public:
    RunRecipeDialog(std::filesystem::path runs_root, QWidget* parent = nullptr);
    ~RunRecipeDialog() override;

    // Starts the recipe in `folder` (recipe.json names its command); false with error().
    bool start(const std::filesystem::path& folder);
    void stop();                       // SIGTERM (the reporter ends the run), SIGKILL after 15 s
    bool running() const;
    QString error() const { return error_; }
    std::filesystem::path runFolder() const { return run_ ? run_->folder() : std::filesystem::path(); }
    const WatchedRun* run() const { return run_.get(); }

    QLineEdit* folderEdit() const { return folder_; }
    QLabel* statusLabel() const { return status_; }
    QPlainTextEdit* logView() const { return log_; }

signals:
    void finished();

private:
    void readStdout();
    void readStderr();
    void onFinished(int code, QProcess::ExitStatus status);
    void showProgress();

    std::filesystem::path runs_root_;
    QLineEdit* folder_;
    QLabel* status_;
    QPlainTextEdit* log_;
    QPushButton* start_;
    QPushButton* stop_;
    QProcess* process_ = nullptr;
    std::unique_ptr<WatchedRun> run_;
    std::unique_ptr<QElapsedTimer> clock_;
    // Bounded line framing, as `wingspan watch` does: a line over 1 MiB is recorded cut and the
    // rest of it dropped, so a command that never writes a newline cannot grow the window.
    LineFramer out_lines_{std::size_t(1) << 20}, err_lines_{std::size_t(1) << 20};
    bool stop_requested_ = false;
    QString error_;
};

}  // namespace wingspan::ui
