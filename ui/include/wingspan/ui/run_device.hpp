#pragma once
// Where a run trains and what that device held: the devices `wingspan-train devices` lists
// (CPU only when the trainer cannot list them), and the caching allocator's reserved bytes
// that GPU runs report beside the allocated ones.
#include <cstdint>
#include <filesystem>
#include <vector>

#include <QByteArray>
#include <QPointF>
#include <QString>

#include "wingspan/protocol.hpp"

namespace wingspan::ui {

// One entry of `wingspan-train devices`: {"type","index","name","total_bytes","bf16"}.
struct DeviceInfo {
    QString type = "cpu";   // cpu, cuda, mps
    int index = 0;
    QString name;
    std::int64_t total_bytes = 0;
    bool bf16 = false;

    QString id() const;      // what --device takes: "cpu", "cuda:0", "mps"
    QString label() const;   // "cuda:0 · NVIDIA GeForce RTX 4090 · 24.0 GB"
    bool isGpu() const { return type != "cpu"; }
};

// Parses the JSON `wingspan-train devices` prints. Empty, with `error` set, when it is not
// {"devices":[...]} with at least one well-formed entry.
std::vector<DeviceInfo> parse_devices(const QByteArray& json_text, QString* error = nullptr);

// The devices a run can choose from. `listed` is false when the trainer could not list them
// (an older build, or it failed): then the list is the CPU alone and no --device is passed.
struct DeviceChoice {
    std::vector<DeviceInfo> devices;
    bool listed = false;
    QString note;            // why only the CPU, when not listed
};
DeviceChoice cpu_only(const QString& why);

// Halves a sampled series in place, keeping the larger of each pair of neighbours, so a peak
// survives any amount of thinning.
void halve_keeping_peaks(std::vector<QPointF>& samples);

// What the device's allocator reserved over a run (GPU runs report `reserved_bytes` in their
// memory events and `reserved_peak_bytes` in `done`; on the CPU it equals the allocated bytes).
struct DeviceMemoryTrack {
    QString device;                    // the memory events' `device` ("cuda:0"), if given
    std::vector<QPointF> reserved;     // (t, reserved bytes), thinned pairwise past kMaxSamples
    std::int64_t reserved_peak = 0;    // the largest reserved seen, or done's reserved_peak_bytes
    std::int64_t allocated_at_reserved_peak = 0;

    static constexpr size_t kMaxSamples = 2048;
    bool hasReserved() const { return reserved_peak > 0; }
    void ingest(const protocol::Event& e);
    // Replays a run folder's events.jsonl (history runs); rank 0's lines, as the panel shows.
    // Read through RunStore's bounded reader; throws InputError as RunStore::load does.
    static DeviceMemoryTrack from_run(const std::filesystem::path& run);
};

}  // namespace wingspan::ui
