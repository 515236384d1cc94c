// The window's file work: plans opened and saved, charts and tables exported, the user's own
// machines and imported models, and the settings remembered between sessions.
#include "wingspan/ui/main_window.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/ui/calibration_dialog.hpp"
#include "wingspan/ui/hub_dialog.hpp"
#include "wingspan/ui/machine_dialog.hpp"

#include <algorithm>

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QComboBox>
#include <QTableWidget>
#include <QTreeWidget>

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

enum TabIndex { TabMachines = 0, TabMethods = 1, TabSizes = 2, TabWhich = 3 };
enum TableIndex { TableMethods = 0, TableSizes = 1, TableMachines = 2 };

}  // namespace

// ------------------------------------------------------------------ models ----

void MainWindow::importFromHubDialog() {
    auto* dialog = new HubImportDialog(HubImportDialog::Source::Hub, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &HubImportDialog::imported, this, [this, dialog] { addImportedModel(*dialog->result()); });
    dialog->open();
}

void MainWindow::importFromFolderDialog() {
    auto* dialog = new HubImportDialog(HubImportDialog::Source::Folder, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &HubImportDialog::imported, this, [this, dialog] { addImportedModel(*dialog->result()); });
    dialog->open();
}

void MainWindow::addImportedModel(const hub::ImportedModel& m) {
    if (!lib_) return;
    try {
        hub::save_imported_profile(m, user_dir_);
    } catch (const std::exception& e) {
        showStatus("Imported, but not remembered: " + qs(e.what()), 8000);
    }
    lib_->add_model(m.profile);
    inputs_->populateModels();
    setModel(m.profile.id);
}

void MainWindow::importConfigDialog() {
    const QString path = QFileDialog::getOpenFileName(this, "Import a Hugging Face config.json", QDir::homePath(),
                                                      "Model config (config.json *.json)");
    if (path.isEmpty()) return;
    // Any file can be picked here: read bounded in size and depth, and what went wrong said.
    nlohmann::json j;
    try {
        j = read_untrusted_json_file(path.toStdString());
    } catch (const InputError& e) {
        QMessageBox::warning(this, "Import config.json", qs(e.what()));
        return;
    }
    if (!j.is_object()) {
        QMessageBox::warning(this, "Import config.json", path + " is not a JSON object.");
        return;
    }
    try {
        Architecture::from_hf_config(j);
    } catch (const std::exception& e) {
        QMessageBox::warning(this, "Import config.json", "This config cannot be used:\n" + qs(e.what()));
        return;
    }
    plan_.model = ModelChoice{};
    plan_.model.config = j;
    QFileInfo fi(path);
    plan_.model.config_name = (fi.fileName() == "config.json" ? fi.dir().dirName() : fi.completeBaseName()).toStdString();
    inputs_->showImportedName(qs(plan_.model.config_name) + " (imported)");
    inputs_->updateSizeSlider(plan_);
    recompute();
    emit planChanged();
}

// --------------------------------------------------------------------- compute ----

// ------------------------------------------------------------------ files ----

bool MainWindow::openPlan(const QString& path, QString* error) {
    try {
        Plan p = read_plan_file(path.toStdString());
        resolve_model(*lib_, p.model);   // an unknown model is an error, not a blank chart
        plan_path_ = path;
        setPlan(p);
        showStatus("Opened " + path, 5000);
        return true;
    } catch (const std::exception& e) {
        if (error) *error = qs(e.what());
        return false;
    }
}

bool MainWindow::savePlan(const QString& path, QString* error) {
    QString target = path;
    if (!target.endsWith(".json", Qt::CaseInsensitive)) target += kPlanSuffix;
    try {
        write_plan_file(plan_, target.toStdString());
        plan_path_ = target;
        recompute();
        showStatus("Saved " + target, 5000);
        return true;
    } catch (const std::exception& e) {
        if (error) *error = qs(e.what());
        return false;
    }
}

