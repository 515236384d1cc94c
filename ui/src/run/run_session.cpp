// One wingspan-train process (RunSession): its run folder, stdout framed into the RunRecord,
// stderr kept and logged, RSS sampled from outside, and the stop on core's ladder.
#include <algorithm>
#include <csignal>

#include <QDir>
#include <QFileInfo>
#include <QProcessEnvironment>
#include <QTimer>

#include <unistd.h>

#include "wingspan/errors.hpp"
#include "wingspan/protocol_events.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/trainer_invocation.hpp"
#include "wingspan/ui/run_session.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The stop grace as the status line states it ("SIGKILL in 60 s"): whole seconds when whole.
QString grace_text(int ms) { return ms % 1000 == 0 ? QString::number(ms / 1000) : QString::number(ms / 1000.0, 'f', 1); }

}  // namespace

// ------------------------------------------------------------------ session ----

RunSession::RunSession(QObject* parent) : QObject(parent), record_(kMemorySamples) {}

RunSession::~RunSession() {
    if (process_ && process_->state() != QProcess::NotRunning) {
        // The window is going away with a live trainer: let it save, then make sure it is gone.
        stop(std::max(kill_after_ms_, 1000));
        if (!process_->waitForFinished(std::max(kill_after_ms_, 1000))) {
            process_->kill();
            process_->waitForFinished(3000);
        }
    }
}

double RunSession::elapsedSeconds() const { return clock_.isValid() ? double(clock_.elapsed()) / 1000.0 : 0.0; }

double RunSession::stopDeadlineSeconds() const {
    if (state_ != State::Stopping || killed_) return 0;
    const auto left = stop_ladder_.remaining(process::Clock::now());
    return left ? double(left->count()) / 1000.0 : 0.0;
}

template <typename Write>
void RunSession::recordWrite(Write&& write) {
    if (folder_.empty()) return;
    try {
        write();
    } catch (const std::exception& e) {   // IoError: a full disk, the folder gone
        if (lost_writes_++ == 0) recording_error_ = QString::fromStdString(e.what());
    }
}

