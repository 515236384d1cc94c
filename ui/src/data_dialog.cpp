#include "wingspan/ui/data_dialog.hpp"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStackedBarSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include <sstream>

#include "data_file.hpp"
#include "wingspan/profiles.hpp"

namespace wingspan::ui {

namespace {

QWidget* picker(QLineEdit* edit, const QString& button, const std::function<QString()>& choose) {
    auto* row = new QWidget;
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(edit, 1);
    auto* b = new QPushButton(button);
    QObject::connect(b, &QPushButton::clicked, edit, [edit, choose] {
        const QString path = choose();
        if (!path.isEmpty()) edit->setText(path);
    });
    h->addWidget(b);
    return row;
}

}  // namespace

DataDialog::DataDialog(const Plan& plan, QWidget* parent) : QDialog(parent), plan_(plan) {
    setWindowTitle("Plan from a data file");
    framework_ = plan.framework.empty() ? ProfileLibrary::default_framework_id(MachineKind::Gpu) : plan.framework;
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    model_dir_ = new QLineEdit;
    model_dir_->setObjectName("dataModelDir");
    model_dir_->setPlaceholderText("a model folder with tokenizer.json (and its chat template)");
    data_ = new QLineEdit;
    data_->setObjectName("dataFile");
    data_->setPlaceholderText("train.jsonl: messages, instruction/input/output, prompt/completion or text rows");
    form->addRow("Model folder", picker(model_dir_, "Browse…", [this] {
                     return QFileDialog::getExistingDirectory(this, "Model folder (tokenizer.json)");
                 }));
    form->addRow("Data set", picker(data_, "Browse…", [this] {
                     return QFileDialog::getOpenFileName(this, "Data set", QString(), "JSONL (*.jsonl *.json);;All files (*)");
                 }));
    padding_ = new QComboBox;
    padding_->setObjectName("dataPadding");
    padding_->addItem(QString("the framework's default (%1)").arg(to_string(default_padding(framework_))), "");
    for (const char* p : {"dynamic", "packed", "max"}) padding_->addItem(p, p);
    form->addRow("Padding", padding_);
    layout->addLayout(form);
    chart_ = new QChart;
    chart_->setTitle("Tokens per example");
    auto* view = new QChartView(chart_);
    view->setMinimumHeight(280);
    layout->addWidget(view, 1);
    text_ = new QLabel;
    text_->setObjectName("dataSummary");
    text_->setWordWrap(true);
    text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(text_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QPushButton* go = buttons->addButton("&Read", QDialogButtonBox::ActionRole);
    connect(go, &QPushButton::clicked, this, [this] { read(model_dir_->text(), data_->text()); });
    connect(padding_, &QComboBox::currentIndexChanged, this, [this] {
        if (summary_) read(model_dir_->text(), data_->text());
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(820, 600);
}

bool DataDialog::read(const QString& model_dir, const QString& data, QString* error) {
    if (model_dir_->text() != model_dir) model_dir_->setText(model_dir);
    if (data_->text() != data) data_->setText(data);
    try {
        const auto folder = train::tokenizer_folder(model_dir.toStdString(), std::nullopt, "main");
        std::ostringstream progress;   // the window does not show a file's progress lines
        const train::DataLengths d = train::read_data_lengths(data.toStdString(), folder, progress);
        const QString p = padding_->currentData().toString();
        std::optional<Padding> padding;
        if (!p.isEmpty()) padding = parse_padding(p.toStdString());
        summary_ = summarize_for_framework(d.lengths, plan_.setup, framework_, padding, plan_.dataset.epochs);
    } catch (const std::exception& e) {
        summary_.reset();
        text_->setText(QString("This data set cannot be read: %1").arg(e.what()));
        if (error) *error = e.what();
        return false;
    }
    show_summary();
    return true;
}

void DataDialog::show_summary() {
    chart_->removeAllSeries();
    for (QAbstractAxis* a : chart_->axes()) chart_->removeAxis(a);
    const DataSummary& s = *summary_;
    const std::int64_t cap = plan_.setup.seq_len;
    // Three stacked sets, one colour each: the bins, the bin holding the cap, the bin holding the peak batch's rows.
    auto* plain = new QBarSet("examples");
    auto* capped = new QBarSet(QString("▲ the cap (--seq %1)").arg(cap));
    auto* peak = new QBarSet(QString("▲ the peak batch's rows (%1 tokens)").arg(s.peak.cols));
    QStringList labels;
    for (const auto& bin : s.histogram) {
        const bool at_peak = bin.from <= s.peak.cols && s.peak.cols < bin.to;
        const bool at_cap = !at_peak && bin.from <= cap && cap < bin.to;
        *plain << double(at_peak || at_cap ? 0 : bin.count);
        *capped << double(at_cap ? bin.count : 0);
        *peak << double(at_peak ? bin.count : 0);
        // The marks stay readable where their bin holds no example.
        const bool holds_cap = bin.from <= cap && cap < bin.to;
        labels << QString::number(bin.from) + (holds_cap || at_peak ? "▲" : "");
    }
    auto* series = new QStackedBarSeries;
    series->append(plain);
    series->append(capped);
    series->append(peak);
    chart_->addSeries(series);
    auto* x = new QBarCategoryAxis;
    x->append(labels);
    x->setTitleText("tokens (bin start)");
    auto* y = new QValueAxis;
    y->setTitleText("examples");
    y->setLabelFormat("%d");
    chart_->addAxis(x, Qt::AlignBottom);
    chart_->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    if (!s.histogram.empty() && cap >= s.histogram.back().to)
        x->setTitleText(QString("tokens (bin start); the cap, %1, lies above the longest example").arg(cap));
    text_->setText(summaryText());
}

QString DataDialog::summaryText() const {
    if (!summary_) return {};
    const DataSummary& s = *summary_;
    QString t = QString("%1 examples, %2 tokens (longest %3, shortest %4). Padding %5 (%6): %7 of them are longer "
                        "than the cap of %8 tokens. The peak batch is %9 × %10 = %11 tokens")
                    .arg(s.examples)
                    .arg(s.tokens_total)
                    .arg(s.longest)
                    .arg(s.shortest)
                    .arg(to_string(s.padding))
                    .arg(QString::fromStdString(framework_))
                    .arg(s.truncated_examples)
                    .arg(plan_.setup.seq_len)
                    .arg(s.peak.rows)
                    .arg(s.peak.cols)
                    .arg(s.peak.tokens());
    if (s.peak.worst_case) t += " (a random order: the longest examples together, the worst case)";
    return t + "; the memory is planned at it, time from " + QString::number(s.tokens_per_epoch) + " tokens per epoch.";
}

}  // namespace wingspan::ui
