#include "wingspan/ui/recipe_dialog.hpp"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

#include <csignal>
#include <signal.h>
#include <unistd.h>
#include <functional>
#include <optional>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/units.hpp"

namespace wingspan::ui {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QWidget* with_browse(QLineEdit* edit, QWidget* parent, std::function<void()> browse) {
    auto* row = new QWidget(parent);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(edit, 1);
    auto* b = new QPushButton("Choose…", row);
    QObject::connect(b, &QPushButton::clicked, row, browse);
    h->addWidget(b);
    return row;
}

// A recipe folder's JSON file (the recipe, its prediction), read through core's bounded reader:
// a recipe folder may have been edited or sent by anyone. nullopt when missing or not JSON.
std::optional<json> read_recipe_json(const fs::path& file) {
    try {
        return read_untrusted_json_file(file, 16ull << 20);
    } catch (const InputError&) {
        return std::nullopt;   // the caller says what it needed from the file
    }
}

// The command a recipe runs, argument by argument; empty when it names none (or not as strings).
std::vector<std::string> recipe_command(const std::optional<json>& spec) {
    std::vector<std::string> command;
    if (!spec || !spec->is_object() || !spec->contains("command") || !(*spec)["command"].is_array()) return command;
    for (const auto& a : (*spec)["command"]) {
        if (!a.is_string()) return {};
        command.push_back(a.get<std::string>());
    }
    return command;
}

}  // namespace

// ------------------------------------------------------------------- Export ▸ Recipe… ----

RecipeDialog::RecipeDialog(const ProfileLibrary& lib, const Plan& plan, fs::path recipes_dir, QWidget* parent)
    : QDialog(parent), lib_(lib), plan_(plan), recipes_dir_(std::move(recipes_dir)) {
    setWindowTitle("Export recipe");
    auto* form = new QFormLayout;
    framework_ = new QComboBox(this);
    try {
        for (const auto& f : recipe::frameworks(recipes_dir_)) framework_->addItem(qs(f.name), qs(f.id));
    } catch (const std::exception& e) {
        error_ = e.what();
    }
    form->addRow("&Framework", framework_);
    folder_ = new QLineEdit(QDir::home().filePath("wingspan-recipe"), this);
    form->addRow("F&older", with_browse(folder_, this, [this] {
                     const QString d = QFileDialog::getExistingDirectory(this, "Recipe folder", folder_->text());
                     if (!d.isEmpty()) folder_->setText(d);
                 }));
    data_ = new QLineEdit(this);
    data_->setPlaceholderText("the bundled sample chat data (copied into the recipe)");
    form->addRow("&Data (JSONL)", with_browse(data_, this, [this] {
                     const QString f = QFileDialog::getOpenFileName(this, "Chat data", data_->text(), "JSON lines (*.jsonl)");
                     if (!f.isEmpty()) data_->setText(f);
                 }));
    notes_ = new QLabel(this);
    notes_->setWordWrap(true);
    notes_->setTextFormat(Qt::PlainText);
    notes_->setMinimumWidth(520);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (write()) accept();
        else notes_->setText("Not written: " + error_);
    });
    auto* v = new QVBoxLayout(this);
    v->addLayout(form);
    v->addWidget(notes_);
    v->addWidget(buttons);
    connect(framework_, &QComboBox::currentIndexChanged, this, &RecipeDialog::preview);
    preview();
}

std::optional<recipe::Recipe> RecipeDialog::build(QString* why) const {
    const Evaluation eval = evaluate_plan(lib_, plan_);
    if (!eval.ok()) {
        *why = qs(eval.error);
        return std::nullopt;
    }
    recipe::Request req;
    req.framework = framework_->currentData().toString().toStdString();
    req.model_id = eval.model.id;
    req.model_name = eval.model.name;
    req.family = eval.model.family;
    req.arch = eval.model.arch;
    req.setup = eval.setup;
    req.data_path = data_->text().trimmed().toStdString();
    req.training.epochs = plan_.dataset.epochs;
    req.examples = plan_.dataset.examples;
    try {
        return recipe::make(recipes_dir_, lib_, req);
    } catch (const std::exception& e) {
        *why = e.what();
        return std::nullopt;
    }
}

void RecipeDialog::preview() {
    QString why;
    const auto r = build(&why);
    if (!r) {
        notes_->setText("This plan cannot be written for " + framework_->currentText() + ": " + why);
        return;
    }
    QString text = "Runs with: " + qs(r->command) + "\n";
    if (r->notes.empty()) text += "Every knob of the plan is set in " + qs(r->framework.name) + "'s own keys.";
    for (const auto& n : r->notes) text += "\n• " + qs(n);
    notes_->setText(text);
}

