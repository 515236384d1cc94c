#include "wingspan/ui/calibration_dialog.hpp"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <fstream>

#include "wingspan/errors.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/units.hpp"

namespace wingspan::ui {

namespace fs = std::filesystem;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString bytes_text(std::int64_t b) { return b > 0 ? qs(format_bytes(double(b))) : QString("–"); }

QString percent_text(double p) { return QString::asprintf("%+.1f %%", p); }

// Why a run cannot be used, or empty.
QString unusable_reason(const RunRecord& r) {
    if (r.status() == RunStatus::Failed) return "failed";
    if (r.status() == RunStatus::Running) return "did not finish";
    if (r.measured_peak() <= 0 || r.measured_rss_peak() <= 0) return "no memory measurements";
    if (r.predicted_total() <= 0) return "no prediction";
    return {};
}

enum Column { kRun, kStatus, kPeak, kRss, kPredicted, kError, kColumns };

}  // namespace

CalibrationDialog::CalibrationDialog(const ProfileLibrary& lib, fs::path runs_root, fs::path user_dir, QWidget* parent)
    : QDialog(parent), lib_(lib), runs_root_(std::move(runs_root)), user_dir_(std::move(user_dir)) {
    setWindowTitle("Calibrate from my runs");
    auto* v = new QVBoxLayout(this);
    auto* intro = new QLabel(
        "Fits the framework's fixed costs on this machine — the process baseline and the allocator's slack over "
        "the allocated bytes — to the memory your finished runs really used, and saves them as your own framework "
        "profile. Check the runs to fit.",
        this);
    intro->setWordWrap(true);
    v->addWidget(intro);

    auto* form = new QFormLayout;
    framework_ = new QComboBox(this);
    framework_->setAccessibleName("Framework to calibrate");
    for (const auto& f : lib_.frameworks()) framework_->addItem(qs(f.name), qs(f.id));
    const int libtorch = framework_->findData("libtorch-cpu");
    if (libtorch >= 0) framework_->setCurrentIndex(libtorch);
    form->addRow("&Framework:", framework_);
    v->addLayout(form);

    list_ = new QTreeWidget(this);
    list_->setAccessibleName("Finished runs to calibrate from");
    list_->setRootIsDecorated(false);
    list_->setColumnCount(kColumns);
    list_->setHeaderLabels({"Run", "Status", "Tensors peak", "Process peak (RSS)", "Predicted total", "Error"});
    list_->headerItem()->setToolTip(kPeak, "the largest sum of live tensor bytes the trainer's allocator counted");
    list_->headerItem()->setToolTip(kRss, "the most resident memory the trainer's process held (what the machine must have)");

    list_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    list_->header()->setSectionResizeMode(kRun, QHeaderView::Stretch);
    list_->header()->setStretchLastSection(false);
    list_->setMinimumSize(720, 260);
    v->addWidget(list_, 1);

    result_ = new QLabel(this);
    result_->setWordWrap(true);
    result_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->addWidget(result_);
    where_ = new QLabel(this);
    where_->setWordWrap(true);
    where_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->addWidget(where_);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Close, this);
    save_ = buttons_->addButton("&Save profile", QDialogButtonBox::AcceptRole);
    v->addWidget(buttons_);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(save_, &QPushButton::clicked, this, [this] {
        if (save()) accept();
    });
    connect(framework_, &QComboBox::currentIndexChanged, this, [this] { refit(); });
    connect(list_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem*, int column) {
        if (column == kRun) refit();
    });

    loadRuns();
    refit();
}

