// The "Try it" box of a finished run (see run_try_it.hpp).
#include "wingspan/ui/run_try_it.hpp"

#include "wingspan/json_input.hpp"
#include "wingspan/trainer_invocation.hpp"

#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcessEnvironment>
#include <QPushButton>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include "wingspan/ui/run_session.hpp"

namespace wingspan::ui {

namespace {

bool has_file(const QString& dir, const char* name) { return QFileInfo(QDir(dir).filePath(name)).isFile(); }

// The trainer's generate reads an adapter from the run's output, its final/ or adapter/ folder.
QString adapter_folder(const QString& out) {
    for (const QString& d : {out, QDir(out).filePath("final"), QDir(out).filePath("adapter")})
        if (has_file(d, "adapter_config.json") && has_file(d, "adapter_model.safetensors")) return d;
    return {};
}

bool has_chat_template(const QString& model_dir) {
    if (has_file(model_dir, "chat_template.jinja")) return true;
    // The folder comes from a run record: read bounded, never a pipe or a device.
    try {
        const std::string text = read_regular_file(QDir(model_dir).filePath("tokenizer_config.json").toStdString(), 64 << 20);
        return text.find("\"chat_template\"") != std::string::npos;
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace

TryItTarget try_it_target(const QString& trainer, const RunOptions& o, const RunRecord& r, bool run_active) {
    TryItTarget t;
    t.trainer = trainer;
    using Source = RunOptions::ModelSource;
    if (run_active) t.unavailable = "The run is still going: try it once it has finished.";
    else if (o.model_source == Source::BuiltIn)
        t.unavailable = "The built-in demo model has no weights on disk to load. Train the plan's model or a model folder "
                        "with LoRA or QLoRA to try it here; the demo's own sample is under Summary.";
    else if (o.model_source == Source::PlanArchitecture)
        t.unavailable = "This run trained random weights of the plan's architecture; they are not saved as a model. "
                        "Train the plan's model (pretrained weights) to try it here.";
    else if (o.method == Method::Full)
        t.unavailable = "A full fine-tune saves new weights without the tokenizer; copy the base model's tokenizer files "
                        "into its output folder and use `wingspan-train generate --model OUT`.";
    else if (o.model_dir.isEmpty() || !has_file(o.model_dir, "config.json"))
        t.unavailable = "The run's model folder " + (o.model_dir.isEmpty() ? QString("(none)") : o.model_dir) + " is gone.";
    else if (!has_file(o.model_dir, "tokenizer.json"))
        t.unavailable = "The model folder " + o.model_dir + " has no tokenizer.json, so prompts cannot be encoded.";
    if (!t.unavailable.isEmpty()) return t;
    t.model_dir = o.model_dir;
    QStringList outs;
    if (!r.checkpoints().empty()) outs << QString::fromStdString(r.checkpoints().back());
    if (r.done()) outs << QString::fromStdString(r.done()->string_field("checkpoint"));
    for (const QString& out : outs)
        if (!out.isEmpty() && t.adapter_dir.isEmpty()) t.adapter_dir = adapter_folder(out);
    if (t.adapter_dir.isEmpty()) {
        t.unavailable = "The run saved no adapter (it ended before its first checkpoint).";
        return t;
    }
    t.chat = has_chat_template(o.model_dir);
    return t;
}

TryItBox::TryItBox(QWidget* parent) : QWidget(parent) {
    setObjectName("runTryIt");
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(4, 4, 4, 4);
    auto* row = new QHBoxLayout;
    prompt_ = new QLineEdit;
    prompt_->setObjectName("tryItPrompt");
    prompt_->setAccessibleName("Prompt");
    prompt_->setPlaceholderText("A prompt for the fine-tuned model");
    prompt_->setClearButtonEnabled(true);
    connect(prompt_, &QLineEdit::returnPressed, this, [this] { generate(); });
    connect(prompt_, &QLineEdit::textChanged, this, [this] { updateEnabled(); });
    chat_ = new QCheckBox("Chat");
    chat_->setObjectName("tryItChat");
    chat_->setToolTip("--chat: wrap the prompt in the model's chat template as a user turn");
    max_tokens_ = new QSpinBox;
    max_tokens_->setObjectName("tryItMaxTokens");
    max_tokens_->setRange(1, 4096);
    max_tokens_->setValue(64);
    max_tokens_->setSuffix(" tokens");
    max_tokens_->setToolTip("--max-tokens: the longest answer");
    go_ = new QPushButton("Generate ▶");
    go_->setObjectName("tryItGenerate");
    connect(go_, &QPushButton::clicked, this, [this] { generate(); });
    stop_ = new QPushButton("Stop ■");
    stop_->setObjectName("tryItStop");
    connect(stop_, &QPushButton::clicked, this, &TryItBox::stop);
    row->addWidget(prompt_, 1);
    row->addWidget(chat_);
    row->addWidget(max_tokens_);
    row->addWidget(go_);
    row->addWidget(stop_);
    status_ = new QLabel;
    status_->setObjectName("tryItStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    output_ = new QPlainTextEdit;
    output_->setObjectName("tryItOutput");
    output_->setAccessibleName("The model's answer");
    output_->setReadOnly(true);
    output_->setPlaceholderText("The fine-tuned model's answer appears here as it is generated.");
    v->addLayout(row);
    v->addWidget(status_);
    v->addWidget(output_, 1);
    kill_timer_ = new QTimer(this);
    kill_timer_->setSingleShot(true);
    connect(kill_timer_, &QTimer::timeout, this, [this] {
        if (process_) process_->kill();
    });
    updateEnabled();
}

TryItBox::~TryItBox() {
    if (process_) {
        process_->disconnect(this);
        process_->kill();
        process_->waitForFinished(2000);
    }
}

void TryItBox::setTarget(const TryItTarget& target) {
    const bool changed = target.model_dir != target_.model_dir || target.adapter_dir != target_.adapter_dir;
    target_ = target;
    if (changed && !isRunning()) {
        output_->clear();
        chat_->setChecked(target.chat);
    }
    if (!isRunning())
        status_->setText(target.unavailable.isEmpty() ? "Base " + target.model_dir + " with the adapter " + target.adapter_dir
                                                      : target.unavailable);
    updateEnabled();
}

void TryItBox::setPrompt(const QString& prompt) { prompt_->setText(prompt); }
void TryItBox::setChat(bool on) { chat_->setChecked(on); }
void TryItBox::setMaxTokens(int n) { max_tokens_->setValue(n); }
bool TryItBox::isRunning() const { return process_ && process_->state() != QProcess::NotRunning; }
QString TryItBox::outputText() const { return output_->toPlainText(); }
QString TryItBox::statusText() const { return status_->text(); }

void TryItBox::updateEnabled() {
    const bool running = isRunning();
    const bool can = target_.unavailable.isEmpty() && !target_.trainer.isEmpty();
    prompt_->setEnabled(can);
    chat_->setEnabled(can && !running);
    max_tokens_->setEnabled(can && !running);
    go_->setEnabled(can && !running && !prompt_->text().trimmed().isEmpty());
    stop_->setEnabled(running);
}

bool TryItBox::generate(QString* error) {
    auto fail = [&](const QString& m) {
        if (error) *error = m;
        status_->setText(m);
        return false;
    };
    if (isRunning()) return fail("A generation is already going; stop it first.");
    if (!target_.unavailable.isEmpty()) return fail(target_.unavailable);
    const QString prompt = prompt_->text();
    if (prompt.trimmed().isEmpty()) return fail("Type a prompt first.");
    arguments_ = {"generate", "--model", target_.model_dir, "--adapter", target_.adapter_dir, "--prompt", prompt,
                  "--max-tokens", QString::number(max_tokens_->value())};
    if (chat_->isChecked()) arguments_ << "--chat";
    output_->clear();
    stderr_.clear();
    pending_utf8_.clear();
    stopping_ = false;
    auto* p = new QProcess(this);
    process_ = p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // wingspan-train's OpenMP wait, set here to save its re-execution.
    if (!env.contains("OMP_WAIT_POLICY") && !env.contains(wingspan::kOmpSpinVariable))
        env.insert(wingspan::kOmpSpinVariable, wingspan::kOmpSpinCount);
    p->setProcessEnvironment(env);
    connect(p, &QProcess::readyReadStandardOutput, this, &TryItBox::onOutput);
    connect(p, &QProcess::readyReadStandardError, this, [this, p] {
        stderr_ += p->readAllStandardError();
        if (stderr_.size() > 64 * 1024) stderr_ = stderr_.right(64 * 1024);
    });
    connect(p, &QProcess::finished, this, &TryItBox::onFinished);
    connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        status_->setText("wingspan-train could not be started: " + p->errorString());
        p->deleteLater();
        updateEnabled();
        emit generationFinished(false);
    });
    p->start(target_.trainer, arguments_, QIODevice::ReadOnly);
    status_->setText("Generating… (loading the model and the adapter)");
    updateEnabled();
    return true;
}

void TryItBox::onOutput() {
    if (!process_) return;
    pending_utf8_ += process_->readAllStandardOutput();
    // Whole UTF-8 characters only: a character split across reads waits for its rest.
    qsizetype cut = pending_utf8_.size();
    for (qsizetype i = std::max<qsizetype>(0, cut - 3); i < cut; ++i) {
        const unsigned char c = static_cast<unsigned char>(pending_utf8_[i]);
        const int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        if (c >= 0xC0 && i + len > cut) {
            cut = i;
            break;
        }
    }
    const QString text = QString::fromUtf8(pending_utf8_.left(cut));
    pending_utf8_.remove(0, cut);
    if (text.isEmpty() || output_->toPlainText().size() > kMaxOutputChars) return;
    output_->moveCursor(QTextCursor::End);
    output_->insertPlainText(text);
    status_->setText("Generating…");
}

void TryItBox::stop() {
    if (!isRunning()) return;
    stopping_ = true;
    process_->terminate();
    kill_timer_->start(kKillAfterMs);
    status_->setText("Stopping…");
}

void TryItBox::onFinished(int code, QProcess::ExitStatus status) {
    kill_timer_->stop();
    onOutput();
    if (!pending_utf8_.isEmpty()) output_->insertPlainText(QString::fromUtf8(pending_utf8_));
    pending_utf8_.clear();
    QProcess* p = process_;
    stderr_ += p->readAllStandardError();
    const bool ok = status == QProcess::NormalExit && code == 0;
    const QString err = QString::fromUtf8(stderr_).trimmed();
    if (stopping_) status_->setText("Stopped.");
    else if (ok) status_->setText("Done" + (err.isEmpty() ? QString(".") : " (" + err.section('\n', -1) + ")."));
    else status_->setText(QString("wingspan-train generate failed (%1): %2")
                              .arg(status == QProcess::CrashExit ? QString("crashed") : QString("exit code %1").arg(code),
                                   err.isEmpty() ? QString("no message") : err.right(2000)));
    p->deleteLater();
    process_ = nullptr;
    updateEnabled();
    emit generationFinished(ok && !stopping_);
}

}  // namespace wingspan::ui
