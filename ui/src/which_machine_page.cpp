#include "wingspan/ui/which_machine_page.hpp"

#include <algorithm>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QTableView>
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
    data_row->addWidget(ep_label);
    data_row->addWidget(epochs_);
    data_row->addSpacing(8);
    data_row->addWidget(total_);
    data_row->addStretch();
    layout->addLayout(data_row);
    model_ = new TableModel(this);
    view_ = make_table_view(model_, "machineTable");
    layout->addWidget(view_, 1);
    layout->addWidget(hint_label("Max batch and max sequence: the largest values that still fit each machine, "
                                 "found by core's solver with everything else as above. Time and cost use the "
                                 "machine's estimated tokens/s and its rental price where it has one."));
    for (QSpinBox* s : {examples_, tokens_, epochs_})
        connect(s, &QSpinBox::valueChanged, this, [this] {
            if (!syncing_) emit datasetEdited();
        });
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
    total_->setText("= " + QString::fromStdString(format_count(std::int64_t(dataset_tokens))) + " tokens");
}

}  // namespace wingspan::ui