bool RunSession::start(const QString& trainer, const RunOptions& options, const json& plan, const fs::path& store_root,
                       const QString& sample_data, QString* error) {
    auto fail = [&](const QString& message) {
        if (error) *error = message;
        return false;
    };
    if (state_ != State::Idle) return fail("this session already ran; start a new one");
    const TrainerLocation t = check_trainer(trainer);
    if (!t.ok()) return fail(t.problem);
    QString data = options.data_file.isEmpty() ? sample_data : options.data_file;
    if (data.isEmpty())
        return fail("the bundled sample data (sample-data/chat.jsonl) was not found next to Wingspan; choose a data file");
    if (!QFileInfo(data).isFile()) return fail("the data file " + data + " does not exist");
    const bool from_folder =
        options.model_source == RunOptions::ModelSource::Folder || options.model_source == RunOptions::ModelSource::Planned;
    if (options.model_source == RunOptions::ModelSource::Planned && options.model_dir.isEmpty())
        return fail("the plan's model (" + options.model_label +
                    ") is not on this machine: download it or choose its folder, or choose the built-in demo model or "
                    "random weights");
    if (from_folder && !QFileInfo(QDir(options.model_dir).filePath("config.json")).isFile())
        return fail("the model folder " + (options.model_dir.isEmpty() ? QString("(none chosen)") : options.model_dir) +
                    " has no config.json; choose a Hugging Face model folder");

    options_ = options;
    options_.data_file = data;
    try {
        RunStore store(store_root);
        QString label = options.model_label + "-" + to_string(options.method);
        json saved = {{"format", "wingspan-run"}, {"version", 1}, {"planner", plan}, {"options", options_.to_json()},
                      {"trainer", trainer.toStdString()}};
        folder_ = store.create(saved, label.toStdString());
        QString model_dir;
        if (from_folder) model_dir = options.model_dir;
        if (options.model_source == RunOptions::ModelSource::PlanArchitecture) {
            const fs::path dir = folder_ / "model";
            fs::create_directories(dir);
            write_file_atomically(dir / "config.json", options.model_config.dump(2) + "\n");
            model_dir = qs(dir.string());
        }
        out_dir_ = options.out_dir.isEmpty() ? qs((folder_ / "output").string()) : options.out_dir;
        arguments_ = trainer_arguments(options_, model_dir, data, out_dir_);
        saved["arguments"] = json::array();
        for (const QString& a : arguments_) saved["arguments"].push_back(a.toStdString());
        write_file_atomically(folder_ / "plan.json", saved.dump(2) + "\n");   // never a half-written record
    } catch (const std::exception& e) {
        return fail(QString("cannot create the run folder: ") + e.what());
    }

    process_ = new QProcess(this);
    process_->setProgram(trainer);
    process_->setArguments(arguments_);
    process_->setWorkingDirectory(qs(folder_.string()));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // wingspan-train re-executes itself once to set its OpenMP wait; setting it here keeps one
    // process (and one clock) from the start.
    if (!env.contains("OMP_WAIT_POLICY") && !env.contains(wingspan::kOmpSpinVariable))
        env.insert(wingspan::kOmpSpinVariable, wingspan::kOmpSpinCount);
    process_->setProcessEnvironment(env);
    // Started with its stop signals blocked (the mask is inherited across exec), the trainer
    // takes a Stop pressed while it still loads libtorch as a clean stop, not a kill: its
    // listener thread receives it once running (trainer/src/support/stop_signals.hpp).
    process_->setChildProcessModifier([] {
        sigset_t stops;
        sigemptyset(&stops);
        for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
        sigprocmask(SIG_BLOCK, &stops, nullptr);
    });
    connect(process_, &QProcess::readyReadStandardOutput, this, &RunSession::onStdout);
    connect(process_, &QProcess::readyReadStandardError, this, &RunSession::onStderr);
    connect(process_, &QProcess::finished, this, &RunSession::onFinished);
    connect(process_, &QProcess::errorOccurred, this, &RunSession::onError);
    connect(process_, &QProcess::started, this, [this] {
        pid_ = process_->processId();
        sampleRss();
        emit started();
    });

    rss_timer_ = new QTimer(this);
    rss_timer_->setInterval(200);
    connect(rss_timer_, &QTimer::timeout, this, &RunSession::sampleRss);
    kill_timer_ = new QTimer(this);
    kill_timer_->setSingleShot(true);
    // A coarse timer may fire up to 5 % early: the grace the status line states is a promise.
    kill_timer_->setTimerType(Qt::PreciseTimer);
    connect(kill_timer_, &QTimer::timeout, this, &RunSession::onKillTimer);

    state_ = State::Running;
    clock_.start();
    process_->start(QIODevice::ReadOnly);
    rss_timer_->start();
    dirty_ = true;
    emit stateChanged();
    return true;
}

void RunSession::stop(int kill_after_ms) {
    if (!process_ || state_ != State::Running || process_->state() == QProcess::NotRunning) return;
    stop_requested_ = true;
    kill_after_ms_ = std::max(0, kill_after_ms);
    state_ = State::Stopping;
    stop_clock_.start();
    // SIGTERM: the trainer finishes its step, saves and says `done`; SIGKILL after the grace.
    stop_ladder_ = process::StopLadder::term_then_kill(std::chrono::milliseconds(kill_after_ms_));
    sendStopSignal(stop_ladder_.request(process::Clock::now()));
    kill_timer_->start(kill_after_ms_);
    dirty_ = true;
    emit stateChanged();
}

void RunSession::onKillTimer() {
    if (!process_ || process_->state() == QProcess::NotRunning) return;
    const int sig = stop_ladder_.due(process::Clock::now());
    if (sig) return sendStopSignal(sig);
    // Fired before the grace was over (the ladder never sends early): wait out the rest.
    if (const auto left = stop_ladder_.remaining(process::Clock::now())) kill_timer_->start(int(left->count()) + 1);
}

void RunSession::sendStopSignal(int sig) {
    if (!process_ || process_->state() == QProcess::NotRunning || sig == 0) return;
    if (sig == SIGKILL) {
        killed_ = true;
        process_->kill();
    } else {
        ::kill(pid_t(process_->processId()), sig);
    }
}

void RunSession::killNow() {
    if (!process_ || process_->state() == QProcess::NotRunning) return;
    if (state_ == State::Running) {
        stop_requested_ = true;
        state_ = State::Stopping;
        stop_clock_.start();
    }
    killed_on_request_ = true;
    sendStopSignal(SIGKILL);
}

bool RunSession::waitForFinished(int ms) {
    if (!process_ || finished_) return true;
    if (process_->state() != QProcess::NotRunning) process_->waitForFinished(ms);
    return finished_;
}

