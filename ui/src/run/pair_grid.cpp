#include "run/pair_grid.hpp"

#include <algorithm>

#include <QGridLayout>
#include <QLabel>

namespace wingspan::ui {

namespace {
constexpr int kWidest = 4;   // pairs a row at most
}

PairGrid::PairGrid(QWidget* parent) : QWidget(parent), grid_(new QGridLayout(this)) {
    grid_->setContentsMargins(4, 0, 4, 0);
    grid_->setHorizontalSpacing(8);
    grid_->setVerticalSpacing(4);
}

void PairGrid::addPair(QLabel* label, QWidget* field, int span) {
    if (label) label->setParent(this);
    field->setParent(this);
    cells_.push_back({label, field, std::clamp(span, 1, kWidest), false});
    min_width_.clear();
    arrange(per_row_ ? per_row_ : kWidest);
}

void PairGrid::addWholeRow(QLabel* label, QWidget* field) {
    addPair(label, field);
    cells_.back().span = 0;
}

void PairGrid::endRow() {
    if (!cells_.empty()) cells_.back().row_end = true;
}

void PairGrid::arrange(int per_row) {
    while (QLayoutItem* item = grid_->takeAt(0)) delete item;   // the widgets stay, only their places go
    for (int c = 0; c < 2 * kWidest; ++c) grid_->setColumnStretch(c, 0);
    int row = 0, slot = 0;
    for (const Cell& cell : cells_) {
        const int width = cell.span == 0 ? per_row : std::min(cell.span, per_row);
        if (slot > 0 && slot + width > per_row) {
            ++row;
            slot = 0;
        }
        const int column = 2 * slot;
        if (cell.label) {
            grid_->addWidget(cell.label, row, column);
            grid_->addWidget(cell.field, row, column + 1, 1, 2 * width - 1);
        } else {
            grid_->addWidget(cell.field, row, column, 1, 2 * width);
        }
        slot += width;
        if (slot >= per_row || cell.span == 0 || (cell.row_end && per_row == kWidest)) {
            ++row;
            slot = 0;
        }
    }
    for (int s = 0; s < per_row; ++s) grid_->setColumnStretch(2 * s + 1, 1);
    per_row_ = per_row;
    grid_->invalidate();
}

int PairGrid::widthFor(int per_row) {
    if (min_width_.empty()) {
        // Measured in each arrangement, then back to the one shown.
        const int shown = per_row_;
        min_width_.assign(kWidest + 1, 0);
        for (int n = 1; n <= kWidest; ++n) {
            arrange(n);
            grid_->activate();
            min_width_[size_t(n)] = grid_->minimumSize().width();
        }
        arrange(shown ? shown : kWidest);
    }
    return min_width_[size_t(per_row)];
}

QSize PairGrid::minimumSizeHint() const {
    QSize s = QWidget::minimumSizeHint();
    if (!min_width_.empty()) s.setWidth(min_width_[1]);
    return s;
}

void PairGrid::reflow() {
    if (reflowing_) return;
    reflowing_ = true;
    int n = kWidest;
    while (n > 1 && widthFor(n) > width()) n = n > 2 ? 2 : 1;
    if (n != per_row_) {
        arrange(n);
        updateGeometry();   // the height changes with the rows
    }
    reflowing_ = false;
}

void PairGrid::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    widthFor(1);
    updateGeometry();   // the minimum width is the one-pair arrangement's from now on
    reflow();
}

void PairGrid::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    reflow();
}

}  // namespace wingspan::ui