bool RecipeDialog::write() {
    if (folder_->text().trimmed().isEmpty()) {
        error_ = "choose a folder for the recipe";
        return false;
    }
    QString why;
    const auto r = build(&why);
    if (!r) {
        error_ = why;
        return false;
    }
    try {
        written_ = folder_->text().trimmed().toStdString();
        recipe::write(*r, written_);
    } catch (const std::exception& e) {
        error_ = e.what();
        written_.clear();
        return false;
    }
    command_ = qs(r->command);
    return true;
}

// --------------------------------------------------------------------- Run a recipe… ----

RunRecipeDialog::RunRecipeDialog(fs::path runs_root, QWidget* parent)
    : QDialog(parent), runs_root_(std::move(runs_root)), clock_(std::make_unique<QElapsedTimer>()) {
    setWindowTitle("Run a recipe");
    folder_ = new QLineEdit(this);
    folder_->setPlaceholderText("a folder written by Export recipe… or `wingspan recipe`");
    start_ = new QPushButton("&Start", this);
    stop_ = new QPushButton("S&top", this);
    stop_->setEnabled(false);
    status_ = new QLabel("Choose a recipe folder and press Start. The run is recorded in the run history "
                         "(the Run tab lists it), with the measured memory beside predicted.json.",
                         this);
    status_->setWordWrap(true);
    log_ = new QPlainTextEdit(this);
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(2000);
    log_->setMinimumSize(640, 280);
    auto* top = new QHBoxLayout;
    top->addWidget(with_browse(folder_, this, [this] {
                       const QString d = QFileDialog::getExistingDirectory(this, "Recipe folder", folder_->text());
                       if (!d.isEmpty()) folder_->setText(d);
                   }),
                   1);
    top->addWidget(start_);
    top->addWidget(stop_);
    auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(close, &QDialogButtonBox::rejected, this, [this] {
        if (running()) stop();   // closing stops the run; it still ends cleanly in the history
        reject();
    });
    auto* v = new QVBoxLayout(this);
    v->addLayout(top);
    v->addWidget(status_);
    v->addWidget(log_, 1);
    v->addWidget(close);
    connect(start_, &QPushButton::clicked, this, [this] {
        if (!start(folder_->text().trimmed().toStdString())) status_->setText("Not started: " + error_);
    });
    connect(stop_, &QPushButton::clicked, this, &RunRecipeDialog::stop);
}

RunRecipeDialog::~RunRecipeDialog() {
    if (running()) {
        process_->terminate();
        if (!process_->waitForFinished(5000)) process_->kill();
        process_->waitForFinished(2000);
    }
}

bool RunRecipeDialog::running() const { return process_ && process_->state() != QProcess::NotRunning; }

bool RunRecipeDialog::start(const fs::path& folder) {
    if (running()) return (error_ = "a recipe is already running"), false;
    const std::optional<json> spec = read_recipe_json(folder / recipe::kRecipeFile);
    const std::vector<std::string> command = recipe_command(spec);
    if (command.empty()) {
        error_ = qs((folder / recipe::kRecipeFile).string()) + " is missing or names no command (write the recipe again)";
        return false;
    }
    // The prediction is the run's to compare with; a recipe without one runs all the same.
    const json plan = read_recipe_json(folder / "predicted.json").value_or(json());
    const auto framework = spec->find("framework");
    try {
        run_ = std::make_unique<WatchedRun>(RunStore(runs_root_), plan,
                                            framework != spec->end() && framework->is_string() ? framework->get<std::string>() : "", command);
    } catch (const std::exception& e) {
        error_ = e.what();
        return false;
    }
    // `env` in a command (PYTHONPATH=. for torchtune and Axolotl) is run as the program it is.
    process_ = new QProcess(this);
    process_->setWorkingDirectory(qs(folder.string()));
    QStringList arguments;
    for (size_t i = 1; i < command.size(); ++i) arguments << qs(command[i]);
    connect(process_, &QProcess::readyReadStandardOutput, this, &RunRecipeDialog::readStdout);
    connect(process_, &QProcess::readyReadStandardError, this, &RunRecipeDialog::readStderr);
    connect(process_, &QProcess::finished, this, &RunRecipeDialog::onFinished);
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) onFinished(127, QProcess::NormalExit);
    });
    stop_requested_ = false;
    clock_->start();
    log_->clear();
    // Its own process group, as under `wingspan watch`: a stop reaches whatever the command
    // started (torchrun's workers, a launcher's children) too.
    process_->setChildProcessModifier([] { ::setpgid(0, 0); });
    out_lines_ = LineFramer(std::size_t(1) << 20);
    err_lines_ = LineFramer(std::size_t(1) << 20);
    process_->start(qs(command.front()), arguments);
    start_->setEnabled(false);
    stop_->setEnabled(true);
    status_->setText("Running " + qs((*spec)["command"].dump()) + "; recording to " + qs(run_->folder().string()));
    return true;
}