void RunSession::sampleRss() {
    if (!process_ || process_->state() != QProcess::Running) return;
    // Several ranks: the launcher only relays lines; rank 0's process is the one the record
    // (and so the chart's areas) follows, once its hello names it.
    qint64 pid = pid_;
    if (options_.processes > 1) {
        const auto it = ranks_.ranks.find(0);
        if (it == ranks_.ranks.end() || it->second.pid <= 0) return;
        pid = qint64(it->second.pid);
    }
    const std::int64_t rss = process_rss_bytes(pid);
    if (rss < 0) return;
    rss_peak_ = std::max(rss_peak_, rss);
    const double t = elapsedSeconds() - clock_offset_.value_or(0.0);
    rss_.push_back({t, double(rss)});
    if (rss_.size() > kRssSamples) {
        halve_keeping_peaks(rss_);
        rss_written_ = std::min(rss_written_, rss_.size() - 1);
    }
    if (clock_offset_) {
        recordWrite([&] { append_line(folder_ / "rss.csv", std::to_string(t) + "," + std::to_string(rss)); });
        rss_written_ = rss_.size();
    }
    dirty_ = true;
}

void RunSession::writeRss() {
    if (folder_.empty() || rss_written_ >= rss_.size()) return;
    std::string lines;
    for (; rss_written_ < rss_.size(); ++rss_written_) {
        if (!lines.empty()) lines += '\n';
        lines += std::to_string(rss_[rss_written_].x()) + "," + std::to_string(std::int64_t(rss_[rss_written_].y()));
    }
    recordWrite([&] { append_line(folder_ / "rss.csv", lines); });
}

void RunSession::ingestLines(const QByteArray& chunk, bool flush) {
    std::string batch;   // every line of this chunk, appended to the run in one write
    auto add = [&batch](std::string_view line) {
        if (!batch.empty()) batch += '\n';
        batch += line;
    };
    const auto take = [&](const FramedLine& line) {
        if (line.over_long) {
            // Not read: a `line_too_long` error stands for it, in the record and in events.jsonl.
            const std::string error =
                line_too_long_event(elapsedSeconds() - clock_offset_.value_or(0.0), "stdout", stdout_lines_.max_line(), line.text);
            ++lines_;
            ingestEvent(error);
            add(error);
            return;
        }
        ++lines_;
        const std::string text(line.text);
        ingestEvent(text);
        add(text);
    };
    stdout_lines_.feed(chunk.constData(), std::size_t(chunk.size()), take);
    if (flush) stdout_lines_.finish(take);
    if (!batch.empty()) recordWrite([&] { RunStore::append_line(folder_, batch); });
    dirty_ = true;
}

void RunSession::ingestEvent(const std::string& line) {
    try {
        if (line.find_first_not_of(" \t\r\n") == std::string::npos) return;
        const auto parsed = protocol::parse_line(line);
        if (!parsed.event) {
            record_.ingest_line(line);   // counted and logged as unreadable
            return;
        }
        const protocol::Event& event = *parsed.event;
        // Several ranks share the stream: the record and the device track follow rank 0 (one
        // loss curve, one process's components); every rank's memory goes to the rank track.
        ranks_.ingest(event);
        if (record_takes(event)) record_.ingest(event);
        if (event.rank() == 0) device_memory_.ingest(event);
        if (!clock_offset_) {
            // The first line on the trainer's clock: line the RSS samples up with it.
            clock_offset_ = elapsedSeconds() - event.t;
            for (auto& p : rss_) p.setX(p.x() - *clock_offset_);
            writeRss();
        }
    } catch (const std::exception&) {
        // The record never throws on bad input; should a track do, the line counts as unreadable.
        record_.count_malformed(1);
    }
}

void RunSession::onStdout() { ingestLines(process_->readAllStandardOutput(), false); }

void RunSession::onStderr() { ingestStderr(process_->readAllStandardError(), false); }

void RunSession::ingestStderr(const QByteArray& chunk, bool flush) {
    std::string batch;   // this chunk's lines for stderr.log, in one write, up to its cap
    const auto take = [&](const FramedLine& line) {
        const QString shown = stderrLine(line);
        if (folder_.empty() || stderr_file_bytes_ >= kMaxStderrFileBytes) return;
        const std::string bytes = shown.toStdString();
        if (!batch.empty()) batch += '\n';
        batch += bytes;
        stderr_file_bytes_ += qint64(bytes.size()) + 1;
        if (stderr_file_bytes_ >= kMaxStderrFileBytes) batch += "\n[wingspan: stderr.log cut at 16 MiB]";
    };
    stderr_lines_.feed(chunk.constData(), std::size_t(chunk.size()), take);
    if (flush) stderr_lines_.finish(take);
    if (!batch.empty()) recordWrite([&] { append_line(folder_ / "stderr.log", batch); });
    dirty_ = true;
}

