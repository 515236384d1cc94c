// The run panel's history: every run in the run store, listed, opened and deleted.
#include <algorithm>
#include <charconv>

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
#include <QTreeView>
#include <QUrl>
#include <QVBoxLayout>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/widgets.hpp"

#include "run/run_panel_text.hpp"
#include "run/run_results_view.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

namespace {

// One line of rss.csv ("12.5,1048576"), parsed locale-independently.
bool parse_rss_line(std::string_view line, double& t, long long& bytes) {
    const size_t comma = line.find(',');
    if (comma == std::string_view::npos) return false;
    const char* end = line.data() + line.size();
    const auto a = std::from_chars(line.data(), line.data() + comma, t);
    const auto b = std::from_chars(line.data() + comma + 1, end, bytes);
    return a.ec == std::errc() && b.ec == std::errc() && std::isfinite(t);
}

}  // namespace

// ------------------------------------------------------------------ history ----

QWidget* RunPanel::buildHistoryTab() {
    auto* hist = new QWidget;
    auto* hv = new QVBoxLayout(hist);
    hv->setContentsMargins(4, 4, 4, 4);
    history_model_ = new RunHistoryModel(this);
    history_ = new QTreeView;
    history_->setObjectName("runHistory");
    history_->setAccessibleName("Past runs");
    history_->setModel(history_model_);
    history_->setRootIsDecorated(false);
    history_->setUniformRowHeights(true);
    history_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    history_->setSelectionBehavior(QAbstractItemView::SelectRows);
    history_->header()->setSectionResizeMode(RunHistoryModel::Run, QHeaderView::ResizeToContents);
    history_->header()->setSectionResizeMode(RunHistoryModel::Settings, QHeaderView::Stretch);
    history_->header()->setStretchLastSection(false);
    connect(history_, &QTreeView::doubleClicked, this, [this](const QModelIndex& index) {
        QString error;
        if (!openRun(history_model_->folder(index.row()), &error)) QMessageBox::warning(this, "Open run", error);
    });
    // The selected runs, in the order they were selected.
    auto chosen = [this] {
        std::vector<fs::path> runs;
        for (const QModelIndex& index : history_->selectionModel()->selectedRows()) runs.push_back(history_model_->folder(index.row()));
        return runs;
    };
    auto selected = [chosen]() -> std::optional<fs::path> {
        const auto runs = chosen();
        if (runs.empty()) return std::nullopt;
        return runs.front();
    };
    auto* hb = new QGridLayout;
    auto* open = new QPushButton("Open");
    open->setToolTip("Show this run's charts, summary and log");
    connect(open, &QPushButton::clicked, this, [this, selected] {
        if (auto p = selected()) {
            QString error;
            if (!openRun(*p, &error)) QMessageBox::warning(this, "Open run", error);
        }
    });
    auto* compare = new QPushButton("Compare with shown run");
    compare->setToolTip("Draw the selected run over the shown one, dotted (memory, loss, tokens/s)");
    connect(compare, &QPushButton::clicked, this, [this, chosen, selected] {
        const auto runs = chosen();
        if (runs.size() == 2) {
            // Two selected: show the first, compare with the second.
            QString error;
            if (!openRun(runs[0], &error) || !overlayRun(runs[1], &error)) QMessageBox::warning(this, "Compare runs", error);
            return;
        }
        if (auto p = selected()) {
            QString error;
            if (!overlayRun(*p, &error)) QMessageBox::warning(this, "Compare runs", error);
        }
    });
    auto* uncompare = new QPushButton("Clear comparison");
    connect(uncompare, &QPushButton::clicked, this, &RunPanel::clearOverlay);
    auto* folder = new QPushButton("Show folder");
    connect(folder, &QPushButton::clicked, this, [selected] {
        if (auto p = selected()) QDesktopServices::openUrl(QUrl::fromLocalFile(qs(p->string())));
    });
    auto* remove = new QPushButton("Delete…");
    connect(remove, &QPushButton::clicked, this, [this, selected] {
        auto p = selected();
        if (!p) return;
        if (session() && session()->isActive() && session()->folder() == *p) return;
        if (QMessageBox::question(this, "Delete run", "Delete " + qs(p->filename().string()) + " and everything in its folder?") !=
            QMessageBox::Yes)
            return;
        std::error_code ec;
        fs::remove_all(*p, ec);
        if (loaded_ && loaded_->folder == *p) showLive();
        refreshHistory();
    });
    auto* reload = new QPushButton("Refresh");
    connect(reload, &QPushButton::clicked, this, &RunPanel::refreshHistory);
    // Two rows of three: six buttons in one row made the Run tab 630 px wide, wider than it is
    // at 1280×720.
    QPushButton* const buttons[] = {open, compare, uncompare, folder, remove, reload};
    for (int k = 0; k < 6; ++k) hb->addWidget(buttons[k], k / 3, k % 3);
    hb->setColumnStretch(3, 1);
    hv->addWidget(history_, 1);
    hv->addLayout(hb);
    return hist;
}