void RunRecipeDialog::stop() {
    if (!running()) return;
    stop_requested_ = true;
    // SIGTERM to the command's process group (the reporter turns it into a clean `done`,
    // interrupted), SIGKILL to the group after the grace period if anything is left.
    const qint64 pid = process_->processId();
    if (pid > 0) ::kill(-pid_t(pid), SIGTERM);
    QTimer::singleShot(15000, process_, [p = process_, pid] {
        if (p->state() != QProcess::NotRunning && pid > 0) ::kill(-pid_t(pid), SIGKILL);
    });
    status_->setText("Stopping…");
}

void RunRecipeDialog::readStdout() {
    const QByteArray data = process_->readAllStandardOutput();
    out_lines_.feed(data.constData(), std::size_t(data.size()), [this](const FramedLine& line) {
        const double t = clock_->elapsed() / 1000.0;
        // An over-long line is recorded cut (and as a line_too_long error); its rest is dropped.
        if (line.over_long) log_->appendPlainText(qs(run_->over_long_line("stdout", line.text, out_lines_.max_line(), t)));
        else if (const std::string text(line.text); !run_->stdout_line(text, t)) log_->appendPlainText(qs(text));
    });
    showProgress();
}

void RunRecipeDialog::readStderr() {
    const QByteArray data = process_->readAllStandardError();
    err_lines_.feed(data.constData(), std::size_t(data.size()), [this](const FramedLine& line) {
        const double t = clock_->elapsed() / 1000.0;
        if (line.over_long) {
            log_->appendPlainText(qs(run_->over_long_line("stderr", line.text, err_lines_.max_line(), t)));
        } else {
            run_->stderr_line(std::string(line.text), t);
            log_->appendPlainText(qs(std::string(line.text)));
        }
    });
}

void RunRecipeDialog::showProgress() {
    const RunRecord& r = run_->record();
    QString text = "Running; recording to " + qs(run_->folder().string());
    if (!r.steps().empty()) {
        const StepSample& s = r.steps().back();
        text += QString("\nstep %1%2 · loss %3 · %4 tokens/s")
                    .arg(s.step)
                    .arg(s.total_steps > 0 ? QString(" of %1").arg(s.total_steps) : QString())
                    .arg(s.loss, 0, 'f', 3)
                    .arg(s.tokens_per_s, 0, 'f', 0);
    }
    if (r.memory_events() > 0)
        text += "\nmemory: " + qs(format_bytes(double(r.measured_rss_peak()))) + " held at the peak (predicted " +
                qs(format_bytes(double(r.predicted_total()))) + "), " + qs(format_bytes(double(r.measured_peak()))) +
                " allocated (predicted " + qs(format_bytes(double(r.predicted_peak()))) + ")";
    status_->setText(text);
}

void RunRecipeDialog::onFinished(int code, QProcess::ExitStatus status) {
    if (!run_ || run_->record().status() != RunStatus::Running) return;
    readStdout();
    readStderr();
    out_lines_.finish([this](const FramedLine& line) { run_->stdout_line(std::string(line.text), clock_->elapsed() / 1000.0); });
    err_lines_.finish([this](const FramedLine& line) { run_->stderr_line(std::string(line.text), clock_->elapsed() / 1000.0); });
    // QProcess does not say which signal ended a crashed process: the one we sent, or a kill.
    const bool crashed = status == QProcess::CrashExit;
    run_->finish(crashed ? 0 : code, crashed ? (stop_requested_ ? SIGTERM : SIGKILL) : 0, stop_requested_);
    showProgress();
    status_->setText(status_->text().replace("Running", "Finished") + "\n" + qs(run_->record().status_text()) +
                     " — the run is in the run history (Run tab)");
    start_->setEnabled(true);
    stop_->setEnabled(false);
    emit finished();
}

}  // namespace wingspan::ui
