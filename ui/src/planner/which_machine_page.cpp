#include "wingspan/ui/which_machine_page.hpp"

#include <algorithm>
#include <array>

#include <QEvent>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace wingspan::ui {

namespace {

QLabel* hint_label(const QString& text) {
    auto* l = new QLabel(text);
    l->setWordWrap(true);
    QFont f = l->font();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    l->setFont(f);
    l->setForegroundRole(QPalette::PlaceholderText);
    return l;
}

// machine_table's framework, usable, margin, max sequence and tokens/s columns.
constexpr std::array<int, 5> kHoverColumns = {1, 3, 5, 7, 8};

}  // namespace

QTableView* make_table_view(TableModel* model, const QString& object_name) {
    auto* view = new QTableView;
    view->setObjectName(object_name);
    model->setParent(view);
    view->setModel(model);
    view->setAlternatingRowColors(true);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->verticalHeader()->setVisible(false);
    view->horizontalHeader()->setStretchLastSection(false);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view->setWordWrap(false);
    view->setTextElideMode(Qt::ElideRight);
    return view;
}

WhichMachinePage::WhichMachinePage(QWidget* parent) : QWidget(parent) {
    setObjectName("whichMachinePage");
    auto* layout = new QVBoxLayout(this);
    auto* data_row = new QHBoxLayout;
    auto* title = new QLabel("<b>Data set</b>");
    examples_ = new QSpinBox;
    examples_->setObjectName("examples");
    examples_->setRange(1, 100000000);
    examples_->setGroupSeparatorShown(true);
    examples_->setToolTip("Training examples. Changes time and cost only, never memory.");
    examples_->setAccessibleName("Training examples");
    tokens_ = new QSpinBox;
    tokens_->setObjectName("tokensPerExample");
    tokens_->setRange(1, 10000000);
    tokens_->setGroupSeparatorShown(true);
    tokens_->setToolTip("Average tokens per example (prompt + answer). Changes time and cost only.");
    tokens_->setAccessibleName("Tokens per example");
    epochs_ = new QSpinBox;
    epochs_->setObjectName("epochs");
    epochs_->setRange(1, 1000);
    epochs_->setToolTip("Passes over the data set. Changes time and cost only.");
    epochs_->setAccessibleName("Epochs");
    auto* ex_label = new QLabel("E&xamples");
    ex_label->setBuddy(examples_);
    auto* tok_label = new QLabel("× t&okens each");
    tok_label->setBuddy(tokens_);
    auto* ep_label = new QLabel("× e&pochs");
    ep_label->setBuddy(epochs_);
    total_ = new QLabel;
    total_->setObjectName("datasetTotal");
    data_row->addWidget(title);
    data_row->addSpacing(8);
    data_row->addWidget(ex_label);
    data_row->addWidget(examples_);
    data_row->addWidget(tok_label);
    data_row->addWidget(tokens_);
    data_row->addStretch();
    // The epochs and the total on a second line: on one, the row asked for 684 px and the tab
    // widened a 1280-pixel window past the screen (the window's minimum is its widest tab's).
    auto* epochs_row = new QHBoxLayout;
    epochs_row->addWidget(ep_label);
    epochs_row->addWidget(epochs_);
    epochs_row->addSpacing(8);
    epochs_row->addWidget(total_);
    epochs_row->addStretch();
    grid_view_ = new QTableWidget;
    grid_view_->setObjectName("machineGrid");
    grid_view_->setAccessibleName("Which machine trains what: winner per model size and method");
    grid_view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    grid_view_->setSelectionMode(QAbstractItemView::SingleSelection);
    grid_view_->setWordWrap(true);
    grid_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    grid_view_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    grid_view_->setToolTip("Click a cell (or press Enter on it) to load that plan");
    grid_view_->viewport()->installEventFilter(this);
    connect(grid_view_, &QTableWidget::cellClicked, this, &WhichMachinePage::cellChosen);
    connect(grid_view_, &QTableWidget::cellActivated, this, &WhichMachinePage::cellChosen);
    grid_caption_ = hint_label(QString());
    grid_caption_->setObjectName("machineGridCaption");
    auto* grid_box = new QWidget;
    auto* gv = new QVBoxLayout(grid_box);
    gv->setContentsMargins(0, 0, 0, 0);
    auto* grid_title = new QLabel("<b>Which machine trains what</b> — every size of this model's family, every method");
    grid_title->setWordWrap(true);   // its width is not the window's minimum
    gv->addWidget(grid_title);
    auto* compare_row = new QHBoxLayout;
    auto* compare_label = new QLabel("&Compare");
    compare_row->addWidget(compare_label);
    for (int i = 0; i < 2; ++i) {
        compare_[i] = new QComboBox;
        compare_[i]->setObjectName(i == 0 ? "compareA" : "compareB");
        compare_[i]->setAccessibleName(i == 0 ? "First machine compared" : "Second machine compared");
        compare_[i]->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        compare_[i]->setMinimumContentsLength(14);   // long names elide in the box, not widen the tab
        compare_[i]->setToolTip("The grid compares exactly these two machines (the course's RTX 4090 and Mac Studio "
                                "M3 Ultra by default), whatever the Machines panel ticks");
        if (i == 1) compare_row->addWidget(new QLabel("with"));
        compare_row->addWidget(compare_[i], 1);
        connect(compare_[i], &QComboBox::currentIndexChanged, this, [this] {
            if (!syncing_) emit comparedChanged();
        });
    }
    compare_label->setBuddy(compare_[0]);
    gv->addLayout(compare_row);
    gv->addWidget(grid_view_, 1);
    gv->addWidget(grid_caption_);

    model_ = new TableModel(this);
    view_ = make_table_view(model_, "machineTable");
    // Six columns at 1280×720, none sideways (issue 32): the framework, usable memory, margin,
    // longest sequence and tokens/s on hover over the machine's name (the export keeps all 11);
    // time and cost share the rest of the width and wrap.
    model_->setHoverColumns({kHoverColumns.begin(), kHoverColumns.end()});
    view_->setWordWrap(true);
    view_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    auto* table_box = new QWidget;
    auto* tv = new QVBoxLayout(table_box);
    tv->setContentsMargins(0, 0, 0, 0);
    tv->addWidget(new QLabel("<b>This plan on each machine</b>"));
    tv->addLayout(data_row);
    tv->addLayout(epochs_row);
    tv->addWidget(view_, 1);
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(grid_box);
    split->addWidget(table_box);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);
    layout->addWidget(hint_label("Max batch and max sequence: the largest values that still fit each machine, "
                                 "found by core's solver with everything else as above. Time and cost use the "
                                 "machine's estimated tokens/s and its rental price where it has one; \"likely\" "
                                 "is the spread of measured against predicted throughput (bench/results/throughput.md)."));
    for (QSpinBox* s : {examples_, tokens_, epochs_})
        connect(s, &QSpinBox::valueChanged, this, [this] {
            if (!syncing_) emit datasetEdited();
        });
}