QString RunSession::stderrLine(const FramedLine& line) {
    QString text = QString::fromUtf8(line.text.data(), qsizetype(line.text.size()));
    if (line.over_long) text += " [cut: a line over 8 KiB]";
    stderr_tail_.push_back(text);
    if (stderr_tail_.size() > kStderrKept) stderr_tail_.pop_front();
    stderr_new_ << text;
    if (qsizetype(stderr_new_.size()) > qsizetype(kStderrKept)) {
        stderr_new_.removeFirst();
        ++stderr_dropped_;
    }
    return text;
}

QStringList RunSession::takeNewStderr() {
    QStringList out;
    out.swap(stderr_new_);
    return out;
}

void RunSession::onError(QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart || finished_) return;
    launch_error_ = "wingspan-train could not be started: " + process_->errorString();
    finishRun(127, 0);
}

void RunSession::onFinished(int code, QProcess::ExitStatus status) {
    if (finished_) return;
    ingestLines(process_->readAllStandardOutput(), true);
    ingestStderr(process_->readAllStandardError(), true);
    // On Unix a crash exit's code is the signal that ended the process.
    if (status == QProcess::CrashExit) finishRun(0, code > 0 ? code : SIGKILL);
    else finishRun(code, 0);
}

void RunSession::finishRun(int code, int signal) {
    finished_ = true;
    if (rss_timer_) rss_timer_->stop();
    if (kill_timer_) kill_timer_->stop();
    record_.finish(code, signal);
    if (!clock_offset_) writeRss();   // no protocol line ever came: the GUI's clock it is
    if (stop_requested_) {
        const QString ckpt = record_.checkpoints().empty() ? QString() : qs(record_.checkpoints().back());
        const double waited = stop_clock_.isValid() ? double(stop_clock_.elapsed()) / 1000.0 : 0.0;
        if (killed_ && killed_on_request_) {
            stop_outcome_ = StopOutcome::Killed;
            stop_message_ = QString("Stopped: killed (SIGKILL) on request, %1 s after Stop. Nothing was saved after the "
                                    "last checkpoint.")
                                .arg(waited, 0, 'f', 1);
        } else if (killed_) {
            stop_outcome_ = StopOutcome::Killed;
            stop_message_ = QString("Stopped: the trainer had not exited %1 s after SIGTERM, so Wingspan killed it (SIGKILL); "
                                    "it ended %2 s after Stop. Nothing was saved after the last checkpoint.")
                                .arg(grace_text(kill_after_ms_))
                                .arg(waited, 0, 'f', 1);
        } else if (record_.done() && protocol::as_done(*record_.done())->reason == "interrupted" && !ckpt.isEmpty()) {
            stop_outcome_ = StopOutcome::Saved;
            stop_message_ = QString("Stopped cleanly: SIGTERM, the trainer finished its step, saved %1 and exited (%2 s).")
                                .arg(ckpt)
                                .arg(waited, 0, 'f', 1);
        } else {
            stop_outcome_ = StopOutcome::ExitedAfterTerm;
            stop_message_ = QString("Stopped: SIGTERM; the trainer exited after %1 s (%2) without reporting a checkpoint.")
                                .arg(waited, 0, 'f', 1)
                                .arg(signal ? QString("killed by %1").arg(qs(process::signal_name(signal)))
                                            : QString("exit code %1").arg(code));
        }
    }
    recordWrite([&] { RunStore::write_result(folder_, record_); });
    // The launcher's own words about the end, beside core's result.json.
    json notes = {{"gui_rss_peak_bytes", rss_peak_}};
    if (!stop_message_.isEmpty() || !launch_error_.isEmpty()) {
        notes["stop_message"] = stop_message_.toStdString();
        notes["launch_error"] = launch_error_.toStdString();
    }
    if (lost_writes_ > 0) notes["lost_writes"] = {{"count", lost_writes_}, {"first_error", recording_error_.toStdString()}};
    recordWrite([&] { write_file_atomically(folder_ / "launcher.json", notes.dump(2) + "\n"); });
    state_ = State::Finished;
    dirty_ = true;
    emit stateChanged();
    emit finished();
}

}  // namespace wingspan::ui
