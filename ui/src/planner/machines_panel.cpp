#include "wingspan/ui/machines_panel.hpp"

#include <algorithm>

#include <QComboBox>
#include <QEvent>
#include <QHash>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QStyledItemDelegate>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

constexpr char kFrameworkTip[] =
    "The framework this machine trains with: its fixed costs (the hatched overhead) and its\n"
    "speed. Defaults to the machine's usual one (CUDA, MLX, CPU).";

// "Hugging Face transformers + PEFT + bitsandbytes (CUDA)" -> "Hugging Face transformers": the
// name before its list of parts and its parenthesis, so the box reads whole in a narrow panel.
QString short_framework_name(const std::string& name) {
    const QString s = qs(name).section(" (", 0, 0).section(" + ", 0, 0).trimmed();
    return s.isEmpty() ? qs(name) : s;
}

int machine_rank(const MachineProfile& m) {
    // GPUs first, then unified memory, then CPU-only; the user's own last.
    const int kind = m.kind == MachineKind::Gpu ? 0 : m.kind == MachineKind::Unified ? 1 : 2;
    return (m.user_defined ? 10 : 0) + kind;
}

// The name column's rows as tall as their name wrapped at the column's width (QTreeView asks a
// delegate for a row's height without the column's width, so a wrapped name would be cut).
// A row's height is asked again whenever any of its cells changes: Qt's QTreeView::dataChanged
// (qtbase src/widgets/itemviews/qtreeview.cpp) refreshes the row's height cache from the size
// hint. The verdicts change the second column of all 34 rows ~11 times a second while a slider
// moves, and wrapping each unchanged name again was most of that update's time, so the name's
// size is remembered per name and column width until the font or style changes.
class WrappedNameDelegate : public QStyledItemDelegate {
public:
    explicit WrappedNameDelegate(QTreeWidget* tree) : QStyledItemDelegate(tree), tree_(tree) {
        tree_->installEventFilter(this);
    }

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        if (index.column() != 0) return QStyledItemDelegate::sizeHint(option, index);
        const int column_width = tree_->columnWidth(0);
        const QString name = index.data(Qt::DisplayRole).toString();
        if (auto it = names_.constFind(name); it != names_.constEnd() && it->width == column_width) return it->size;
        ++wraps_;
        QSize size = QStyledItemDelegate::sizeHint(option, index);
        QStyleOptionViewItem o = option;
        initStyleOption(&o, index);
        o.rect = QRect(0, 0, column_width, size.height());
        const QStyle* style = tree_->style();
        // The text's room: the cell less its check box, less the delegate's margin each side.
        const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, tree_) + 1;
        const int room = style->subElementRect(QStyle::SE_ItemViewItemText, &o, tree_).width() - 2 * margin;
        const int text = o.fontMetrics.boundingRect(QRect(0, 0, std::max(1, room), 1 << 16), Qt::TextWordWrap, o.text).height();
        size.setHeight(std::max(size.height(), text + size.height() - o.fontMetrics.height()));
        names_.insert(name, {column_width, size});
        return size;
    }

    // How many times a name was wrapped to measure its row.
    int wraps() const { return wraps_; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        // The tree's own events are only watched here, never handled: the base class's filter
        // is for editors and would take the tree's Tab and Return for an editor's.
        if (watched != tree_) return QStyledItemDelegate::eventFilter(watched, event);
        if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) names_.clear();
        return false;
    }

private:
    struct Measured {
        int width;   // the column's width it was wrapped at
        QSize size;
    };
    QTreeWidget* tree_;
    mutable QHash<QString, Measured> names_;
    mutable int wraps_ = 0;
};

}  // namespace

