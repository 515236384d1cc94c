#include "wingspan/ui/widgets.hpp"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QPainter>
#include <QProxyStyle>
#include <QScreen>
#include <QStyleFactory>
#include <QStyleOption>

static void wingspan_init_qrc() { Q_INIT_RESOURCE(wingspan); }

namespace wingspan::ui {

void grow_to_text(QWidget* dialog) {
    QLayout* l = dialog->layout();
    if (!l) return;
    l->activate();
    const int width = std::max(dialog->width(), l->totalMinimumSize().width());
    int height = l->hasHeightForWidth() ? l->totalHeightForWidth(width) : l->totalSizeHint().height();
    if (const QScreen* screen = dialog->screen()) height = std::min(height, screen->availableGeometry().height() - 40);
    if (height > dialog->height() || width > dialog->width()) dialog->resize(width, std::max(height, dialog->height()));
}

void init_resources() {
    static bool done = false;
    if (!done) {
        wingspan_init_qrc();
        done = true;
    }
}

QIcon app_icon() {
    init_resources();
    return QIcon(":/wingspan/wingspan.svg");
}

QString theme_id(Theme t) {
    switch (t) {
        case Theme::Light: return "light";
        case Theme::Dark: return "dark";
        case Theme::System: break;
    }
    return "system";
}

Theme parse_theme(const QString& id) {
    if (id == "light") return Theme::Light;
    if (id == "dark") return Theme::Dark;
    return Theme::System;
}

namespace {

// The two palettes side by side, role by role (nullptr: the light palette keeps Qt's default).
// The Disabled rows come after the roles they refine, since setColor on a role sets every group.
struct ThemeColor {
    QPalette::ColorGroup group;
    QPalette::ColorRole role;
    const char* light;
    const char* dark;
};
constexpr ThemeColor kThemeColors[] = {
    {QPalette::All, QPalette::Window, "#f3f4f6", "#2a2d33"},
    {QPalette::All, QPalette::WindowText, "#1d1f23", "#e8eaed"},
    {QPalette::All, QPalette::Base, "#ffffff", "#1f2126"},
    {QPalette::All, QPalette::AlternateBase, "#f6f7f9", "#262930"},
    {QPalette::All, QPalette::Text, "#1d1f23", "#e8eaed"},
    {QPalette::All, QPalette::Button, "#eceef1", "#353840"},
    {QPalette::All, QPalette::ButtonText, "#1d1f23", "#e8eaed"},
    {QPalette::All, QPalette::ToolTipBase, "#ffffff", "#353840"},
    {QPalette::All, QPalette::ToolTipText, "#1d1f23", "#e8eaed"},
    {QPalette::All, QPalette::PlaceholderText, "#80868b", "#8a9099"},
    {QPalette::All, QPalette::Highlight, "#0072B2", "#56B4E9"},
    {QPalette::All, QPalette::HighlightedText, "#ffffff", "#111111"},
    {QPalette::All, QPalette::Link, "#0063a0", "#7cc7f2"},
    {QPalette::All, QPalette::Light, nullptr, "#4a4e57"},
    {QPalette::All, QPalette::Midlight, nullptr, "#3c4048"},
    {QPalette::All, QPalette::Mid, "#c4c7cc", "#50545c"},
    {QPalette::All, QPalette::Dark, "#9aa0a6", "#18191d"},
    {QPalette::All, QPalette::Shadow, nullptr, "#000000"},
    {QPalette::Disabled, QPalette::Text, "#9aa0a6", "#7a7f87"},
    {QPalette::Disabled, QPalette::WindowText, "#9aa0a6", "#7a7f87"},
    {QPalette::Disabled, QPalette::ButtonText, "#9aa0a6", "#7a7f87"},
};

QPalette palette_of(const char* ThemeColor::*theme) {
    QPalette p;
    for (const ThemeColor& c : kThemeColors) {
        if (!(c.*theme)) continue;
        if (c.group == QPalette::All) p.setColor(c.role, QColor(c.*theme));
        else p.setColor(c.group, c.role, QColor(c.*theme));
    }
    return p;
}

}  // namespace

QPalette light_palette() { return palette_of(&ThemeColor::light); }

QPalette dark_palette() { return palette_of(&ThemeColor::dark); }

namespace {

// Fusion, with check boxes and radio buttons drawn from the palette's text colour so they stay
// visible on dark backgrounds (Fusion outlines them in a darker shade of the window colour,
// which disappears there).
class WingspanStyle : public QProxyStyle {
public:
    WingspanStyle() : QProxyStyle(QStyleFactory::create("Fusion")) {}

