// The run history as a Qt item model (run_history_model.hpp).
#include "wingspan/ui/run_history_model.hpp"

#include "wingspan/ui/run_charts.hpp"

#include "run/run_panel_text.hpp"

namespace fs = std::filesystem;

namespace wingspan::ui {

using namespace run_text;

namespace {

// The columns of a run that wrote its result.json.
void fill_result(std::array<QString, RunHistoryModel::ColumnCount>& text, std::array<QString, RunHistoryModel::ColumnCount>& tip,
                 const RunResultFile& result, ByteUnit unit) {
    using M = RunHistoryModel;
    text[M::Status] = qs(result.status);
    tip[M::Status] = qs(result.status_text + (result.note.empty() ? "" : " (" + result.note + ")"));
    const std::int64_t measured = result.measured_peak, predicted = result.predicted_peak;
    if (measured > 0) text[M::TensorsPeak] = format_run_bytes(double(measured), unit);
    if (predicted > 0) text[M::Predicted] = format_run_bytes(double(predicted), unit);
    if (result.reached_peak == false) {
        // Stopped before its first step: what it measured is where it got to.
        text[M::Error] = "not reached";
        tip[M::Error] = "The run ended before its first step: its peak was never reached, so there is no error to show";
    } else if (measured > 0 && predicted > 0) {
        text[M::Error] = QString::asprintf("%+.1f %%", 100.0 * (double(predicted) - double(measured)) / double(measured));
    }
    if (result.measured_rss_peak > 0) text[M::RssPeak] = format_run_bytes(double(result.measured_rss_peak), unit);
}

}  // namespace

RunHistoryModel::RunHistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunHistoryModel::reload(const fs::path& store_root, const fs::path& live_folder, ByteUnit unit, const StatusColour& colour) {
    std::vector<fs::path> runs;
    try {
        runs = RunStore(store_root).list();
    } catch (const std::exception&) {
        runs.clear();   // no store yet (or unreadable): an empty history
    }
    std::vector<Row> rows;
    for (const fs::path& run : runs) {
        if (rows.size() >= size_t(kMaxRows)) break;
        Row row;
        row.folder = run;
        row.text[Run] = qs(run.filename().string());
        // core's bounded, typed reader: a malformed record is one "unreadable" row, never fatal.
        const RunListing listing = RunStore::read_listing(run);
        if (listing.plan.is_object() && listing.plan.contains("options"))
            row.text[Settings] = describe(RunOptions::from_json(listing.plan["options"]));
        if (!live_folder.empty() && live_folder == run) {
            row.text[Status] = "running";
        } else if (!listing.readable()) {
            row.text[Status] = "unreadable";
            row.tip[Status] = qs(listing.problem);
            row.status_colour = colour(RunStatus::Failed);
        } else if (const auto& result = listing.result) {
            fill_result(row.text, row.tip, *result, unit);
            row.status_colour = colour(result->run_status());
        } else {
            row.text[Status] = "failed (no result)";
            row.tip[Status] = "The run ended together with its launcher; its events are kept";
            row.status_colour = colour(RunStatus::Failed);
        }
        rows.push_back(std::move(row));
    }
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
}

fs::path RunHistoryModel::folder(int row) const {
    return row >= 0 && row < int(rows_.size()) ? rows_[size_t(row)].folder : fs::path();
}

int RunHistoryModel::rowOf(const fs::path& folder) const {
    for (size_t i = 0; i < rows_.size(); ++i)
        if (rows_[i].folder == folder) return int(i);
    return -1;
}

int RunHistoryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

int RunHistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunHistoryModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(rows_.size()) || index.column() >= ColumnCount) return {};
    const Row& row = rows_[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole: return row.text[size_t(index.column())];
        case Qt::ToolTipRole: {
            const QString& tip = row.tip[size_t(index.column())];
            return tip.isEmpty() ? QVariant() : QVariant(tip);
        }
        case Qt::ForegroundRole:
            return index.column() == Status && row.status_colour ? QVariant(*row.status_colour) : QVariant();
        case FolderRole: return index.column() == Run ? QVariant(qs(row.folder.string())) : QVariant();
        default: return {};
    }
}

QVariant RunHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    static const char* const names[ColumnCount] = {"Run", "Settings", "Status", "Tensors peak", "Predicted", "Error", "RSS peak"};
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount) return {};
    return QString(names[section]);
}

}  // namespace wingspan::ui
