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
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/widgets.hpp"

#include "run_panel_text.hpp"

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
    history_ = new QTreeWidget;
    history_->setObjectName("runHistory");
    history_->setAccessibleName("Past runs");
    history_->setRootIsDecorated(false);
    history_->setUniformRowHeights(true);
    history_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    history_->setHeaderLabels({"Run", "Settings", "Status", "Tensors peak", "Predicted", "Error", "RSS peak"});
    history_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    history_->header()->setSectionResizeMode(1, QHeaderView::Stretch);
    history_->header()->setStretchLastSection(false);
    connect(history_, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) {
        QString error;
        if (!openRun(fs::path(item->data(0, Qt::UserRole).toString().toStdString()), &error))
            QMessageBox::warning(this, "Open run", error);
    });
    auto* hb = new QGridLayout;
    auto selected = [this]() -> std::optional<fs::path> {
        auto items = history_->selectedItems();
        if (items.isEmpty()) return std::nullopt;
        return fs::path(items.first()->data(0, Qt::UserRole).toString().toStdString());
    };
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
    connect(compare, &QPushButton::clicked, this, [this, selected] {
        auto items = history_->selectedItems();
        if (items.size() == 2) {
            // Two selected: show the first, compare with the second.
            QString error;
            if (!openRun(fs::path(items[0]->data(0, Qt::UserRole).toString().toStdString()), &error) ||
                !overlayRun(fs::path(items[1]->data(0, Qt::UserRole).toString().toStdString()), &error))
                QMessageBox::warning(this, "Compare runs", error);
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
    try {
        return RunStore(controller_->storeRoot()).list();
    } catch (const std::exception&) {
        return {};
    }
}

void RunPanel::refreshHistory() {
    if (!history_) return;
    const QString selected =
        history_->currentItem() ? history_->currentItem()->data(0, Qt::UserRole).toString() : QString();
    history_->clear();
    const auto runs = historyRuns();
    int shown = 0;
    for (const auto& run : runs) {
        if (++shown > 500) break;
        auto* item = new QTreeWidgetItem(history_);
        item->setData(0, Qt::UserRole, qs(run.string()));
        item->setText(0, qs(run.filename().string()));
        // core's bounded, typed reader: a malformed record is one "unreadable" row, never fatal.
        const RunListing listing = RunStore::read_listing(run);
        if (listing.plan.is_object() && listing.plan.contains("options"))
            item->setText(1, describe(RunOptions::from_json(listing.plan["options"])));
        const bool live = session() && session()->isActive() && session()->folder() == run;
        if (live) {
            item->setText(2, "running");
        } else if (!listing.readable()) {
            item->setText(2, "unreadable");
            item->setToolTip(2, qs(listing.problem));
            item->setForeground(2, status_color(RunStatus::Failed, palette()));
        } else if (const auto& result = listing.result) {
            item->setText(2, qs(result->status));
            item->setToolTip(2, qs(result->status_text + (result->note.empty() ? "" : " (" + result->note + ")")));
            item->setForeground(2, status_color(result->run_status(), palette()));
            const std::int64_t measured = result->measured_peak, predicted = result->predicted_peak;
            if (measured > 0) item->setText(3, format_run_bytes(double(measured), unit_));
            if (predicted > 0) item->setText(4, format_run_bytes(double(predicted), unit_));
            if (result->reached_peak == false) {
                // Stopped before its first step: what it measured is where it got to.
                item->setText(5, "not reached");
                item->setToolTip(5, "The run ended before its first step: its peak was never reached, so there is no error to show");
            } else if (measured > 0 && predicted > 0) {
                item->setText(5, QString::asprintf("%+.1f %%", 100.0 * (double(predicted) - double(measured)) / double(measured)));
            }
            if (result->measured_rss_peak > 0) item->setText(6, format_run_bytes(double(result->measured_rss_peak), unit_));
        } else {
            item->setText(2, "failed (no result)");
            item->setToolTip(2, "The run ended together with its launcher; its events are kept");
            item->setForeground(2, status_color(RunStatus::Failed, palette()));
        }
        if (qs(run.string()) == selected) history_->setCurrentItem(item);
    }
    for (int c = 2; c < history_->columnCount(); ++c) history_->resizeColumnToContents(c);
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
        try {
            const json launcher = read_untrusted_json_file(folder / "launcher.json", 1 << 20);
            if (launcher.is_object() && launcher.contains("stop_message") && launcher["stop_message"].is_string())
                l.stop_message = qs(launcher["stop_message"].get<std::string>());
        } catch (const InputError&) {
            // no launcher notes (an older run, or unreadable): the run opens without them
        }
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
    log_->clear();
    QStringList lines;
    for (const auto& s : loaded_->record.logs()) lines << "trainer › " + qs(s);
    log_->setPlainText(loaded_->log + (loaded_->log.isEmpty() ? "" : "\n") + lines.join('\n'));
    refresh(true);
    refreshSummary();
    return true;
}

void RunPanel::showLive() {
    loaded_.reset();
    log_->clear();
    if (session()) {
        log_->appendPlainText("$ " + controller_->trainer().path + " " + session()->arguments().join(' '));
        QStringList lines;
        for (const QString& l : session()->stderrTail()) lines << l;
        for (const auto& l : session()->record().logs()) lines << "trainer › " + qs(l);
        log_->appendPlainText(lines.join('\n'));
        session()->takeNewStderr();
        logs_seen_ = session()->record().logs().size();
    }
    refresh(true);
    refreshSummary();
}

}  // namespace wingspan::ui
