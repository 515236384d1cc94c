#include "wingspan/ui/machine_dialog.hpp"

#include <fstream>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QVBoxLayout>

#include "wingspan/errors.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/units.hpp"

namespace wingspan::ui {

using nlohmann::json;

namespace {

QString bytes_text(std::int64_t b) {
    if (b <= 0) return {};
    // Whole GiB reads as GiB, everything else as GB with enough digits to round-trip.
    if (b % (std::int64_t(1) << 30) == 0) return QString::number(b >> 30) + " GiB";
    return QString::number(double(b) / 1e9, 'g', 12) + " GB";
}

QString number_text(double v) { return v > 0 ? QString::number(v, 'g', 10) : QString(); }

}  // namespace

MachineDialog::MachineDialog(const ProfileLibrary& lib, const MachineProfile* existing, QWidget* parent)
    : QDialog(parent), lib_(lib), editing_(existing != nullptr) {
    setWindowTitle(existing ? "Edit your machine" : "Add your machine");
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);

    id_ = new QLineEdit;
    id_->setObjectName("machineId");
    id_->setPlaceholderText("e.g. my-rtx-3080");
    id_->setValidator(new QRegularExpressionValidator(QRegularExpression("[a-z0-9][a-z0-9._-]{0,63}"), id_));
    id_->setToolTip("A short id: lowercase letters, digits, '-', '_' or '.'; the file is <id>.json");
    name_ = new QLineEdit;
    name_->setObjectName("machineName");
    name_->setPlaceholderText("e.g. My desktop (RTX 3080 10 GB)");
    kind_ = new QComboBox;
    kind_->setObjectName("machineKind");
    kind_->addItem("GPU with its own memory", "gpu");
    kind_->addItem("Unified memory (Apple silicon)", "unified");
    kind_->addItem("CPU only (system RAM)", "cpu");
    kind_->setToolTip("GPU: the model must fit the card's memory. Unified: one pool shared by CPU and GPU.\n"
                      "CPU: training runs in system RAM.");
    memory_ = new QLineEdit;
    memory_->setObjectName("machineMemory");
    memory_->setPlaceholderText("e.g. 10 GB, 24 GiB");
    memory_->setToolTip("Total device memory (or RAM): 24 GB = 24×10⁹ bytes, 24 GiB = 24×2³⁰ bytes");
    usable_ = new QLineEdit;
    usable_->setObjectName("machineUsable");
    usable_->setPlaceholderText("empty: all of it");
    usable_->setToolTip("What a training process can really use: less than the total when a desktop, the driver or\n"
                        "the OS hold part of it. This is the ceiling the chart draws.");
    host_ = new QLineEdit;
    host_->setPlaceholderText("system RAM beside a GPU, for offload");
    bandwidth_ = new QLineEdit;
    bandwidth_->setPlaceholderText("GB/s (optional)");
    tflops_ = new QLineEdit;
    tflops_->setObjectName("machineTflops");
    tflops_->setPlaceholderText("dense bf16/fp16 TFLOPS, e.g. 59.5");
    tflops_->setToolTip("Dense 16-bit tensor throughput; sets the speed estimate (not memory)");
    tflops32_ = new QLineEdit;
    tflops32_->setPlaceholderText("fp32 TFLOPS (CPU-only machines: this one)");
    bf16_ = new QCheckBox("Supports bf16");
    bf16_->setChecked(true);
    bf16_->setToolTip("Without bf16 (T4, P100, older cards) training runs in fp16 mixed precision");
    power_ = new QLineEdit;
    power_->setPlaceholderText("W (optional)");
    price_ = new QLineEdit;
    price_->setObjectName("machinePrice");
    price_->setPlaceholderText("$ per hour, for rented machines (optional)");
    framework_ = new QComboBox;
    framework_->addItem("Default for the kind", "");
    for (const auto& f : lib.frameworks()) framework_->addItem(QString::fromStdString(f.name), QString::fromStdString(f.id));

