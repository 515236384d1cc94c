// Several ranks in one stream (see run_ranks.hpp): which lines the panel's record takes, and
// each rank's own memory beside it.
#include "wingspan/ui/run_ranks.hpp"

#include <algorithm>

#include "wingspan/protocol_events.hpp"

#include "wingspan/ui/run_charts.hpp"
#include "wingspan/ui/run_device.hpp"

namespace wingspan::ui {

bool record_takes(const protocol::Event& e) {
    using protocol::EventType;
    if (e.rank() == 0) return true;
    if (e.type == EventType::Error) return true;
    const auto log = protocol::as_log(e);
    return log && log->level == "warning";
}

void RankTrack::ingest(const protocol::Event& e) {
    using protocol::EventType;
    const int r = e.rank();
    switch (e.type) {
        case EventType::Hello: {
            const protocol::HelloEvent hello = *protocol::as_hello(e);
            world_size = std::max<int>(world_size, int(hello.world_size));
            RankMemory& m = ranks[r];
            m.rank = r;
            m.pid = hello.pid;
            if (r == 0 && !hello.sharding.empty()) sharding = QString::fromStdString(hello.sharding);
            break;
        }
        case EventType::Predicted: {
            const protocol::PredictedEvent predicted = *protocol::as_predicted(e);
            RankMemory& m = ranks[r];
            m.rank = r;
            m.predicted_peak = predicted.peak_bytes;
            m.predicted_total = predicted.total_bytes;
            break;
        }
        case EventType::Memory: {
            RankMemory& m = ranks[r];
            m.rank = r;
            ++m.memory_events;
            const protocol::MemoryEvent mem = *protocol::as_memory(e);
            m.peak = std::max({m.peak, mem.allocated_bytes, mem.peak_bytes});
            m.rss_peak = std::max({m.rss_peak, mem.rss_bytes, mem.rss_peak_bytes});
            m.allocated.push_back({e.t, double(mem.allocated_bytes)});
            if (m.allocated.size() > kMaxSamples) halve_keeping_peaks(m.allocated);
            break;
        }
        case EventType::Done: {
            RankMemory& m = ranks[r];
            m.rank = r;
            const protocol::DoneEvent done = *protocol::as_done(e);
            m.peak = std::max(m.peak, done.peak_bytes);
            m.rss_peak = std::max(m.rss_peak, done.rss_peak_bytes);
            break;
        }
        default: break;
    }
}

std::int64_t RankTrack::max_peak(int* rank) const {
    std::int64_t best = 0;
    for (const auto& [r, m] : ranks)
        if (m.peak > best) {
            best = m.peak;
            if (rank) *rank = r;
        }
    return best;
}

std::int64_t RankTrack::min_peak() const {
    std::int64_t low = 0;
    bool any = false;
    for (const auto& [r, m] : ranks)
        if (m.peak > 0 && (!any || m.peak < low)) low = m.peak, any = true;
    return low;
}

QString RankTrack::summaryText(ByteUnit unit) const {
    if (!multi()) return {};
    QString s = QString("%1 ranks").arg(std::max<int>(world_size, int(ranks.size())));
    if (!sharding.isEmpty()) s += " (" + sharding + ")";
    int top = 0;
    const std::int64_t high = max_peak(&top), low = min_peak();
    if (high > 0) {
        s += " · tensor peak per rank " + format_run_bytes(double(high), unit) + QString(" (rank %1)").arg(top);
        if (low != high) s += " to " + format_run_bytes(double(low), unit);
        s += ", spread " + (high == low ? QString("none") : format_run_bytes(double(high - low), unit));
    }
    std::int64_t predicted = 0;
    for (const auto& [r, m] : ranks) predicted = std::max(predicted, m.predicted_peak);
    if (predicted > 0) s += " · predicted per device " + format_run_bytes(double(predicted), unit);
    return s;
}

RankTrack RankTrack::from_run(const std::filesystem::path& run) {
    RankTrack t;
    RunStore::for_each_event_line(run, [&](std::string_view line) {   // bounded: never a pipe or /dev/zero
        const auto parsed = protocol::parse_line(line);
        if (parsed.event) t.ingest(*parsed.event);
    });
    return t;
}

RunRecord load_panel_record(const std::filesystem::path& run) {
    RunRecord all = RunStore::load(run);   // validates the folder and reads how it ended
    const auto hello = protocol::as_hello(protocol::Event{protocol::EventType::Hello, 0, all.hello()});
    if (hello->world_size <= 1)
        return all;
    RunRecord r;
    RunStore::for_each_event_line(run, [&](std::string_view line) {
        const auto parsed = protocol::parse_line(line);
        if (!parsed.event) r.ingest_line(std::string(line));   // counted as unreadable, as RunStore::load does
        else if (record_takes(*parsed.event)) r.ingest(*parsed.event);
    });
    for (const auto& note : all.read_notes()) r.add_read_note(note);
    r.finish(all.exit_code(), all.exit_signal());
    return r;
}

}  // namespace wingspan::ui