MachinesPanel::MachinesPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("machinesPanel");
    setMinimumWidth(260);
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(6, 8, 10, 8);
    auto* title = new QLabel("Mac&hines");
    QFont tf = title->font();
    tf.setBold(true);
    title->setFont(tf);
    list_ = new QTreeWidget;
    list_->setObjectName("machineList");
    title->setBuddy(list_);
    list_->setColumnCount(2);
    list_->setHeaderLabels({"Machine", "Verdict"});
    list_->setRootIsDecorated(false);
    // A name too long for the panel wraps onto a second line, whole ("Mac Studio M3 Ultra /
    // 96 GB"): cut in its middle, "Mac Studi…tra 96 GB" no longer said which one (issue 32).
    // Rows are then of two heights, so not uniform.
    list_->setWordWrap(true);
    list_->setUniformRowHeights(false);
    auto* names = new WrappedNameDelegate(list_);
    list_->setItemDelegate(names);
    connect(list_->header(), &QHeaderView::sectionResized, names, [names](int column) {
        if (column == 0) emit names->sizeHintChanged(QModelIndex());   // the rows' heights again
    });
    list_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    // A fixed verdict column: measuring every row's text on each slider move costs a frame.
    list_->header()->setSectionResizeMode(1, QHeaderView::Fixed);
    list_->header()->resizeSection(1, list_->fontMetrics().horizontalAdvance("✗ short 1,234.5 GB") + 14);
    list_->header()->setStretchLastSection(false);
    list_->setToolTip("Tick the machines to compare. Space toggles the selected row.");
    connect(list_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem*, int column) {
        if (column == 0 && !syncing_) emit selectionEdited();
    });
    connect(list_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
        const bool mine = item && item->data(0, Qt::UserRole + 1).toBool();
        edit_->setEnabled(mine);
        remove_->setEnabled(mine);
        showFrameworkOf(item);
    });
    v->addWidget(title);
    v->addWidget(list_, 1);

    // The framework the selected machine computes with (its usual one unless chosen here). The
    // label sits above the box so the box has the panel's whole width at laptop sizes.
    auto* fw_row = new QVBoxLayout;
    fw_row->setSpacing(2);
    framework_label_ = new QLabel("&Framework:");
    framework_ = new QComboBox;
    framework_->setObjectName("machineFramework");
    framework_->setAccessibleName("Framework of the selected machine");
    framework_->setToolTip(kFrameworkTip);
    framework_->setEnabled(false);
    framework_->setPlaceholderText("Select a machine above");
    framework_label_->setBuddy(framework_);
    fw_row->addWidget(framework_label_);
    fw_row->addWidget(framework_);
    v->addLayout(fw_row);
    // The box names the chosen framework briefly; its tooltip names it in full.
    connect(framework_, &QComboBox::currentIndexChanged, this, [this](int index) {
        const QString full = index >= 0 ? framework_->itemData(index, Qt::ToolTipRole).toString() : QString();
        framework_->setToolTip(QString(kFrameworkTip) + (full.isEmpty() ? QString() : "\n\nNow: " + full));
    });
    connect(framework_, &QComboBox::activated, this, [this](int index) {
        auto* item = list_->currentItem();
        if (!item || syncing_) return;
        const std::string id = item->data(0, Qt::UserRole).toString().toStdString();
        const std::string fw = framework_->itemData(index).toString().toStdString();
        if (fw.empty()) frameworks_.erase(id);
        else frameworks_[id] = fw;
        emit selectionEdited();
    });

    auto* sel = new QHBoxLayout;
    auto* all = new QPushButton("All");
    all->setToolTip("Select every machine");
    auto* none = new QPushButton("None");
    auto* lesson = new QPushButton("Lesson's");
    lesson->setToolTip("The lessons' machines: RTX 4090, Mac Studio M3 Ultra, T4, A100 80GB, a CPU laptop and this machine");
    connect(all, &QPushButton::clicked, this, [this] { setAllChecked(true); });
    connect(none, &QPushButton::clicked, this, [this] { setAllChecked(false); });
    connect(lesson, &QPushButton::clicked, this, &MachinesPanel::lessonMachinesRequested);
    sel->addWidget(all);
    sel->addWidget(none);
    sel->addWidget(lesson);
    v->addLayout(sel);

    auto* mine = new QHBoxLayout;
    auto* add = new QPushButton("&Add your machine…");
    add->setObjectName("addMachine");
    connect(add, &QPushButton::clicked, this, &MachinesPanel::addRequested);
    edit_ = new QPushButton("Edit…");
    edit_->setEnabled(false);
    connect(edit_, &QPushButton::clicked, this, &MachinesPanel::editRequested);
    remove_ = new QPushButton("Remove");
    remove_->setEnabled(false);
    connect(remove_, &QPushButton::clicked, this, &MachinesPanel::removeRequested);
    mine->addWidget(add, 1);
    mine->addWidget(edit_);
    mine->addWidget(remove_);
    v->addLayout(mine);

    summary_ = new QLabel;
    summary_->setObjectName("summary");
    summary_->setWordWrap(true);
    summary_->setFrameShape(QFrame::StyledPanel);
    summary_->setMargin(8);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Plain text: this label changes on every slider move, and rich text costs a frame.
    summary_->setTextFormat(Qt::PlainText);
    v->addWidget(summary_);
}

