#pragma once
// Small pieces the window is made of: the table model over core's Table, light and dark
// palettes, the application icon, and the export dialog.
#include <utility>

#include <QAbstractTableModel>
#include <QDialog>
#include <QIcon>
#include <QPalette>

#include "wingspan/scenario.hpp"
#include "wingspan/ui/export.hpp"

class QSpinBox;
class QDoubleSpinBox;
class QLineEdit;
class QCheckBox;
class QLabel;

namespace wingspan::ui {

// Registers the bundled resources (icon, stylesheet); safe to call more than once.
void init_resources();
QIcon app_icon();

enum class Theme { System, Light, Dark };
QString theme_id(Theme t);              // "system", "light", "dark"
Theme parse_theme(const QString& id);   // unknown: System
QPalette light_palette();
QPalette dark_palette();
// Fusion style with the chosen palette on the whole application.
void apply_theme(Theme t);

// A dialog whose word-wrapped text just changed: as tall as that text needs at its width (its
// layout's height for width), within the screen. A dialog sized once from sizeHint() cut a
// third line of text off (issue 32, item 8).
void grow_to_text(QWidget* dialog);

// A read-only view of a core Table: the rounded text, the exact value in the tooltip,
// verdict cells coloured.
class TableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    using QAbstractTableModel::QAbstractTableModel;
    void setTable(Table t);
    const Table& table() const { return table_; }
    // Shown turned a quarter: the table's rows become columns (headed by each row's first
    // cell) and its headers the first column. A wide, short table (the Methods tab's three
    // methods × 17 components and verdicts) then fits a narrow view and scrolls down, not
    // sideways (issue 32). The Table itself, and so every export, keeps its shape.
    void setTransposed(bool on);
    bool transposed() const { return transposed_; }
    // Columns a narrow view hides (QTableView::setColumnHidden) whose values the row's first
    // cell then says on hover ("Framework: Apple MLX"); the Table, and so every export, keeps
    // them. The which-machine tab's 11 columns scrolled sideways at 1280×720 (issue 32).
    void setHoverColumns(std::vector<int> columns) { hover_columns_ = std::move(columns); }
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;

private:
    // The Table's own row and column behind the view's `index`; {-1, -1} for the header
    // column of a transposed view.
    std::pair<int, int> source(const QModelIndex& index) const;

    Table table_;
    bool transposed_ = false;
    std::vector<int> hover_columns_;
};

// File, size and DPI for a chart export; the format follows the file's suffix.
class ExportDialog : public QDialog {
    Q_OBJECT
public:
    ExportDialog(const QString& what, const QString& suggested_path, bool chart, QWidget* parent = nullptr);
    QString path() const;
    ImageOptions options() const;

private:
    QLineEdit* path_;
    QSpinBox* width_ = nullptr;
    QSpinBox* height_ = nullptr;
    QSpinBox* dpi_ = nullptr;
    QCheckBox* dark_ = nullptr;
    bool chart_;
};

}  // namespace wingspan::ui