    form->addRow("&Id:", id_);
    form->addRow("&Name:", name_);
    form->addRow("&Kind:", kind_);
    form->addRow("&Memory:", memory_);
    form->addRow("&Usable:", usable_);
    form->addRow("&Host RAM:", host_);
    form->addRow("16-bit &TFLOPS:", tflops_);
    form->addRow("fp&32 TFLOPS:", tflops32_);
    form->addRow(QString(), bf16_);
    form->addRow("&Bandwidth:", bandwidth_);
    form->addRow("&Power:", power_);
    form->addRow("&Price:", price_);
    form->addRow("&Framework:", framework_);

    status_ = new QLabel;
    status_->setObjectName("machineStatus");
    status_->setWordWrap(true);
    status_->setMinimumHeight(40);
    buttons_ = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel("Your machine joins the chart beside the bundled ones. It is saved in your config folder "
                             "and checked the same way as the bundled profiles.");
    intro->setWordWrap(true);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(status_);
    layout->addWidget(buttons_);

    if (existing) {
        id_->setText(QString::fromStdString(existing->id));
        id_->setReadOnly(true);
        name_->setText(QString::fromStdString(existing->name));
        kind_->setCurrentIndex(existing->kind == MachineKind::Gpu ? 0 : existing->kind == MachineKind::Unified ? 1 : 2);
        memory_->setText(bytes_text(existing->memory_bytes));
        if (existing->usable_bytes != existing->memory_bytes) usable_->setText(bytes_text(existing->usable_bytes));
        host_->setText(bytes_text(existing->host_memory_bytes));
        bandwidth_->setText(number_text(existing->bandwidth_gb_s));
        tflops_->setText(number_text(std::max(existing->tflops_bf16, existing->tflops_fp16)));
        tflops32_->setText(number_text(existing->tflops_fp32));
        bf16_->setChecked(existing->bf16);
        power_->setText(number_text(existing->power_w));
        if (existing->price_per_hour) price_->setText(QString::number(*existing->price_per_hour, 'g', 8));
        framework_->setCurrentIndex(std::max(0, framework_->findData(QString::fromStdString(existing->default_framework))));
    }
    for (QLineEdit* e : {id_, name_, memory_, usable_, host_, bandwidth_, tflops_, tflops32_, power_, price_})
        connect(e, &QLineEdit::textChanged, this, &MachineDialog::revalidate);
    connect(kind_, &QComboBox::currentIndexChanged, this, &MachineDialog::revalidate);
    connect(framework_, &QComboBox::currentIndexChanged, this, &MachineDialog::revalidate);
    connect(bf16_, &QCheckBox::toggled, this, &MachineDialog::revalidate);
    revalidate();
}

json MachineDialog::form_json(QString* error) const {
    auto bytes = [&](QLineEdit* e, const char* what, bool required, std::int64_t* out) {
        const QString t = e->text().trimmed();
        if (t.isEmpty()) {
            if (required && error->isEmpty()) *error = QString(what) + " is required (e.g. 24 GB)";
            return false;
        }
        try {
            *out = parse_bytes(t.toStdString());
            return true;
        } catch (const std::exception& ex) {
            if (error->isEmpty()) *error = QString(what) + ": " + ex.what();
            return false;
        }
    };
    auto number = [&](QLineEdit* e, const char* what, double* out) {
        const QString t = e->text().trimmed();
        if (t.isEmpty()) return false;
        bool ok = false;
        *out = t.toDouble(&ok);
        if (!ok && error->isEmpty()) *error = QString(what) + ": '" + t + "' is not a number";
        return ok;
    };
    json j;
    j["id"] = id_->text().trimmed().toStdString();
    j["name"] = name_->text().trimmed().isEmpty() ? j["id"] : json(name_->text().trimmed().toStdString());
    j["kind"] = kind_->currentData().toString().toStdString();
    std::int64_t b = 0;
    if (bytes(memory_, "Memory", true, &b)) j["memory_bytes"] = b;
    if (bytes(usable_, "Usable", false, &b)) j["usable_bytes"] = b;
    if (bytes(host_, "Host RAM", false, &b)) j["host_memory_bytes"] = b;
    double v = 0;
    const bool bf16 = bf16_->isChecked();
    if (number(tflops_, "16-bit TFLOPS", &v)) {
        j["tflops_fp16"] = v;
        j["tflops_bf16"] = bf16 ? v : 0.0;
    }
    if (number(tflops32_, "fp32 TFLOPS", &v)) j["tflops_fp32"] = v;
    j["bf16"] = bf16;
    if (number(bandwidth_, "Bandwidth", &v)) j["bandwidth_gb_s"] = v;
    if (number(power_, "Power", &v)) j["power_w"] = v;
    if (number(price_, "Price", &v)) j["price_per_hour"] = v;
    if (!framework_->currentData().toString().isEmpty())
        j["default_framework"] = framework_->currentData().toString().toStdString();
    j["user_defined"] = true;
    j["sources"] = {{"memory_bytes", "entered by the user"}};
    return j;
}

