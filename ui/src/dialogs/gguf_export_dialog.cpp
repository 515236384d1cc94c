#include "wingspan/ui/gguf_export_dialog.hpp"

#include <QAction>
#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

#include <functional>

#include "wingspan/gguf_file.hpp"
#include "wingspan/llama_cpp_terms.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/ui/run_session.hpp"

namespace wingspan::ui {

namespace {

QString mib(std::uint64_t bytes) { return QString::number(double(bytes) / (1024.0 * 1024.0), 'f', 1) + " MiB"; }

// A folder/file chooser as the line edit's own trailing button: `ask` returns the choice or "".
QLineEdit* chooser(QLineEdit* edit, std::function<QString(const QString&)> ask) {
    QAction* choose = edit->addAction(edit->style()->standardIcon(QStyle::SP_DirOpenIcon), QLineEdit::TrailingPosition);
    choose->setToolTip("Choose…");
    QObject::connect(choose, &QAction::triggered, edit, [edit, ask] {
        if (const QString picked = ask(edit->text()); !picked.isEmpty()) edit->setText(picked);
    });
    return edit;
}

}  // namespace

namespace {
QString this_programs_trainer() {
    const TrainerLocation t = find_trainer(QCoreApplication::applicationFilePath());
    return t.ok() ? t.path : QString();
}
}  // namespace

GgufExportDialog::GgufExportDialog(QWidget* parent) : GgufExportDialog(this_programs_trainer(), parent) {}

GgufExportDialog::GgufExportDialog(QString trainer, QWidget* parent) : QDialog(parent), trainer_(std::move(trainer)) {
    setWindowTitle("Export GGUF (llama.cpp, Ollama, LM Studio)");
    auto* form = new QFormLayout;
    model_ = new QLineEdit(this);
    model_->setPlaceholderText("a model folder: config.json, safetensors, tokenizer.json");
    form->addRow("&Model folder", chooser(model_, [this](const QString& at) {
                     return QFileDialog::getExistingDirectory(this, "Model folder", at);
                 }));
    adapter_ = new QLineEdit(this);
    adapter_->setPlaceholderText("optional: a finished run's folder, its adapters merged on the fly");
    form->addRow("&Adapters (run)", chooser(adapter_, [this](const QString& at) {
                     return QFileDialog::getExistingDirectory(this, "Run folder with adapters", at);
                 }));
    quant_ = new QComboBox(this);
    for (const char* q : {"f16", "q8_0", "q4_0", "bf16", "f32"}) quant_->addItem(q);
    form->addRow("&Quantization", quant_);
    out_ = new QLineEdit(QDir::home().filePath("wingspan-model.gguf"), this);
    form->addRow("&Output file", chooser(out_, [this](const QString& at) {
                     return QFileDialog::getSaveFileName(this, "GGUF file", at, "GGUF (*.gguf)");
                 }));
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    status_ = new QLabel(trainer_.isEmpty() ? "wingspan-train was not found: build it beside wingspan." : QString(), this);
    status_->setWordWrap(true);
    status_->setTextFormat(Qt::PlainText);
    status_->setMinimumWidth(520);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    export_ = buttons->addButton("&Export", QDialogButtonBox::ActionRole);
    connect(export_, &QPushButton::clicked, this, [this] {
        if (!start()) status_->setText("Not started: " + error_);
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* v = new QVBoxLayout(this);
    v->addLayout(form);
    v->addWidget(progress_);
    v->addWidget(status_);
    v->addWidget(buttons);
}

GgufExportDialog::~GgufExportDialog() {
    if (running()) {   // the export writes a temporary file renamed at the end: stopping leaves nothing
        process_->terminate();
        process_->waitForFinished(5000);
    }
}

bool GgufExportDialog::running() const { return process_ && process_->state() != QProcess::NotRunning; }

bool GgufExportDialog::start() {
    error_.clear();
    if (running()) return error_ = "an export is already running", false;
    if (trainer_.isEmpty()) return error_ = "wingspan-train was not found", false;
    if (!QFileInfo(model_->text()).isDir()) return error_ = "choose the model folder", false;
    if (out_->text().trimmed().isEmpty()) return error_ = "choose the output file", false;
    QStringList args = {"export", "--format", "gguf", "--quant", quant_->currentText(), "--model", model_->text(),
                        "--out", out_->text()};
    if (!adapter_->text().trimmed().isEmpty()) args << "--adapter" << adapter_->text();
    delete process_;
    process_ = new QProcess(this);
    process_->setProcessChannelMode(QProcess::SeparateChannels);
    connect(process_, &QProcess::readyReadStandardOutput, this, &GgufExportDialog::readLines);
    connect(process_, &QProcess::finished, this, &GgufExportDialog::processEnded);
    pending_.clear();
    written_.clear();
    serving_.clear();
    progress_->setValue(0);
    status_->setText("Starting wingspan-train export…");
    export_->setEnabled(false);
    process_->start(trainer_, args);
    if (!process_->waitForStarted(10000)) {
        error_ = "wingspan-train could not be started: " + process_->errorString();
        export_->setEnabled(true);
        return false;
    }
    return true;
}

void GgufExportDialog::readLines() {
    pending_ += process_->readAllStandardOutput();
    for (qsizetype nl; (nl = pending_.indexOf('\n')) >= 0;) {
        handleLine(pending_.left(nl));
        pending_.remove(0, nl + 1);
    }
    if (pending_.size() > (1 << 20)) pending_.clear();   // a line that never ends is not the protocol
}

void GgufExportDialog::handleLine(const QByteArray& line) {
    const auto parsed = protocol::parse_line(std::string_view(line.constData(), size_t(line.size())));
    if (!parsed.event) return;   // not a protocol line: ignored, as the run panel does
    const auto& e = *parsed.event;
    using protocol::EventType;
    if (e.type == EventType::Log && e.body.contains("export") && e.body["export"].is_object()) {
        const auto& x = e.body["export"];
        const double written = x.value("bytes_written", 0.0), total = x.value("total_bytes", 0.0);
        if (total > 0) progress_->setValue(int(1000.0 * std::min(1.0, written / total)));
        status_->setText(QString("Tensor %1 of %2: %3")
                             .arg(x.value("tensor", 0))
                             .arg(x.value("tensors", 0))
                             .arg(QString::fromStdString(x.value("name", std::string()))));
    } else if (e.type == EventType::Error) {
        error_ = QString::fromStdString(e.string_field("message", "the export failed"));
    } else if (e.type == EventType::Done && e.string_field("reason") == "completed") {
        written_ = QString::fromStdString(e.string_field("out"));
        progress_->setValue(1000);
    }
}

void GgufExportDialog::processEnded(int code, QProcess::ExitStatus status) {
    readLines();
    export_->setEnabled(true);
    if (!written_.isEmpty() && code == 0 && status == QProcess::NormalExit) {
        describeServing();
        status_->setText("Written: " + written_ + " (a Modelfile for `ollama create` beside it).\n" + serving_);
    } else {
        if (error_.isEmpty()) error_ = QString("wingspan-train export ended with exit code %1").arg(code);
        status_->setText("Failed: " + error_);
    }
    emit finished();
}

void GgufExportDialog::describeServing() {
    try {
        const auto model = llama_cpp::model_from_gguf(gguf::read_file(written_.toStdString()));
        llama_cpp::ServeOptions o;   // llama-server's defaults: 4,096 tokens, f16 cache, all layers on the GPU
        const auto p = llama_cpp::plan(model, o);
        serving_ = QString("Serving it with llama.cpp at 4,096 tokens (f16 cache): frozen_weights %1, kv_cache %2, "
                           "compute_buffer %3 (`wingspan plan --method serve --gguf` for other settings).")
                       .arg(mib(p.weights_gpu + p.weights_host), mib(p.kv.total()), mib(p.compute.total()));
    } catch (const std::exception& e) {
        serving_ = QString("Its serving memory could not be read: ") + e.what();
    }
}

}  // namespace wingspan::ui