    void drawPrimitive(PrimitiveElement pe, const QStyleOption* opt, QPainter* p, const QWidget* w) const override {
        const bool check = pe == PE_IndicatorCheckBox || pe == PE_IndicatorItemViewItemCheck;
        const bool radio = pe == PE_IndicatorRadioButton;
        if (!check && !radio) return QProxyStyle::drawPrimitive(pe, opt, p, w);
        const QPalette& pal = opt->palette;
        const bool enabled = opt->state & State_Enabled;
        const QColor text = pal.color(enabled ? QPalette::Active : QPalette::Disabled, QPalette::Text);
        const QColor base = pal.color(QPalette::Base);
        auto mix = [](const QColor& a, const QColor& b, double t) {
            return QColor::fromRgbF(float(a.redF() * (1 - t) + b.redF() * t), float(a.greenF() * (1 - t) + b.greenF() * t),
                                    float(a.blueF() * (1 - t) + b.blueF() * t));
        };
        const QColor border = mix(text, base, enabled ? 0.45 : 0.65);
        const QColor mark = enabled ? pal.color(QPalette::Highlight) : border;
        const int side = std::min(opt->rect.width(), opt->rect.height()) - 2;
        const QRectF box(opt->rect.x() + (opt->rect.width() - side) / 2.0 + 0.5,
                         opt->rect.y() + (opt->rect.height() - side) / 2.0 + 0.5, side - 1, side - 1);
        p->save();
        p->setRenderHint(QPainter::Antialiasing, true);
        p->setPen(QPen(opt->state & State_HasFocus && !(opt->state & State_Item) ? pal.color(QPalette::Highlight) : border, 1.2));
        p->setBrush(base);
        if (radio) {
            p->drawEllipse(box);
            if (opt->state & State_On) {
                p->setPen(Qt::NoPen);
                p->setBrush(mark);
                p->drawEllipse(box.adjusted(side * 0.27, side * 0.27, -side * 0.27, -side * 0.27));
            }
        } else {
            p->drawRoundedRect(box, 2, 2);
            if (opt->state & State_On) {
                QPen pen(mark, std::max(1.6, side / 7.0), Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin);
                p->setPen(pen);
                p->setBrush(Qt::NoBrush);
                QPolygonF tick;
                tick << QPointF(box.left() + box.width() * 0.22, box.top() + box.height() * 0.52)
                     << QPointF(box.left() + box.width() * 0.42, box.top() + box.height() * 0.72)
                     << QPointF(box.left() + box.width() * 0.78, box.top() + box.height() * 0.28);
                p->drawPolyline(tick);
            } else if (opt->state & State_NoChange) {
                p->fillRect(box.adjusted(side * 0.25, side * 0.45, -side * 0.25, -side * 0.45), mark);
            }
        }
        p->restore();
    }
};

}  // namespace

void apply_theme(Theme t) {
    if (!dynamic_cast<WingspanStyle*>(QApplication::style())) QApplication::setStyle(new WingspanStyle);
    // The platform's own palette, as it was before any theme was applied.
    static const QPalette system = QGuiApplication::palette();
    bool dark = t == Theme::Dark;
    if (t == Theme::System) dark = system.color(QPalette::Window).lightness() < 128;
    QApplication::setPalette(dark ? dark_palette() : light_palette());
}

// ------------------------------------------------------------------------- tables ----

void TableModel::setTable(Table t) {
    const bool same_shape = t.headers == table_.headers && t.rows.size() == table_.rows.size();
    if (same_shape) {
        table_ = std::move(t);
        if (rowCount() > 0 && columnCount() > 0) {
            emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
            if (transposed_) emit headerDataChanged(Qt::Horizontal, 0, columnCount() - 1);
        }
        return;
    }
    beginResetModel();
    table_ = std::move(t);
    endResetModel();
}

void TableModel::setTransposed(bool on) {
    if (on == transposed_) return;
    beginResetModel();
    transposed_ = on;
    endResetModel();
}

int TableModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid()) return 0;
    return transposed_ ? std::max(0, int(table_.headers.size()) - 1) : int(table_.rows.size());
}
int TableModel::columnCount(const QModelIndex& parent) const {
    if (parent.isValid()) return 0;
    if (!transposed_) return int(table_.headers.size());
    return table_.headers.empty() ? 0 : int(table_.rows.size()) + 1;
}

std::pair<int, int> TableModel::source(const QModelIndex& index) const {
    if (!transposed_) return {index.row(), index.column()};
    if (index.column() == 0) return {-1, -1};
    return {index.column() - 1, index.row() + 1};
}