std::optional<MachineProfile> MachineDialog::machine() const {
    QString error;
    const json j = form_json(&error);
    const std::string id = j["id"].get<std::string>();
    auto* self = const_cast<MachineDialog*>(this);
    if (error.isEmpty() && id.empty()) error = "Id is required: a short name such as my-rtx-3080";
    if (error.isEmpty() && !editing_) {
        for (const auto& m : lib_.machines())
            if (m.id == id) {
                error = m.user_defined ? "You already have a machine with the id '" + QString::fromStdString(id) +
                                             "'; edit it instead, or choose another id"
                                       : "'" + QString::fromStdString(id) + "' is a bundled machine; choose another id";
                break;
            }
    }
    if (error.isEmpty()) {
        try {
            MachineProfile m = parse_machine_profile(j, "your machine");
            if (!m.default_framework.empty()) lib_.framework(m.default_framework);
            self->error_.clear();
            return m;
        } catch (const ProfileError& e) {
            // Core names the JSON field; say it with the form's words.
            static const std::pair<const char*, const char*> kLabels[] = {
                {"usable_bytes", "Usable"},       {"memory_bytes", "Memory"},      {"host_memory_bytes", "Host RAM"},
                {"tflops_fp32", "TFLOPS"},        {"tflops_bf16", "16-bit TFLOPS"}, {"tflops_fp16", "16-bit TFLOPS"},
                {"bandwidth_gb_s", "Bandwidth"},  {"price_per_hour", "Price"},      {"power_w", "Power"},
                {"default_framework", "Framework"}, {"id", "Id"},                   {"kind", "Kind"}};
            QString field = QString::fromStdString(e.field());
            QString what = QString::fromStdString(e.what());
            if (const int at = what.indexOf("': "); at >= 0) what = what.mid(at + 3);
            for (const auto& [name, label] : kLabels) {
                if (field == name) field = label;
                what.replace(name, QString(label).toLower());
            }
            if (what.contains("at least one of")) what = "give the 16-bit or fp32 TFLOPS (the speed estimate needs one)";
            error = field + ": " + what;
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
    }
    self->error_ = error;
    return std::nullopt;
}

void MachineDialog::revalidate() {
    const auto m = machine();
    buttons_->button(QDialogButtonBox::Save)->setEnabled(m.has_value());
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    if (m) {
        status_->setStyleSheet(QString("color: %1").arg(dark ? "#3ccf9f" : "#007a5a"));
        status_->setText("✓ " + QString::fromStdString(format_bytes(double(m->usable_bytes))) + " usable of " +
                         QString::fromStdString(format_bytes(double(m->memory_bytes))) + " — ready to save");
    } else {
        status_->setStyleSheet(QString("color: %1").arg(dark ? "#ff7a45" : "#c2410c"));
        status_->setText("✗ " + error_);
    }
}

bool MachineDialog::save(const std::filesystem::path& user_dir) {
    const auto m = machine();
    if (!m) return false;
    std::error_code ec;
    const auto dir = user_dir / "machines";
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        error_ = "cannot create " + QString::fromStdString(dir.string()) + ": " + QString::fromStdString(ec.message());
        return false;
    }
    MachineProfile saved = *m;
    saved.user_defined = true;
    try {
        write_file_atomically(dir / (saved.id + ".json"), machine_profile_to_json(saved).dump(2) + "\n");
    } catch (const IoError& e) {
        error_ = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

}  // namespace wingspan::ui
