// The run panel's results: the summary (predicted vs measured per component, checkpoint, sample),
// its bar chart, the log tab, and exports of the shown run.
#include <algorithm>
#include <fstream>

#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/widgets.hpp"

#include "run/run_panel_text.hpp"
#include "run/run_results_view.hpp"
#include "run/run_status_line.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

TryItBox* RunPanel::tryIt() const { return results_->tryIt(); }

ChartData RunPanel::summaryChart() const {
    const RunRecord* r = shownRecord();
    if (!r) return {};
    const RunOptions* o = loaded_ ? &loaded_->options : session() ? &session()->options() : nullptr;
    return run_summary_chart(*r, o, {}, unit_, status_line_ && status_line_->wholeProcess());
}

QString RunPanel::verdictText() const {
    const RunRecord* r = shownRecord();
    if (!r) return {};
    if (loaded_) return verdictLine(*r, loaded_->options, &loaded_->device, &loaded_->ranks);
    return verdictLine(*r, session()->options(), &session()->deviceMemory(), &session()->ranks());
}

Table RunPanel::summaryTable() const {
    const RunRecord* r = shownRecord();
    return r ? run_summary_table(*r, unit_) : Table{};
}


void RunPanel::refreshSummary() {
    const RunRecord* r = shownRecord();
    if (!r) {
        results_->setSummary(summaryTable(), summaryChart(), {});
        results_->clearSample();
        TryItTarget none;
        none.unavailable = "No run yet: a LoRA or QLoRA run of a model folder can be tried here once it has finished.";
        results_->tryIt()->setTarget(none);
        return;
    }
    QString html;
    const bool live = !loaded_ && session() && session()->isActive();
    if (live) html = "<b>So far</b> (the run is still going; the table fills in as the peaks arrive).";
    else {
        QString st = qs(r->status_text());
        if (!st.isEmpty()) st[0] = st[0].toUpper();
        html = "<b>" + st.toHtmlEscaped() + "</b>";
    }
    if (!r->checkpoints().empty()) {
        const QString ck = qs(r->checkpoints().back());
        html += "<br>Checkpoint: <a href=\"" + ck.toHtmlEscaped() + "\">" + ck.toHtmlEscaped() + "</a>";
    } else if (!live) {
        html += "<br>No checkpoint was saved.";
    }
    const fs::path folder = shownFolder();
    if (!folder.empty()) {
        const QString f = qs(folder.string());
        html += "<br>Run folder: <a href=\"" + f.toHtmlEscaped() + "\">" + f.toHtmlEscaped() + "</a>";
    }
    if (const QString verdict = verdictText(); !verdict.isEmpty()) html += "<br>" + verdict.toHtmlEscaped();
    if (!run_reached_peak(*r) && !live)
        html += "<br>The run ended before its first step, so it never reached its peak: components below the "
                "prediction read “not reached”, not as errors.";
    const QString msg = loaded_ ? loaded_->stop_message : stopMessage();
    if (!msg.isEmpty()) html += "<br>" + msg.toHtmlEscaped();
    results_->setSummary(summaryTable(), summaryChart(), html);
    QString sample = r->done() ? qs(r->done()->string_field("sample")) : QString();
    if (sample.trimmed().isEmpty()) sample.clear();   // whitespace only: the note below says so
    if (const RunOptions* o = loaded_ ? &loaded_->options : session() ? &session()->options() : nullptr)
        results_->tryIt()->setTarget(try_it_target(controller_->trainer().path, *o, *r, live));
    results_->setSample(sample, !r->done() ? "The text the model generates at the end of the run appears here."
                                : sample.trimmed().isEmpty()
                                    ? "The model generated only whitespace: it has not learned enough yet (random "
                                      "weights and a few steps)."
                                    : QString());
}


// ------------------------------------------------------------------ exports ----

ExportResult RunPanel::exportCharts(const QString& dir, const QStringList& formats, const ImageOptions& options) {
    ExportResult result;
    if (!shownRecord()) {
        result.errors << "there is no run to export";
        return result;
    }
    QDir().mkpath(dir);
    const fs::path folder = shownFolder();
    const QString base = folder.empty() ? QString("run") : qs(folder.filename().string());
    RunChartInputs in = chartInputs();
    in.max_points = 1200;   // an export is read closer than the live view
    const std::vector<std::pair<QString, TimeChartData>> charts = {
        {"memory", run_memory_chart(in)}, {"loss", run_loss_chart(in)}, {"throughput", run_throughput_chart(in)}};
    const ChartData summary = summaryChart();
    const Table table = summaryTable();
    for (const QString& f : formats) {
        QString error;
        if (f == "png" || f == "svg" || f == "pdf") {
            for (const auto& [name, data] : charts) {
                const QString path = QDir(dir).filePath(base + "-" + name + "." + f);
                if (export_time_chart(data, path, options, &error)) result.files << path;
                else result.errors << error;
            }
            const QString path = QDir(dir).filePath(base + "-summary." + f);
            if (export_summary_chart(summary, path, options, &error)) result.files << path;
            else result.errors << error;
        } else if (f == "csv" || f == "md") {
            const QString path = QDir(dir).filePath(base + "-summary." + f);
            if (export_table(table, path, &error)) result.files << path;
            else result.errors << error;
        } else {
            result.errors << "unknown format '" + f + "' (png, svg, pdf, csv, md)";
        }
    }
    return result;
}

void RunPanel::exportMenu(int which) {
    if (!shownRecord()) {
        QMessageBox::information(this, "Export", "There is no run to export yet.");
        return;
    }
    const fs::path folder = shownFolder();
    const QString base = folder.empty() ? QString("run") : qs(folder.filename().string());
    const char* names[] = {"memory", "loss", "throughput", "summary", "summary"};
    const char* what[] = {"memory chart", "loss chart", "throughput chart", "predicted vs measured chart", "summary table"};
    const bool chart = which < 4;
    ExportDialog dialog(what[which], QDir::home().filePath(base + "-" + names[which] + (chart ? ".png" : ".csv")), chart, this);
    if (dialog.exec() != QDialog::Accepted) return;
    QString error;
    bool ok = false;
    RunChartInputs in = chartInputs();
    in.max_points = 1200;   // an export is read closer than the live view
    switch (which) {
        case 0: ok = export_time_chart(run_memory_chart(in), dialog.path(), dialog.options(), &error); break;
        case 1: ok = export_time_chart(run_loss_chart(in), dialog.path(), dialog.options(), &error); break;
        case 2: ok = export_time_chart(run_throughput_chart(in), dialog.path(), dialog.options(), &error); break;
        case 3: ok = export_summary_chart(summaryChart(), dialog.path(), dialog.options(), &error); break;
        default: ok = export_table(summaryTable(), dialog.path(), &error); break;
    }
    if (!ok) QMessageBox::warning(this, "Export", error);
}

void RunPanel::exportAllDialog() {
    if (!shownRecord()) {
        QMessageBox::information(this, "Export", "There is no run to export yet.");
        return;
    }
    const QString dir = QFileDialog::getExistingDirectory(this, "Export the run's charts and summary to", QDir::homePath());
    if (dir.isEmpty()) return;
    const ExportResult r = exportCharts(dir, {"png", "svg", "pdf", "csv", "md"}, ImageOptions{});
    if (r.ok()) QMessageBox::information(this, "Export", QString("Wrote %1 files to %2.").arg(r.files.size()).arg(dir));
    else QMessageBox::warning(this, "Export", r.errors.join('\n'));
}

}  // namespace wingspan::ui