void MainWindow::openPlanDialog() {
    QSettings settings;
    const QString path = QFileDialog::getOpenFileName(this, "Open plan", settings.value("lastDir", QDir::homePath()).toString(),
                                                      "Wingspan plans (*.wingspan.json);;JSON (*.json)");
    if (path.isEmpty()) return;
    settings.setValue("lastDir", QFileInfo(path).absolutePath());
    QString error;
    if (!openPlan(path, &error)) QMessageBox::warning(this, "Open plan", "This plan cannot be opened:\n\n" + error);
}

void MainWindow::savePlanDialog() {
    if (plan_path_.isEmpty()) return savePlanAsDialog();
    QString error;
    if (!savePlan(plan_path_, &error)) QMessageBox::warning(this, "Save plan", error);
}

void MainWindow::savePlanAsDialog() {
    QSettings settings;
    const QString suggested =
        QDir(settings.value("lastDir", QDir::homePath()).toString()).filePath(qs(eval_.model.id) + kPlanSuffix);
    const QString path = QFileDialog::getSaveFileName(this, "Save plan", suggested, "Wingspan plans (*.wingspan.json)");
    if (path.isEmpty()) return;
    settings.setValue("lastDir", QFileInfo(path).absolutePath());
    QString error;
    if (!savePlan(path, &error)) QMessageBox::warning(this, "Save plan", error);
}

QString MainWindow::currentChartName() const {
    switch (tabs_->currentIndex()) {
        case TabMethods: return "methods";
        case TabSizes: return "sizes";
        default: return "machines";
    }
}

void MainWindow::exportChartDialog() {
    if (!lib_) return;
    QSettings settings;
    const QString name = tabs_->currentIndex() == TabWhich ? "which-machine" : currentChartName();
    const QString dir = settings.value("exportDir", QDir::homePath()).toString();
    ExportDialog dlg("chart", QDir(dir).filePath(qs(eval_.model.id) + "-" + name + ".png"), true, this);
    if (dlg.exec() != QDialog::Accepted) return;
    ChartData data = machines_data_;
    if (name == "methods") {
        refreshTable(TableMethods);
        data = methods_chart_->data();
    } else if (name == "sizes") {
        refreshTable(TableSizes);
        data = sizes_chart_->data();
    }
    QString error;
    // The grid is a table widget: it goes to PNG/SVG/PDF as drawn on screen.
    const bool ok = tabs_->currentIndex() == TabWhich
                        ? (refreshTable(TableMachines), export_widget(which_->gridView(), dlg.path(), dlg.options(), &error))
                        : export_chart(data, dlg.path(), dlg.options(), &error);
    if (ok) {
        settings.setValue("exportDir", QFileInfo(dlg.path()).absolutePath());
        showStatus("Exported " + dlg.path(), 6000);
    } else {
        QMessageBox::warning(this, "Export chart", error);
    }
}

void MainWindow::exportTableDialog() {
    if (!lib_) return;
    QSettings settings;
    const int tab = tabs_->currentIndex();
    const QString name = tab == TabMethods ? "methods" : tab == TabSizes ? "sizes" : tab == TabWhich ? "which-machine" : "memory";
    const QString dir = settings.value("exportDir", QDir::homePath()).toString();
    ExportDialog dlg("table", QDir(dir).filePath(qs(eval_.model.id) + "-" + name + ".csv"), false, this);
    if (dlg.exec() != QDialog::Accepted) return;
    const Table t = tab == TabMethods ? methodTable() : tab == TabSizes ? sizeTable() : tab == TabWhich ? machineGrid().to_table(unit_)
                                                                                                        : chart_table(machines_data_);
    QString error;
    bool ok = export_table(t, dlg.path(), &error);
    if (ok && tab == TabWhich) {
        // The per-machine table of the plan beside the grid: NAME-machines.csv / .md.
        const QFileInfo fi(dlg.path());
        ok = export_table(machineTable(), fi.dir().filePath(fi.completeBaseName() + "-machines." + fi.suffix()), &error);
    }
    if (ok) {
        settings.setValue("exportDir", QFileInfo(dlg.path()).absolutePath());
        showStatus("Exported " + dlg.path(), 6000);
    } else {
        QMessageBox::warning(this, "Export table", error);
    }
}