void MachinesPanel::setSummary(const QString& text) { summary_->setText(text); }

int MachinesPanel::nameWraps() const { return static_cast<const WrappedNameDelegate*>(list_->itemDelegate())->wraps(); }

void MachinesPanel::showFrameworkOf(QTreeWidgetItem* item) {
    // Restores what it found: this runs inside populate() too (clearing the list changes the
    // current row), which must stay silent until it is done.
    const QScopedValueRollback<bool> quiet(syncing_, true);
    framework_->clear();
    framework_->setEnabled(item && lib_);
    if (item && lib_) {
        const std::string id = item->data(0, Qt::UserRole).toString().toStdString();
        const MachineProfile& m = lib_->machine(id);
        const std::string& usual = lib_->framework_for(m).name;
        framework_->addItem("Usual: " + short_framework_name(usual), QString());
        framework_->setItemData(0, QString::fromStdString(usual), Qt::ToolTipRole);
        for (const auto& f : lib_->frameworks()) {
            framework_->addItem(short_framework_name(f.name), QString::fromStdString(f.id));
            framework_->setItemData(framework_->count() - 1, QString::fromStdString(f.name), Qt::ToolTipRole);
        }
        framework_->setCurrentIndex(0);   // with a placeholder text, a filled box stays unselected
        if (auto it = frameworks_.find(id); it != frameworks_.end())
            framework_->setCurrentIndex(std::max(0, framework_->findData(QString::fromStdString(it->second))));
    }
}

void MachinesPanel::setAllChecked(bool on) {
    syncing_ = true;
    for (int i = 0; i < list_->topLevelItemCount(); ++i)
        list_->topLevelItem(i)->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
    syncing_ = false;
    emit selectionEdited();
}

QString MachinesPanel::currentUserMachineId() const {
    auto* item = list_->currentItem();
    if (!item || !item->data(0, Qt::UserRole + 1).toBool()) return {};
    return item->data(0, Qt::UserRole).toString();
}

QString MachinesPanel::currentMachineText() const { return list_->currentItem() ? list_->currentItem()->text(0) : QString(); }

void MachinesPanel::populate(const ProfileLibrary& lib, ByteUnit unit) {
    lib_ = &lib;
    syncing_ = true;
    list_->clear();
    std::vector<const MachineProfile*> ms;
    for (const auto& m : lib.machines()) ms.push_back(&m);
    std::stable_sort(ms.begin(), ms.end(), [](const MachineProfile* a, const MachineProfile* b) {
        if (machine_rank(*a) != machine_rank(*b)) return machine_rank(*a) < machine_rank(*b);
        if (a->id == kThisMachineId || b->id == kThisMachineId) return b->id == kThisMachineId;
        return a->usable_bytes < b->usable_bytes;
    });
    for (const auto* m : ms) {
        auto* item = new QTreeWidgetItem(list_);
        item->setText(0, qs(short_machine_name(*m)) + (m->user_defined ? "  (yours)" : ""));
        item->setData(0, Qt::UserRole, qs(m->id));
        item->setData(0, Qt::UserRole + 1, m->user_defined);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(0, Qt::Unchecked);
        QString tip = "<b>" + qs(m->name).toHtmlEscaped() + "</b><br>" + qs(format_bytes(double(m->memory_bytes), unit)) +
                      " memory, " + qs(format_bytes(double(usable_bytes(*m, lib.framework_for(*m))), unit)) +
                      " usable for training<br>" + qs(lib.framework_for(*m).name).toHtmlEscaped();
        if (!m->bf16) tip += "<br>no bf16: trains in fp16 mixed precision";
        if (m->price_per_hour) tip += QString("<br>rents for about $%1/h").arg(*m->price_per_hour, 0, 'f', 2);
        if (auto it = m->sources.find("usable_bytes"); it != m->sources.end())
            tip += "<br><small>usable: " + qs(it->second).toHtmlEscaped() + "</small>";
        item->setToolTip(0, tip);
    }
    syncing_ = false;
}