QVariant TableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    const auto [r, col] = source(index);
    if (r < 0) {   // a transposed view's first column: what the Table's column holds
        const auto& name = table_.headers[size_t(index.row() + 1)];
        if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return QString::fromStdString(name);
        return {};
    }
    if (r >= int(table_.rows.size())) return {};
    const auto& row = table_.rows[size_t(r)];
    if (col >= int(row.size())) return {};
    const TableCell& c = row[size_t(col)];
    switch (role) {
        case Qt::DisplayRole: return QString::fromStdString(c.text);
        case Qt::ToolTipRole: {
            if (col == 0 && !transposed_ && !hover_columns_.empty()) {
                QString tip = QString::fromStdString(c.text);
                for (int h : hover_columns_)
                    if (h < int(row.size()) && h < int(table_.headers.size()))
                        tip += "\n" + QString::fromStdString(table_.headers[size_t(h)] + ": " + row[size_t(h)].text);
                return tip;
            }
            if (!c.value) return QString::fromStdString(c.text);
            const double v = *c.value;
            const QString header = QString::fromStdString(table_.headers[size_t(col)]) +
                                   (transposed_ ? " · " + QString::fromStdString(row[0].text) : QString());
            if (std::fabs(v) >= 1e6 && std::fabs(v - std::round(v)) < 1e-6)
                return QString("%1\n%2 (exact: %3)").arg(header, QString::fromStdString(c.text),
                                                         QString::fromStdString(format_count(std::int64_t(std::llround(v)))));
            return QString("%1\n%2 (exact: %3)").arg(header, QString::fromStdString(c.text), QString::number(v, 'g', 12));
        }
        case Qt::ForegroundRole:
            if (c.fit) {
                const bool dark = QApplication::palette().color(QPalette::Base).lightness() < 128;
                switch (*c.fit) {
                    case Fit::Fits: return QColor(dark ? "#3ccf9f" : "#007a5a");
                    case Fit::Tight: return QColor(dark ? "#f5b342" : "#b36b00");
                    case Fit::No: return QColor(dark ? "#ff7a45" : "#c2410c");
                }
            }
            return {};
        case Qt::TextAlignmentRole:
            return c.value && !c.fit ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
        case Qt::UserRole: return c.value ? QVariant(*c.value) : QVariant();
        default: return {};
    }
}

QVariant TableModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o == Qt::Vertical) return role == Qt::DisplayRole ? QVariant(section + 1) : QVariant();
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    if (!transposed_)
        return section < int(table_.headers.size()) ? QString::fromStdString(table_.headers[size_t(section)]) : QVariant();
    if (section == 0) return table_.headers.empty() ? QVariant() : QString::fromStdString(table_.headers[0]);
    if (section - 1 < int(table_.rows.size()) && !table_.rows[size_t(section - 1)].empty())
        return QString::fromStdString(table_.rows[size_t(section - 1)][0].text);
    return {};
}

// ------------------------------------------------------------------- export dialog ----

ExportDialog::ExportDialog(const QString& what, const QString& suggested, bool chart, QWidget* parent)
    : QDialog(parent), chart_(chart) {
    setWindowTitle("Export " + what);
    auto* form = new QFormLayout;
    path_ = new QLineEdit(suggested);
    path_->setObjectName("exportPath");
    path_->setMinimumWidth(380);
    auto* browse = new QPushButton("&Browse…");
    auto* row = new QHBoxLayout;
    row->addWidget(path_, 1);
    row->addWidget(browse);
    auto* file_label = new QLabel("&File:");
    file_label->setBuddy(path_);
    form->addRow(file_label, row);
    const QString filters = chart ? "PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"
                                  : "CSV, exact numbers (*.csv);;Markdown, rounded as in the lessons (*.md)";
    connect(browse, &QPushButton::clicked, this, [this, filters] {
        const QString p = QFileDialog::getSaveFileName(this, windowTitle(), path_->text(), filters);
        if (!p.isEmpty()) path_->setText(p);
    });
    if (chart) {
        width_ = new QSpinBox;
        width_->setRange(16, 20000);
        width_->setValue(1600);
        width_->setSuffix(" px");
        height_ = new QSpinBox;
        height_->setRange(16, 20000);
        height_->setValue(900);
        height_->setSuffix(" px");
        dpi_ = new QSpinBox;
        dpi_->setRange(24, 1200);
        dpi_->setValue(144);
        dpi_->setMaximumWidth(width_->sizeHint().width());
        dpi_->setToolTip("Text and lines scale with DPI / 96: 192 DPI at 1600 × 900 px gives a chart laid out\n"
                         "like an 800 × 450 window, drawn twice as sharp. PDF pages are width / DPI inches wide.");
        dark_ = new QCheckBox("Dark background");
        auto* size = new QHBoxLayout;
        size->addWidget(width_);
        size->addWidget(new QLabel("×"));
        size->addWidget(height_);
        size->addStretch();
        auto* size_label = new QLabel("&Size:");
        size_label->setBuddy(width_);
        form->addRow(size_label, size);
        form->addRow("&DPI:", dpi_);
        form->addRow(QString(), dark_);
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    auto* hint = new QLabel(chart ? "The format follows the file's suffix: .png, .svg or .pdf."
                                  : "The format follows the file's suffix: .csv (exact numbers) or .md (rounded).");
    hint->setWordWrap(true);
    layout->addWidget(hint);
    layout->addWidget(buttons);
}

QString ExportDialog::path() const { return path_->text(); }

ImageOptions ExportDialog::options() const {
    ImageOptions o;
    if (chart_) {
        o.width = width_->value();
        o.height = height_->value();
        o.dpi = dpi_->value();
        o.dark = dark_->isChecked();
    }
    return o;
}

}  // namespace wingspan::ui