void MainWindow::exportCoursePackDialog() {
    if (!lib_) return;
    QSettings settings;
    const QString dir = QFileDialog::getExistingDirectory(this, "Export course pack into…",
                                                          settings.value("exportDir", QDir::homePath()).toString());
    if (dir.isEmpty()) return;
    settings.setValue("exportDir", dir);
    QApplication::setOverrideCursor(Qt::WaitCursor);
    const ExportResult r = export_course_pack(*lib_, plan_, dir, {"png", "svg", "pdf", "csv", "md"}, ImageOptions{}, unit_);
    QApplication::restoreOverrideCursor();
    if (r.ok())
        QMessageBox::information(this, "Course pack", QString("Wrote %1 files to %2 (index.md lists them).").arg(r.files.size()).arg(dir));
    else
        QMessageBox::warning(this, "Course pack",
                             QString("Wrote %1 files; %2 failed:\n\n%3").arg(r.files.size()).arg(r.errors.size()).arg(r.errors.join("\n")));
}

// ------------------------------------------------------------------ machines ----

// ------------------------------------------------------------------ machines ----

void MainWindow::setUserDir(const std::filesystem::path& dir) {
    user_dir_ = dir;
    reloadUserMachines();
}

void MainWindow::reloadUserMachines() {
    if (!lib_) return;
    try {
        ProfileLibrary fresh = ProfileLibrary::load(ProfileLibrary::default_dir(executable_.toStdString()));
        fresh.add_machine(detect_this_machine());
        fresh.load_user_profiles(user_dir_);
        eval_ = Evaluation{};   // holds pointers into the old library
        lib_ = std::move(fresh);
    } catch (const std::exception& e) {
        showStatus("Your machines could not be reloaded: " + qs(e.what()), 10000);
        return;
    }
    inputs_->setLibrary(*lib_);
    machines_->populate(*lib_, unit_);
    which_->setMachineChoices(*lib_);
    setPlan(plan_);
}

void MainWindow::calibrateDialog() {
    if (!lib_) return;
    CalibrationDialog dlg(*lib_, RunStore::default_root(), user_dir_, this);
    if (dlg.exec() != QDialog::Accepted || dlg.savedPath().empty()) return;
    reloadUserMachines();   // reloads the user's frameworks too
    showStatus("Calibrated framework saved: " + qs(dlg.savedPath().string()) +
                                 " — “This machine” and the trainer's predictions use it now", 10000);
}

void MainWindow::addMachineDialog() {
    if (!lib_) return;
    MachineDialog dlg(*lib_, nullptr, this);
    if (dlg.exec() != QDialog::Accepted) return;
    if (!dlg.save(user_dir_)) {
        QMessageBox::warning(this, "Add your machine", dlg.error());
        return;
    }
    const auto m = dlg.machine();
    reloadUserMachines();
    if (m) {
        Plan p = plan_;
        if (std::find(p.machines.begin(), p.machines.end(), m->id) == p.machines.end()) p.machines.push_back(m->id);
        setPlan(p);
    }
}

void MainWindow::editMachineDialog() {
    const QString id = machines_ ? machines_->currentUserMachineId() : QString();
    if (!lib_ || id.isEmpty()) return;
    const MachineProfile& m = lib_->machine(id.toStdString());
    MachineDialog dlg(*lib_, &m, this);
    if (dlg.exec() != QDialog::Accepted) return;
    if (!dlg.save(user_dir_)) {
        QMessageBox::warning(this, "Edit your machine", dlg.error());
        return;
    }
    reloadUserMachines();
}