// ------------------------------------------------------------------------ sync ----

void MachinesPanel::showPlan(const Plan& plan) {
    frameworks_ = plan.machine_frameworks;
    syncing_ = true;
    QTreeWidgetItem* first_checked = nullptr;
    for (int i = 0; i < list_->topLevelItemCount(); ++i) {
        auto* item = list_->topLevelItem(i);
        const std::string id = item->data(0, Qt::UserRole).toString().toStdString();
        const bool on = std::find(plan.machines.begin(), plan.machines.end(), id) != plan.machines.end();
        item->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
        if (on && !first_checked) first_checked = item;
    }
    syncing_ = false;
    // The framework choice always names a machine: with no row chosen yet, the first ticked
    // one (an empty "Framework:" box reads as broken).
    // The plan's first machine (the course's RTX 4090), current but not highlighted: a blue T4
    // row at every start read as a choice the user never made.
    QTreeWidgetItem* lead = first_checked;
    for (int i = 0; i < list_->topLevelItemCount() && !plan.machines.empty(); ++i)
        if (list_->topLevelItem(i)->data(0, Qt::UserRole).toString().toStdString() == plan.machines.front())
            lead = list_->topLevelItem(i);
    if (!list_->currentItem() && (lead || list_->topLevelItemCount() > 0))
        list_->setCurrentItem(lead ? lead : list_->topLevelItem(0), 0, QItemSelectionModel::NoUpdate);
    showFrameworkOf(list_->currentItem());
}

std::vector<std::string> MachinesPanel::checkedMachines(const std::vector<std::string>& previous) const {
    std::vector<std::string> checked;
    for (int i = 0; i < list_->topLevelItemCount(); ++i) {
        auto* item = list_->topLevelItem(i);
        if (item->checkState(0) == Qt::Checked) checked.push_back(item->data(0, Qt::UserRole).toString().toStdString());
    }
    std::vector<std::string> ordered;
    for (const auto& id : previous)
        if (std::find(checked.begin(), checked.end(), id) != checked.end()) ordered.push_back(id);
    for (const auto& id : checked)
        if (std::find(ordered.begin(), ordered.end(), id) == ordered.end()) ordered.push_back(id);
    return ordered;
}

void MachinesPanel::showVerdicts(const Evaluation& eval, ByteUnit unit) {
    const bool dark = palette().color(QPalette::Base).lightness() < 128;
    const QColor fits(dark ? "#3ccf9f" : "#007a5a"), tight(dark ? "#f5b342" : "#b36b00"), no(dark ? "#ff7a45" : "#c2410c");
    const bool was = syncing_;
    syncing_ = true;
    list_->blockSignals(true);
    for (int i = 0; i < list_->topLevelItemCount(); ++i) {
        auto* item = list_->topLevelItem(i);
        const std::string id = item->data(0, Qt::UserRole).toString().toStdString();
        const MachineVerdict* v = nullptr;
        for (const auto& candidate : eval.verdicts)
            if (candidate.machine->id == id) v = &candidate;
        if (!v) {
            const QString text = item->checkState(0) == Qt::Checked && !eval.ok() ? "—" : "";
            if (item->text(1) != text) item->setText(1, text);
            item->setData(1, Qt::ForegroundRole, QVariant());
            if (!item->toolTip(1).isEmpty()) item->setToolTip(1, {});
            continue;
        }
        const QString text = qs(verdict_mark_text(*v, unit));
        if (item->text(1) != text) item->setText(1, text);
        const QColor colour = v->fit == Fit::Fits ? fits : v->fit == Fit::Tight ? tight : no;
        if (item->foreground(1).color() != colour) item->setForeground(1, colour);
        QString tip = qs(verdict_text(*v, unit)) + "\nneeds " + qs(format_count(v->needed_bytes)) + " bytes of " +
                      qs(format_count(v->usable_bytes)) + " usable";
        for (const auto& n : v->notes) tip += "\n" + qs(n);
        if (item->toolTip(1) != tip) item->setToolTip(1, tip);
    }
    list_->blockSignals(false);
    syncing_ = was;
}


}  // namespace wingspan::ui
