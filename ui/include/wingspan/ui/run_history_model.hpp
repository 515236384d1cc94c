#pragma once
// The run history as a Qt item model (issue 27): one row per run folder of a RunStore, in the
// store's order (newest first), read through core's bounded, typed listing; a malformed record
// is one "unreadable" row, never fatal. The run panel shows it in a QTreeView.
#include <array>
#include <functional>
#include <filesystem>
#include <optional>
#include <vector>

#include <QAbstractTableModel>
#include <QColor>
#include <QString>

#include "wingspan/run_record.hpp"
#include "wingspan/plan.hpp"

namespace wingspan::ui {

class RunHistoryModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Run, Settings, Status, TensorsPeak, Predicted, Error, RssPeak, ColumnCount };
    static constexpr int kMaxRows = 500;   // the newest; a store of thousands stays quick to list
    // Column Run's Qt::UserRole: the run's folder as a string.
    static constexpr int FolderRole = Qt::UserRole;

    explicit RunHistoryModel(QObject* parent = nullptr);

    // The colour of each outcome in the Status column.
    using StatusColour = std::function<QColor(RunStatus)>;
    // Reads the store's runs again. `live_folder`: the run being trained (listed as "running").
    void reload(const std::filesystem::path& store_root, const std::filesystem::path& live_folder, ByteUnit unit,
                const StatusColour& colour);

    std::filesystem::path folder(int row) const;
    int rowOf(const std::filesystem::path& folder) const;   // -1 when not listed

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        std::filesystem::path folder;
        std::array<QString, ColumnCount> text;
        std::array<QString, ColumnCount> tip;
        std::optional<QColor> status_colour;
    };
    std::vector<Row> rows_;
};

}  // namespace wingspan::ui