void WhichMachinePage::setMachineChoices(const ProfileLibrary& lib) {
    const std::vector<std::string> keep = compared();
    syncing_ = true;
    for (QComboBox* box : compare_) {
        box->clear();
        for (const auto& m : lib.machines())
            box->addItem(QString::fromStdString(short_machine_name(m)), QString::fromStdString(m.id));
    }
    syncing_ = false;
    setCompared(keep.empty() ? lesson_compared_machines() : keep);
}

std::vector<std::string> WhichMachinePage::compared() const {
    std::vector<std::string> ids;
    for (QComboBox* box : compare_)
        if (box->currentIndex() >= 0) ids.push_back(box->currentData().toString().toStdString());
    return ids;
}

void WhichMachinePage::setCompared(const std::vector<std::string>& ids) {
    syncing_ = true;
    for (int i = 0; i < 2; ++i) {
        const std::string want = size_t(i) < ids.size() ? ids[size_t(i)] : lesson_compared_machines()[size_t(i)];
        int at = compare_[i]->findData(QString::fromStdString(want));
        if (at < 0) at = compare_[i]->findData(QString::fromStdString(lesson_compared_machines()[size_t(i)]));
        compare_[i]->setCurrentIndex(at >= 0 ? at : std::min(i, compare_[i]->count() - 1));
    }
    syncing_ = false;
    emit comparedChanged();
}

