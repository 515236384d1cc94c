// The run panel's live view: the memory, loss and throughput charts of the shown run and the
// trainer's log as it arrives.
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

// ------------------------------------------------------------------ live view ----

QWidget* RunPanel::buildCharts() {
    auto* split = new QSplitter(Qt::Horizontal);
    split->setChildrenCollapsible(false);
    memory_chart_ = new TimeChartWidget;
    memory_chart_->setObjectName("runMemoryChart");
    memory_chart_->setMinimumSize(360, 240);
    loss_chart_ = new TimeChartWidget;
    loss_chart_->setObjectName("runLossChart");
    throughput_chart_ = new TimeChartWidget;
    throughput_chart_->setObjectName("runThroughputChart");
    auto* right = new QSplitter(Qt::Vertical);
    right->setChildrenCollapsible(false);
    right->addWidget(loss_chart_);
    right->addWidget(throughput_chart_);
    split->addWidget(memory_chart_);
    split->addWidget(right);
    split->setStretchFactor(0, 5);
    split->setStretchFactor(1, 3);
    // The charts take the keyboard (Tab to one, arrows walk its samples); what the cursor
    // reads is said on this line, as the hover says it.
    auto* box = new QWidget;
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    auto* cursor = new QLabel("Tab to a chart, then ← → Home End walk its samples.");
    cursor->setObjectName("runChartCursor");
    cursor->setTextFormat(Qt::RichText);
    cursor->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    const std::pair<TimeChartWidget*, const char*> charts[] = {
        {memory_chart_, "Memory over time, per component"}, {loss_chart_, "Loss per step"}, {throughput_chart_, "Tokens per second"}};
    for (const auto& [chart, name] : charts) {
        chart->setAccessibleName(name);
        connect(chart, &TimeChartWidget::cursorTextChanged, cursor,
                [cursor](const QString& html) { cursor->setText(QString(html).replace("<br>", " · ")); });
    }
    v->addWidget(split, 1);
    v->addWidget(cursor);
    return box;
}


// ------------------------------------------------------------------ showing ----

const RunRecord* RunPanel::shownRecord() const {
    if (loaded_) return &loaded_->record;
    return session() ? &session()->record() : nullptr;
}

const RankTrack* RunPanel::shownRanks() const {
    if (loaded_) return &loaded_->ranks;
    return session() ? &session()->ranks() : nullptr;
}

fs::path RunPanel::shownFolder() const {
    if (loaded_) return loaded_->folder;
    return session() ? session()->folder() : fs::path();
}

const TimeChartData& RunPanel::memoryChart() const { return memory_data_; }
const TimeChartData& RunPanel::lossChart() const { return loss_data_; }
const TimeChartData& RunPanel::throughputChart() const { return throughput_data_; }

RunChartInputs RunPanel::chartInputs() const {
    RunChartInputs in;
    in.unit = unit_;
    in.max_points = 500;   // about two points per pixel column of the chart: more only costs repaints
    in.whole_process = whole_process_ && whole_process_->isChecked();
    if (loaded_) {
        in.record = &loaded_->record;
        in.rss = &loaded_->rss;
        in.options = &loaded_->options;
        in.device = &loaded_->device;
        in.ranks = &loaded_->ranks;
        in.title = "Memory · " + describe(loaded_->options);
    } else if (session()) {
        in.record = &session()->record();
        in.rss = &session()->rssSamples();
        in.options = &session()->options();
        in.device = &session()->deviceMemory();
        in.ranks = &session()->ranks();
        in.title = "Memory · " + describe(session()->options());
    }
    if (overlay_) {
        in.overlay = &overlay_->record;
        in.overlay_rss = &overlay_->rss;
        const RunOptions& b = overlay_->options;
        in.overlay_label = "B (" + method_text(b.method) + (b.method == Method::Full ? QString() : QString(" r%1").arg(b.rank)) +
                           QString(", %1×%2)").arg(b.seq).arg(b.batch);
    }
    return in;
}


QString RunPanel::logText() const { return log_->toPlainText(); }
QString RunPanel::sampleText() const { return sample_->toPlainText(); }
QString RunPanel::checkpointText() const {
    const RunRecord* r = shownRecord();
    return r && !r->checkpoints().empty() ? qs(r->checkpoints().back()) : QString();
}

void RunPanel::appendLog() {
    if (loaded_ || !session()) return;
    QStringList lines = session()->takeNewStderr();
    const auto& logs = session()->record().logs();
    for (; logs_seen_ < logs.size(); ++logs_seen_) {
        const QString l = qs(logs[logs_seen_]);
        lines << (l.startsWith("ignored:") ? "wingspan › " + l : "trainer › " + l);
    }
    if (!logs_dropped_noted_ && session()->record().dropped_log_lines() > 0) {
        logs_dropped_noted_ = true;
        lines << "wingspan › the trainer's log passed " + QString::number(RunRecord::kMaxLogLines) +
                     " lines; further lines are counted, not shown (events.jsonl in the run folder has them all)";
    }
    if (lines.isEmpty()) return;
    constexpr int kHead = 60, kTail = 340;
    if (lines.size() > kHead + kTail) {
        const qsizetype skipped = lines.size() - kHead - kTail;
        QStringList kept = lines.mid(0, kHead);
        kept << QString("wingspan › … %1 lines not shown here (stderr.log and events.jsonl in the run folder have them all)")
                    .arg(skipped);
        kept << lines.mid(lines.size() - kTail);
        lines = kept;
    }
    log_->appendPlainText(lines.join('\n'));
}

}  // namespace wingspan::ui
