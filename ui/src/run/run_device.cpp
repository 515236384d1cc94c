// The devices a run can train on and the reserved bytes GPU runs report.
#include <algorithm>

#include <QLocale>

#include "wingspan/json_input.hpp"
#include "wingspan/ui/run_charts.hpp"
#include "wingspan/ui/run_device.hpp"

namespace wingspan::ui {

QString DeviceInfo::id() const {
    if (type == "cuda") return QString("cuda:%1").arg(index);
    return type;
}

QString DeviceInfo::label() const {
    QString s = id();
    if (!name.isEmpty()) s += " · " + name;
    if (total_bytes > 0) s += " · " + format_run_bytes(double(total_bytes), ByteUnit::GB);
    return s;
}

std::vector<DeviceInfo> parse_devices(const QByteArray& text, QString* error) {
    auto fail = [&](const QString& m) {
        if (error) *error = m;
        return std::vector<DeviceInfo>{};
    };
    // The last line that parses as an object: a trainer may log before it (never on stdout, but
    // be lenient with what a future build prints).
    // Each through core's bounded reader: a trainer's output is no more trusted than a file.
    nlohmann::json j;
    for (const QByteArray& line : text.split('\n')) {
        const auto parsed = try_parse_untrusted_json(std::string_view(line.constData(), size_t(line.size())));
        if (parsed && parsed->is_object() && parsed->contains("devices")) j = *parsed;
    }
    if (j.is_null()) j = try_parse_untrusted_json(std::string_view(text.constData(), size_t(text.size()))).value_or(nlohmann::json());
    if (!j.is_object() || !j.contains("devices") || !j["devices"].is_array())
        return fail("not a {\"devices\": [...]} object");
    std::vector<DeviceInfo> out;
    for (const auto& d : j["devices"]) {
        if (!d.is_object() || !d.contains("type") || !d["type"].is_string()) continue;
        DeviceInfo info;
        info.type = QString::fromStdString(d["type"].get<std::string>()).toLower();
        if (info.type != "cpu" && info.type != "cuda" && info.type != "mps") continue;
        if (auto it = d.find("index"); it != d.end() && it->is_number_integer()) info.index = it->get<int>();
        if (auto it = d.find("name"); it != d.end() && it->is_string()) info.name = QString::fromStdString(it->get<std::string>());
        if (auto it = d.find("total_bytes"); it != d.end() && it->is_number()) info.total_bytes = it->get<std::int64_t>();
        if (auto it = d.find("bf16"); it != d.end() && it->is_boolean()) info.bf16 = it->get<bool>();
        out.push_back(info);
    }
    if (out.empty()) return fail("the trainer listed no device");
    return out;
}

DeviceChoice cpu_only(const QString& why) {
    DeviceChoice c;
    DeviceInfo cpu;
    cpu.name = "CPU";
    c.devices.push_back(cpu);
    c.note = why;
    return c;
}

void halve_keeping_peaks(std::vector<QPointF>& samples) {
    std::vector<QPointF> merged;
    merged.reserve(samples.size() / 2 + 1);
    for (size_t i = 0; i + 1 < samples.size(); i += 2)
        merged.push_back(samples[i].y() >= samples[i + 1].y() ? samples[i] : samples[i + 1]);
    if (samples.size() % 2) merged.push_back(samples.back());
    samples = std::move(merged);
}

void DeviceMemoryTrack::ingest(const protocol::Event& e) {
    if (e.type == protocol::EventType::Memory) {
        if (device.isEmpty()) device = QString::fromStdString(e.string_field("device"));
        const std::int64_t r = e.int_field("reserved_bytes", -1);
        if (r < 0) return;
        if (r > reserved_peak) {
            reserved_peak = r;
            allocated_at_reserved_peak = e.int_field("allocated_bytes");
        }
        reserved.push_back({e.t, double(r)});
        if (reserved.size() > kMaxSamples) halve_keeping_peaks(reserved);
    } else if (e.type == protocol::EventType::Done) {
        reserved_peak = std::max(reserved_peak, e.int_field("reserved_peak_bytes"));
    }
}

DeviceMemoryTrack DeviceMemoryTrack::from_run(const std::filesystem::path& run) {
    DeviceMemoryTrack t;
    RunStore::for_each_event_line(run, [&](std::string_view line) {   // bounded: never a pipe or /dev/zero
        // Only the two events that can carry device fields are parsed (a flood is mostly memory).
        if (line.find("\"memory\"") == std::string_view::npos && line.find("\"done\"") == std::string_view::npos) return;
        const auto parsed = protocol::parse_line(line);
        if (parsed.event && parsed.event->rank() == 0) t.ingest(*parsed.event);
    });
    return t;
}

}  // namespace wingspan::ui
