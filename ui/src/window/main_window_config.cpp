// The window's side of issue 26: a training framework's config opened (File ▸ Open training
// config… or dropped on the window) as the plan, and an out-of-memory message explained against
// it. core reads the file (config_import.hpp); the window only moves the result into its plan.
#include "wingspan/config_import.hpp"
#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/oom_dialog.hpp"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

bool is_plan_file(const QString& path) { return path.endsWith(kPlanSuffix, Qt::CaseInsensitive); }

bool is_config_file(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == "yaml" || suffix == "yml" || (suffix == "json" && !is_plan_file(path));
}

QString summary(const ConfigImport& im) {
    QString s = "Read as " + qs(to_string(im.format)) + ": " + QString::number(im.read.size()) + " keys read, " +
                QString::number(im.defaults.size()) + " defaults assumed, " + QString::number(im.ignored.size()) +
                " keys ignored.\n\nPlan flags: ";
    for (const auto& a : im.plan_args()) s += qs(a) + " ";
    auto list = [&](const char* title, const std::vector<ConfigNote>& notes) {
        if (notes.empty()) return;
        s += QString("\n\n") + title;
        for (const auto& n : notes) s += "\n  " + qs(n.key) + ": " + qs(n.note);
    };
    list("Defaults assumed:", im.defaults);
    list("Ignored:", im.ignored);
    return s;
}

}  // namespace

bool MainWindow::openTrainingConfig(const QString& path, QString* report) {
    if (!lib_) return false;
    try {
        const ConfigImport im = import_config(read_config_file(path.toStdString()), std::nullopt, &*lib_);
        Plan p = plan_;   // machines and data set stay; model, setup and framework come from the file
        const std::string model = im.flag_value("--model");
        if (!model.empty()) p.model = ModelChoice{model, {}, 0, nullptr, {}};
        p.setup = TrainingSetup::from_json(im.setup_json());
        p.framework = im.flag_value("--framework");
        p.machine_frameworks.clear();
        QString text = summary(im);
        if (model.empty())
            text = "The model " + qs(im.model) + " is not bundled: the plan keeps " + qs(plan_.model.model_id) +
                   " (add it with File ▸ Add model from the Hub, then open the config again).\n\n" + text;
        plan_path_.clear();
        setPlan(p);
        showStatus("Opened " + path + " as a " + qs(to_string(im.format)) + " config", 6000);
        if (report) *report = text;
        return true;
    } catch (const std::exception& e) {
        if (report) *report = qs(e.what());
        return false;
    }
}

void MainWindow::openTrainingConfigDialog() {
    QSettings settings;
    const QString path = QFileDialog::getOpenFileName(
        this, "Open a training config", settings.value("lastDir", QDir::homePath()).toString(),
        "Training configs (*.yaml *.yml *.json);;All files (*)");
    if (path.isEmpty()) return;
    settings.setValue("lastDir", QFileInfo(path).absolutePath());
    QString report;
    if (openTrainingConfig(path, &report)) QMessageBox::information(this, "Open training config", report);
    else QMessageBox::warning(this, "Open training config", "This config cannot be read:\n\n" + report);
}

void MainWindow::explainOomDialog() {
    OomDialog dialog(&eval_, this);
    dialog.exec();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
    const auto urls = e->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile() &&
        (is_plan_file(urls.front().toLocalFile()) || is_config_file(urls.front().toLocalFile())))
        e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
    const auto urls = e->mimeData()->urls();
    if (urls.size() != 1 || !urls.front().isLocalFile()) return;
    const QString path = urls.front().toLocalFile();
    QString message;
    if (is_plan_file(path)) {
        if (!openPlan(path, &message)) QMessageBox::warning(this, "Open plan", "This plan cannot be opened:\n\n" + message);
    } else if (!openTrainingConfig(path, &message)) {
        QMessageBox::warning(this, "Open training config", "This config cannot be read:\n\n" + message);
    } else {
        showStatus(message.section('\n', 0, 0), 8000);
    }
    e->acceptProposedAction();
}

}  // namespace wingspan::ui