// ------------------------------------------------------------------ history ----

std::vector<fs::path> RunPanel::historyRuns() const {
    return RunStore(controller_->storeRoot()).list();   // never throws: an unreadable store lists nothing
}

void RunPanel::refreshHistory() {
    if (!history_model_) return;
    const QModelIndex current = history_->currentIndex();
    const fs::path selected = current.isValid() ? history_model_->folder(current.row()) : fs::path();
    const fs::path live = isRunning() ? session()->folder() : fs::path();
    history_model_->reload(controller_->storeRoot(), live, unit_, [this](RunStatus s) { return status_color(s, palette()); });
    if (const int row = selected.empty() ? -1 : history_model_->rowOf(selected); row >= 0)
        history_->setCurrentIndex(history_model_->index(row, 0));
    for (int c = RunHistoryModel::Status; c < RunHistoryModel::ColumnCount; ++c) history_->resizeColumnToContents(c);
}

std::optional<RunPanel::Loaded> RunPanel::loadRun(const fs::path& folder, QString* error) const {
    try {
        Loaded l;
        l.folder = folder;
        l.record = load_panel_record(folder);
        l.label = qs(folder.filename().string());
        const json plan = RunStore::read_plan(folder);
        if (plan.is_object() && plan.contains("options")) l.options = RunOptions::from_json(plan["options"]);
        // rss.csv: "seconds,bytes" per line, written in the C locale; read the same way, bounded.
        for_each_line_of_regular_file(
            folder / "rss.csv", kMaxRunEventsBytes, 256,
            [&](std::string_view line) {
                double t = 0;
                long long bytes = 0;
                if (!parse_rss_line(line, t, bytes)) return;
                l.rss.push_back({t, double(bytes)});
                if (l.rss.size() > RunSession::kRssSamples * 2) {
                    std::vector<QPointF> merged;
                    for (size_t i = 0; i + 1 < l.rss.size(); i += 2)
                        merged.push_back(l.rss[i].y() >= l.rss[i + 1].y() ? l.rss[i] : l.rss[i + 1]);
                    l.rss = std::move(merged);
                }
            },
            /*missing_is_empty=*/true);
        // Launcher notes: absent in older runs; unreadable, the run opens without them.
        const auto text = try_read_regular_file(folder / "launcher.json", 1 << 20);
        const auto launcher = text ? try_parse_untrusted_json(*text) : std::nullopt;
        if (launcher && launcher->is_object() && launcher->contains("stop_message") && (*launcher)["stop_message"].is_string())
            l.stop_message = qs((*launcher)["stop_message"].get<std::string>());
        l.log = read_tail(folder / "stderr.log", 256 * 1024);
        l.device = DeviceMemoryTrack::from_run(folder);
        l.ranks = RankTrack::from_run(folder);
        return l;
    } catch (const std::exception& e) {
        if (error) *error = QString("cannot open the run %1: %2").arg(qs(folder.string()), e.what());
        return std::nullopt;
    }
}

bool RunPanel::openRun(const fs::path& folder, QString* error) {
    if (session() && session()->isActive() && session()->folder() == folder) {
        showLive();
        return true;
    }
    auto l = loadRun(folder, error);
    if (!l) return false;
    loaded_ = std::move(l);
    if (overlay_ && overlay_->folder == folder) overlay_.reset();
    setSettingsVisible(false);
    results_->log()->clear();
    QStringList lines;
    for (const auto& s : loaded_->record.logs()) lines << "trainer › " + qs(s);
    results_->log()->setPlainText(loaded_->log + (loaded_->log.isEmpty() ? "" : "\n") + lines.join('\n'));
    refresh(true);
    refreshSummary();
    return true;
}

void RunPanel::showLive() {
    loaded_.reset();
    results_->log()->clear();
    if (session()) {
        results_->log()->appendPlainText("$ " + controller_->trainer().path + " " + session()->arguments().join(' '));
        QStringList lines;
        for (const QString& l : session()->stderrTail()) lines << l;
        for (const auto& l : session()->record().logs()) lines << "trainer › " + qs(l);
        results_->log()->appendPlainText(lines.join('\n'));
        session()->takeNewStderr();
        log_feed_.logs_seen = session()->record().logs().size();
    }
    refresh(true);
    refreshSummary();
}

}  // namespace wingspan::ui