void CalibrationDialog::loadRuns() {
    const QSignalBlocker block(list_);
    list_->clear();
    runs_.clear();
    for (const auto& dir : RunStore(runs_root_).list()) {
        Entry e{dir, RunRecord{}, false};
        QString reason;
        try {
            e.record = RunStore::load(dir);
            reason = unusable_reason(e.record);
        } catch (const std::exception& ex) {
            reason = "unreadable: " + qs(ex.what());
        }
        e.usable = reason.isEmpty();
        const RunSummary s = e.record.summary();
        auto* item = new QTreeWidgetItem(list_);
        item->setText(kRun, qs(RunStore::label_of(dir)));
        item->setToolTip(kRun, qs(dir.string()));
        item->setText(kStatus, e.usable ? qs(to_string(e.record.status())) : reason);
        item->setText(kPeak, bytes_text(s.measured_peak));
        item->setText(kRss, bytes_text(s.measured_rss_peak));
        item->setText(kPredicted, bytes_text(s.predicted_total));
        item->setText(kError, e.usable ? percent_text(s.total_error_percent()) : QString("–"));
        item->setToolTip(kError, "predicted process total (at the run) against the measured RSS peak");
        for (int c = kPeak; c < kColumns; ++c) item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
        if (e.usable) {
            item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
            item->setCheckState(kRun, Qt::Checked);
        } else {
            item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
        }
        runs_.push_back(std::move(e));
    }
}

int CalibrationDialog::usableRuns() const {
    int n = 0;
    for (const auto& e : runs_) n += e.usable;
    return n;
}

void CalibrationDialog::refit() {
    calibration_.reset();
    error_.clear();
    saved_path_.clear();
    where_->clear();
    std::vector<RunRecord> checked;
    for (int i = 0; i < list_->topLevelItemCount() && i < int(runs_.size()); ++i)
        if (runs_[i].usable && list_->topLevelItem(i)->checkState(kRun) == Qt::Checked) checked.push_back(runs_[i].record);
    if (runs_.empty()) {
        error_ = "No runs yet in " + qs(runs_root_.string()) +
                 ". Train from the Run tab (or keep bench_accuracy's runs with --keep-runs), then come back.";
    } else if (checked.empty()) {
        error_ = usableRuns() ? "Check at least one finished run." : "None of these runs finished with memory measurements.";
    } else {
        try {
            const FrameworkProfile& base = lib_.framework(framework_->currentData().toString().toStdString());
            calibration_ = calibrate(base, checked);
        } catch (const std::exception& e) {
            error_ = qs(e.what());
        }
    }
    save_->setEnabled(calibration_.has_value());
    if (!calibration_) {
        result_->setText(error_);
        return;
    }
    const Calibration& c = *calibration_;
    const FrameworkProfile& base = lib_.framework(framework_->currentData().toString().toStdString());
    auto mb = [](std::int64_t b) { return QString::number(double(b) / 1e6, 'f', 0) + " MB"; };
    result_->setText(QString("<b>Fitted from %1 run%2:</b> process baseline %3 (was %4), allocator slack %5 % (was "
                             "%6 %) of %9.<br>Mean error of the predicted process total: <b>%7 % before, %8 % after</b>.")
                         .arg(c.runs)
                         .arg(c.runs == 1 ? "" : "s")
                         .arg(mb(c.profile.context_bytes), mb(base.context_bytes))
                         .arg(100 * c.profile.allocator_slack, 0, 'f', 1)
                         .arg(100 * base.allocator_slack, 0, 'f', 1)
                         .arg(c.error_before_percent, 0, 'f', 1)
                         .arg(c.error_after_percent, 0, 'f', 1)
                         .arg(qs(slack_base_name(c.profile))));
    where_->setText("Save writes framework '" + qs(c.profile.id) + "' to " +
                    qs((user_dir_ / "frameworks" / (c.profile.id + ".json")).string()) +
                    "; plans use it when you pick it (wingspan … --framework " + qs(c.profile.id) + ")" +
                    (c.profile.id == calibrated_framework_id("libtorch-cpu")
                         ? QString("; the planner's “This machine” and wingspan-train's predictions use it from then on.")
                         : QString(".")));
}

bool CalibrationDialog::save() {
    if (!calibration_) {
        if (error_.isEmpty()) error_ = "nothing to save";
        return false;
    }
    const fs::path dir = user_dir_ / "frameworks";
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path file = dir / (calibration_->profile.id + ".json");
    try {
        write_file_atomically(file, framework_profile_to_json(calibration_->profile).dump(2) + "\n");
    } catch (const IoError& e) {
        error_ = qs(e.what());
        return false;
    }
    saved_path_ = file;
    emit saved(qs(file.string()));
    return true;
}

}  // namespace wingspan::ui
