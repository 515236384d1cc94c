#include "wingspan/ui/oom_dialog.hpp"

#include <QDialogButtonBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "wingspan/oom_advice.hpp"
#include "wingspan/units.hpp"

namespace wingspan::ui {

namespace {

QString html(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

}  // namespace

OomDialog::OomDialog(const Evaluation* eval, QWidget* parent) : QDialog(parent), eval_(eval) {
    setWindowTitle("Explain an out-of-memory message");
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel("Paste PyTorch's error (\"CUDA out of memory. Tried to allocate …\" or "
                                 "\"MPS backend out of memory (…)\"); a whole traceback is fine."));
    paste_ = new QPlainTextEdit;
    paste_->setObjectName("oomPaste");
    paste_->setPlaceholderText("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate …");
    layout->addWidget(paste_, 1);
    answer_ = new QTextBrowser;
    answer_->setObjectName("oomAnswer");
    layout->addWidget(answer_, 2);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QPushButton* go = buttons->addButton("&Explain", QDialogButtonBox::ActionRole);
    connect(go, &QPushButton::clicked, this, [this] { explain(paste_->toPlainText()); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(760, 620);
}

bool OomDialog::explain(const QString& message) {
    if (paste_->toPlainText() != message) paste_->setPlainText(message);
    const auto report = parse_oom_message(message.toStdString());
    if (!report) {
        answer_->setHtml("<p><b>Not an OOM message I know.</b> Wingspan reads PyTorch's \"CUDA out of memory. Tried to "
                         "allocate …\" (every version) and \"MPS backend out of memory (…)\" texts.</p>");
        return false;
    }
    OomDiagnosis d;
    d.report = *report;
    d.findings = oom_findings(*report);
    const bool with_plan = eval_ && eval_->ok() && eval_->reference_framework;
    if (with_plan) d = diagnose_oom(*report, eval_->model.arch, eval_->setup, *eval_->reference_framework);
    QString out = "<h3>" + html(std::string("PyTorch ") + to_string(report->format) + " on " + report->device) + "</h3><ul>";
    for (const auto& f : d.findings) out += "<li>" + html(f) + "</li>";
    out += "</ul>";
    if (!with_plan) {
        out += "<p>The window's plan cannot be evaluated, so only the message's figures are shown.</p>";
    } else {
        out += "<h4>Nearest settings that fit (each checked by the planner on " +
               html(format_bytes(double(d.ceiling_bytes), ByteUnit::GiB, 2)) + ")</h4><ul>";
        if (d.advice.empty()) out += "<li>none of batch, sequence, checkpointing, chunked loss, rank or method changes it</li>";
        for (const auto& a : d.advice)
            out += "<li>" + QString(a.with_previous ? "+ " : "") + "<code>" + html(a.flag + " " + a.value) + "</code> — " +
                   (a.fits ? "<b>fits</b>" : "does not fit") + " (" +
                   html(format_bytes(double(a.needed_bytes), ByteUnit::GiB, 2)) + "): " + html(a.why) + "</li>";
        out += "</ul>";
    }
    answer_->setHtml(out);
    return true;
}

QString OomDialog::answerText() const { return answer_->toPlainText(); }

}  // namespace wingspan::ui
