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

#include "run/run_live_charts.hpp"
#include "run/run_status_line.hpp"
#include "run/run_panel_text.hpp"
#include "run/run_results_view.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

// ------------------------------------------------------------------ live view ----

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

const TimeChartData& RunPanel::memoryChart() const { return live_charts_->memory(); }
const TimeChartData& RunPanel::lossChart() const { return live_charts_->loss(); }
const TimeChartData& RunPanel::throughputChart() const { return live_charts_->throughput(); }

RunChartInputs RunPanel::chartInputs() const {
    RunChartInputs in;
    in.unit = unit_;
    in.max_points = 500;   // about two points per pixel column of the chart: more only costs repaints
    in.whole_process = status_line_ && status_line_->wholeProcess();
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


QString RunPanel::logText() const { return results_->log()->toPlainText(); }
QString RunPanel::sampleText() const { return results_->sampleText(); }
QString RunPanel::checkpointText() const {
    const RunRecord* r = shownRecord();
    return r && !r->checkpoints().empty() ? qs(r->checkpoints().back()) : QString();
}

void RunPanel::appendLog() {
    if (loaded_ || !session()) return;
    QStringList lines = session()->takeNewStderr();
    const auto& logs = session()->record().logs();
    for (; log_feed_.logs_seen < logs.size(); ++log_feed_.logs_seen) {
        const QString l = qs(logs[log_feed_.logs_seen]);
        lines << (l.startsWith("ignored:") ? "wingspan › " + l : "trainer › " + l);
    }
    if (!log_feed_.dropped_noted && session()->record().dropped_log_lines() > 0) {
        log_feed_.dropped_noted = true;
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
    results_->log()->appendPlainText(lines.join('\n'));
}

}  // namespace wingspan::ui
