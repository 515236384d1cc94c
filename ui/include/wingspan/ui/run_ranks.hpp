#pragma once
// A run of several ranks (`wingspan-train --nproc N`) as the run panel shows it: every
// protocol line carries its `rank`, and the ranks' lines arrive in one stream. The panel's
// record (charts, summary, loss) follows rank 0, the way one process would read; RankTrack
// keeps each rank's own memory (tensor bytes over time, peaks) and its per-device prediction
// (each rank's `predicted` event is core's prediction for one device of that sharding).
#include <cstdint>
#include <filesystem>
#include <map>
#include <vector>

#include <QPointF>
#include <QString>

#include "wingspan/protocol.hpp"
#include "wingspan/run_record.hpp"
#include "wingspan/units.hpp"

namespace wingspan::ui {

struct RankMemory {
    int rank = 0;
    std::int64_t pid = 0;                 // from its hello (the rank's own process)
    std::vector<QPointF> allocated;       // (t, live tensor bytes), thinned keeping peaks
    std::int64_t peak = 0;                // largest allocated / peak_bytes seen, or done's peak
    std::int64_t rss_peak = 0;            // the rank's own resident memory at most
    std::int64_t predicted_peak = 0;      // its `predicted` event: core's per-device figure
    std::int64_t predicted_total = 0;
    std::int64_t memory_events = 0;
};

struct RankTrack {
    int world_size = 1;                   // from the hellos (1: a single process)
    QString sharding;                     // the plan in rank 0's hello ("ddp", "zero1", ...)
    std::map<int, RankMemory> ranks;

    static constexpr size_t kMaxSamples = 2048;
    bool multi() const { return world_size > 1 || ranks.size() > 1; }
    void ingest(const protocol::Event& e);
    // The largest peak over the ranks and the rank holding it; the spread is max − min.
    std::int64_t max_peak(int* rank = nullptr) const;
    std::int64_t min_peak() const;
    // "2 ranks (zero1) · peak per rank 1.23 MB (rank 1) to 1.20 MB, spread 30 kB · predicted per
    // device 1.25 MB"; empty for a single process.
    QString summaryText(ByteUnit unit) const;
    // Replays a run folder's events.jsonl (history runs), through RunStore's bounded reader.
    static RankTrack from_run(const std::filesystem::path& run);
};

// Whether the panel's RunRecord takes this event: rank 0's lines (its series, prediction,
// checkpoints, `done`), and every rank's errors and warnings (a failing rank must be seen).
bool record_takes(const protocol::Event& e);

// A run folder read as the panel shows it: RunStore::load's status, with only what
// record_takes keeps when the run had several ranks. Throws as RunStore::load.
RunRecord load_panel_record(const std::filesystem::path& run);

}  // namespace wingspan::ui
