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
#include <QEventLoop>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QStackedBarSeries>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <QValueAxis>

#include <atomic>
#include <sstream>

#include "data_file.hpp"
#include "wingspan/profiles.hpp"

namespace wingspan::ui {

// One reading: the worker writes the result, the window polls the counters and sets `cancel`.
struct DataDialog::Job {
    std::string model_dir, data, framework;
    std::optional<Padding> padding;
    TrainingSetup setup;
    std::int64_t epochs = 1;
    std::atomic<bool> cancel{false};
    std::atomic<std::uintmax_t> done{0}, total{0};
    std::optional<DataSummary> summary;   // set by the worker before it ends
    QString error;

    void run() {
        try {
            const auto folder = train::tokenizer_folder(model_dir, std::nullopt, "main");
            std::ostringstream progress_lines;   // the bar shows the progress instead
            const train::DataLengths d =
                train::read_data_lengths(data, folder, progress_lines, [this](std::uintmax_t at, std::uintmax_t of) {
                    done = at;
                    total = of;
                    return !cancel.load();
                });
            if (cancel) throw train::ReadCancelled();
            summary = summarize_for_framework(d.lengths, setup, framework, padding, epochs);
        } catch (const train::ReadCancelled&) {
            error = "cancelled";
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
    }
};

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
    progress_ = new QProgressBar;
    progress_->setObjectName("dataProgress");
    progress_->setRange(0, 1000);
    progress_->setFormat("reading… %p %");
    progress_->hide();
    layout->addWidget(progress_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    go_ = buttons->addButton("&Read", QDialogButtonBox::ActionRole);
    go_->setObjectName("dataRead");
    cancel_ = buttons->addButton("&Cancel reading", QDialogButtonBox::ActionRole);
    cancel_->setObjectName("dataCancel");
    cancel_->setEnabled(false);
    connect(go_, &QPushButton::clicked, this, [this] { startRead(model_dir_->text(), data_->text()); });
    connect(cancel_, &QPushButton::clicked, this, &DataDialog::cancelRead);
    connect(padding_, &QComboBox::currentIndexChanged, this, [this] {
        if (summary_) startRead(model_dir_->text(), data_->text());
    });
    connect(buttons, &QDialogButtonBox::rejected, this, [this] {
        cancelRead();
        reject();
    });
    poll_ = new QTimer(this);
    poll_->setInterval(100);
    connect(poll_, &QTimer::timeout, this, &DataDialog::show_progress);
    layout->addWidget(buttons);
    resize(820, 600);
}

DataDialog::~DataDialog() {
    // The worker holds the job, not the dialog: once told to stop, it ends within 256 lines.
    if (job_) job_->cancel = true;
    if (worker_) {
        worker_->wait();
        delete worker_;
    }
}

void DataDialog::startRead(const QString& model_dir, const QString& data) {
    if (model_dir_->text() != model_dir) model_dir_->setText(model_dir);
    if (data_->text() != data) data_->setText(data);
    if (worker_) {   // a newer request replaces the one under way
        job_->cancel = true;
        worker_->wait();
        finish_read();
    }
    job_ = std::make_shared<Job>();
    job_->model_dir = model_dir.toStdString();
    job_->data = data.toStdString();
    job_->framework = framework_;
    job_->setup = plan_.setup;
    job_->epochs = plan_.dataset.epochs;
    try {
        const QString p = padding_->currentData().toString();
        if (!p.isEmpty()) job_->padding = parse_padding(p.toStdString());
    } catch (const std::exception& e) {
        job_->error = QString::fromUtf8(e.what());
    }
    std::shared_ptr<Job> job = job_;
    worker_ = QThread::create([job] {
        if (job->error.isEmpty()) job->run();
    });
    connect(worker_, &QThread::finished, this, [this, job] {
        if (job == job_) finish_read();
    });
    text_->setText(QString("Reading %1…").arg(data));
    progress_->setValue(0);
    progress_->show();
    go_->setEnabled(false);
    cancel_->setEnabled(true);
    poll_->start();
    worker_->start();
}

void DataDialog::cancelRead() {
    if (job_ && worker_) job_->cancel = true;
}

void DataDialog::show_progress() {
    if (!job_) return;
    const std::uintmax_t total = job_->total, done = job_->done;
    if (total > 0) progress_->setValue(int(1000.0 * double(done) / double(total)));
}

void DataDialog::finish_read() {
    poll_->stop();
    worker_->wait();
    worker_->deleteLater();
    worker_ = nullptr;
    progress_->hide();
    go_->setEnabled(true);
    cancel_->setEnabled(false);
    const QString error = job_->error;
    if (error.isEmpty() && job_->summary) {
        summary_ = job_->summary;
        show_summary();
        emit readFinished(true, {});
        return;
    }
    summary_.reset();
    text_->setText(error == "cancelled" ? QString("Reading cancelled.")
                                        : QString("This data set cannot be read: %1").arg(error));
    emit readFinished(false, error);
}

bool DataDialog::read(const QString& model_dir, const QString& data, QString* error) {
    QEventLoop loop;
    bool ok = false;
    QString why;
    auto done = connect(this, &DataDialog::readFinished, &loop, [&](bool good, const QString& e) {
        ok = good;
        why = e;
        loop.quit();
    });
    startRead(model_dir, data);
    if (reading()) loop.exec();
    disconnect(done);
    if (error) *error = why;
    return ok;
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