void WhichMachinePage::setGrid(MachineGrid grid, ByteUnit unit) {
    grid_ = std::move(grid);
    grid_view_->clear();
    grid_view_->setRowCount(int(grid_.cells.size()));
    grid_view_->setColumnCount(int(grid_.column_labels.size()));
    QStringList headers, rows;
    for (const auto& c : grid_.column_labels) headers << QString::fromStdString(c);
    for (const auto& r : grid_.row_labels) rows << QString::fromStdString(r);
    grid_view_->setHorizontalHeaderLabels(headers);
    grid_view_->setVerticalHeaderLabels(rows);
    const bool dark = palette().color(QPalette::Base).lightness() < 128;
    for (int r = 0; r < int(grid_.cells.size()); ++r)
        for (int c = 0; c < int(grid_.cells[size_t(r)].size()); ++c) {
            const GridCell& cell = grid_.cells[size_t(r)][size_t(c)];
            const QString full = QString::fromStdString(grid_cell_text(cell, unit));
            // Two short lines: who wins and by how much, then the time; the rest in the tooltip.
            QString text = full;
            if (const int dot = full.indexOf(" · "); dot > 0) text = full.left(dot) + "\n" + full.mid(dot + 3);
            auto* item = new QTableWidgetItem(text);
            item->setToolTip(QString::fromStdString(grid_cell_details(cell, unit)) + "\n\nClick to load this plan.");
            QFont f = item->font();
            f.setBold(cell.winner != nullptr);
            item->setFont(f);
            const QColor tint = !cell.winner ? QColor(dark ? "#4a2a22" : "#fbe3da")
                                : cell.fit == Fit::Tight ? QColor(dark ? "#4a3a1c" : "#fdf0d5")
                                                         : QColor(dark ? "#1e3d33" : "#dcf2e9");
            item->setBackground(tint);
            grid_view_->setItem(r, c, item);
        }
    grid_caption_->setText(QString::fromStdString(grid_.caption));
    fitRows();
}

void WhichMachinePage::fitRows() {
    if (fitting_rows_) return;
    fitting_rows_ = true;
    QHeaderView* rows = grid_view_->verticalHeader();
    rows->setSectionResizeMode(QHeaderView::ResizeToContents);
    rows->resizeSections(QHeaderView::ResizeToContents);
    // Stretch shares the height equally: only where the tallest row's text fits its share.
    int tallest = 0;
    for (int r = 0; r < grid_view_->rowCount(); ++r) tallest = std::max(tallest, rows->sectionSize(r));
    if (grid_view_->rowCount() > 0 && tallest * grid_view_->rowCount() <= grid_view_->viewport()->height())
        rows->setSectionResizeMode(QHeaderView::Stretch);
    fitting_rows_ = false;
}

bool WhichMachinePage::eventFilter(QObject* watched, QEvent* event) {
    if (watched == grid_view_->viewport() && event->type() == QEvent::Resize) fitRows();
    return QWidget::eventFilter(watched, event);
}

void WhichMachinePage::showDataset(const Dataset& d) {
    syncing_ = true;
    examples_->setValue(int(std::min<std::int64_t>(d.examples, examples_->maximum())));
    tokens_->setValue(int(std::min<std::int64_t>(d.tokens_per_example, tokens_->maximum())));
    epochs_->setValue(int(std::min<std::int64_t>(d.epochs, epochs_->maximum())));
    syncing_ = false;
}

void WhichMachinePage::readDataset(Dataset& d) const {
    d.examples = examples_->value();
    d.tokens_per_example = tokens_->value();
    d.epochs = epochs_->value();
}

void WhichMachinePage::setMachineTable(Table t, double dataset_tokens) {
    model_->setTable(std::move(t));
    // Again after each reset of the model (a new shape forgets the header's sections).
    for (int c : kHoverColumns) view_->setColumnHidden(c, true);
    for (int c : {9, 10})   // time and cost
        if (c < model_->columnCount()) view_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::Stretch);
    total_->setText("= " + QString::fromStdString(format_count(std::int64_t(dataset_tokens))) + " tokens");
}

}  // namespace wingspan::ui