void MainWindow::removeUserMachine() {
    const QString id = machines_ ? machines_->currentUserMachineId() : QString();
    if (!lib_ || id.isEmpty()) return;
    if (QMessageBox::question(this, "Remove your machine",
                              "Remove “" + machines_->currentMachineText() + "” from your machines?") !=
        QMessageBox::Yes)
        return;
    std::error_code ec;
    std::filesystem::remove(user_dir_ / "machines" / (id.toStdString() + ".json"), ec);
    Plan p = plan_;
    p.machines.erase(std::remove(p.machines.begin(), p.machines.end(), id.toStdString()), p.machines.end());
    plan_ = p;
    reloadUserMachines();
}

// ------------------------------------------------------------------ settings ----

void MainWindow::saveSettings() {
    if (!options_.save_settings || !lib_) return;
    QSettings s;
    s.setValue("plan", QString::fromStdString(plan_.to_json().dump()));
    s.setValue("planPath", plan_path_);
    s.setValue("unit", qs(unit_name(unit_)));
    s.setValue("theme", theme_id(theme_));
    s.setValue("chartScale", chart_scale_id(scale_));
    s.setValue("geometry", saveGeometry());
}

void MainWindow::restoreSettings() {
    QSettings s;
    unit_ = s.value("unit").toString() == "GiB" ? ByteUnit::GiB : ByteUnit::GB;
    if (unit_group_)
        for (QAction* a : unit_group_->actions()) a->setChecked(a->data().toString() == qs(unit_name(unit_)));
    const Theme t = parse_theme(s.value("theme", "system").toString());
    if (t != Theme::System) setTheme(t);
    scale_ = parse_chart_scale(s.value("chartScale", "auto").toString());
    if (scale_box_) scale_box_->setCurrentIndex(std::max(0, scale_box_->findData(chart_scale_id(scale_))));
    // The last size and place; the first time, the screen's whole available area.
    if (s.contains("geometry")) {
        restoreGeometry(s.value("geometry").toByteArray());
        keepOnScreen();
    } else if (QScreen* screen = QGuiApplication::primaryScreen()) setGeometry(screen->availableGeometry());
    Plan p = Plan::lesson_default();
    const QString saved = s.value("plan").toString();
    if (!saved.isEmpty()) {
        try {
            Plan restored = Plan::from_json(parse_untrusted_json(saved.toStdString(), "the saved plan"));   // bounded like a plan file
            resolve_model(*lib_, restored.model);
            p = restored;
            plan_path_ = s.value("planPath").toString();
        } catch (const std::exception& e) {
            showStatus("Your last plan could not be restored (" + qs(e.what()) + "); showing the lessons' example.",
                                     10000);
        }
    }
    machines_->populate(*lib_, unit_);
    which_->setMachineChoices(*lib_);
    setPlan(p);
}

void MainWindow::keepOnScreen() {
    // A geometry saved on a larger screen (or after something widened the window) must not open
    // the window past this one's edges: no larger than the available area, and inside it.
    QScreen* screen = QGuiApplication::screenAt(geometry().center());
    if (!screen) screen = QGuiApplication::primaryScreen();
    if (!screen) return;
    const QRect avail = screen->availableGeometry();
    const QRect g = geometry();
    const int w = std::min(g.width(), avail.width()), h = std::min(g.height(), avail.height());
    if (w != g.width() || h != g.height()) resize(w, h);
    const int x = std::clamp(g.x(), avail.left(), avail.right() + 1 - w);
    const int y = std::clamp(g.y(), avail.top(), avail.bottom() + 1 - h);
    if (x != g.x() || y != g.y()) move(x, y);
}

void MainWindow::closeEvent(QCloseEvent* e) {
    saveSettings();
    e->accept();
}

}  // namespace wingspan::ui
