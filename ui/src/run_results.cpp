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

#include "run_panel_text.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

QWidget* RunPanel::buildBottom() {
    bottom_ = new QTabWidget;
    bottom_->setObjectName("runBottom");
    bottom_->setDocumentMode(true);

    // Summary.
    auto* summary = new QWidget;
    auto* sh = new QHBoxLayout(summary);
    sh->setContentsMargins(4, 4, 4, 4);
    auto* left = new QVBoxLayout;
    summary_text_ = new QLabel;
    summary_text_->setObjectName("runSummaryText");
    summary_text_->setWordWrap(true);
    summary_text_->setTextFormat(Qt::RichText);
    summary_text_->setTextInteractionFlags(Qt::TextBrowserInteraction);
    summary_text_->setOpenExternalLinks(false);
    connect(summary_text_, &QLabel::linkActivated, this,
            [](const QString& link) { QDesktopServices::openUrl(QUrl::fromLocalFile(link)); });
    summary_model_ = new TableModel(this);
    summary_view_ = new QTableView;
    summary_view_->setObjectName("runSummaryTable");
    summary_view_->setAccessibleName("Predicted and measured bytes per component");
    summary_view_->setModel(summary_model_);
    summary_view_->verticalHeader()->hide();
    summary_view_->horizontalHeader()->setStretchLastSection(true);
    summary_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    summary_view_->setAlternatingRowColors(true);
    summary_view_->verticalHeader()->setDefaultSectionSize(summary_view_->fontMetrics().height() + 8);
    summary_view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    sample_ = new QPlainTextEdit;
    sample_->setObjectName("runSample");
    sample_->setAccessibleName("Sample the model generated");
    sample_->setReadOnly(true);
    sample_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    sample_->setPlaceholderText("The text the model generates at the end of the run appears here.");
    left->addWidget(summary_text_);
    left->addWidget(summary_view_, 1);
    auto* right = new QVBoxLayout;
    auto* sample_label = new QLabel("Sample the model generated at the end:");
    sample_label->setBuddy(sample_);
    right->addWidget(sample_label);
    right->addWidget(sample_, 1);
    sh->addLayout(left, 3);
    sh->addLayout(right, 2);
    bottom_->addTab(summary, "Summar&y");

    // Predicted vs measured as the planner draws it: two stacked bars.
    summary_chart_ = new RunSummaryChartView;
    summary_chart_->setObjectName("runSummaryChart");
    summary_chart_->setMinimumSize(280, 180);
    bottom_->addTab(summary_chart_, "Predicted vs measured");
    chart_tab_ = bottom_->count() - 1;
    connect(bottom_, &QTabWidget::currentChanged, this, [this](int index) {
        // The bar chart needs some height to be read: make room when it is chosen.
        if (index != chart_tab_ || !split_) return;
        const QList<int> sizes = split_->sizes();
        if (sizes.size() == 2 && sizes[1] < 340 && sizes[0] + sizes[1] > 700)
            split_->setSizes({sizes[0] + sizes[1] - 340, 340});
    });

    // Log.
    log_ = new QPlainTextEdit;
    log_->setObjectName("runLog");
    log_->setAccessibleName("Trainer log");
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(5000);   // bounded, however much the trainer writes
    log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    log_->setLineWrapMode(QPlainTextEdit::NoWrap);
    log_->setPlaceholderText("The trainer's stderr, its log events and every line Wingspan could not read.");
    bottom_->addTab(log_, "Lo&g");
    log_tab_ = bottom_->count() - 1;

    // Try it: the finished run's model answers a prompt.
    try_it_ = new TryItBox;
    bottom_->addTab(try_it_, "&Try it");

    bottom_->addTab(buildHistoryTab(), "History");
    return bottom_;
}

ChartData RunPanel::summaryChart() const {
    const RunRecord* r = shownRecord();
    if (!r) return {};
    const RunOptions* o = loaded_ ? &loaded_->options : session() ? &session()->options() : nullptr;
    return run_summary_chart(*r, o, {}, unit_, whole_process_ && whole_process_->isChecked());
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
    summary_model_->setTable(summaryTable());
    summary_view_->resizeColumnsToContents();
    summary_chart_->setData(summaryChart());
    if (!r) {
        summary_text_->clear();
        sample_->clear();
        TryItTarget none;
        none.unavailable = "No run yet: a LoRA or QLoRA run of a model folder can be tried here once it has finished.";
        try_it_->setTarget(none);
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
    summary_text_->setText(html);
    QString sample = r->done() ? qs(r->done()->string_field("sample")) : QString();
    if (sample.trimmed().isEmpty()) sample.clear();   // whitespace only: the note below says so
    if (sample_->toPlainText() != sample) sample_->setPlainText(sample);
    if (const RunOptions* o = loaded_ ? &loaded_->options : session() ? &session()->options() : nullptr)
        try_it_->setTarget(try_it_target(controller_->trainer().path, *o, *r, live));
    sample_->setPlaceholderText(!r->done() ? "The text the model generates at the end of the run appears here."
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
