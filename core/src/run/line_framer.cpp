#include "wingspan/line_framer.hpp"

#include <algorithm>

#include "wingspan/protocol.hpp"
#include "wingspan/quoting.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

LineFramer::LineFramer(std::size_t max_line) : max_(std::max<std::size_t>(1, max_line)) {}

void LineFramer::feed(std::string_view data, const Sink& line, const Overflow& overflow) {
    while (!data.empty()) {
        const std::size_t nl = data.find('\n');
        const bool ends = nl != std::string_view::npos;
        const std::string_view segment = data.substr(0, ends ? nl : data.size());
        if (skipping_) {
            if (overflow) overflow(segment, ends);
        } else {
            // One byte of room past the bound, for a "\r" that a "\n" may follow.
            const std::size_t room = max_ + 1 - pending_.size();
            const std::size_t take = std::min(room, segment.size());
            pending_.append(segment.data(), take);
            const std::string_view rest = segment.substr(take);
            const bool fits = pending_.size() <= max_ || (pending_.size() == max_ + 1 && pending_.back() == '\r' && rest.empty());
            if (!fits) {
                ++over_long_;
                line(FramedLine{std::string_view(pending_).substr(0, max_), true, ends});
                if (overflow) {
                    const std::string spill = pending_.substr(max_);
                    if (!spill.empty()) overflow(spill, false);
                    overflow(rest, ends);
                }
                pending_.clear();
                skipping_ = true;
            }
        }
        if (!ends) return;
        if (!skipping_) {
            if (!pending_.empty() && pending_.back() == '\r') pending_.pop_back();
            line(FramedLine{pending_, false, true});
        }
        pending_.clear();
        skipping_ = false;
        data.remove_prefix(nl + 1);
    }
}

void LineFramer::finish(const Sink& line) {
    if (!skipping_ && !pending_.empty()) {
        if (pending_.back() == '\r') pending_.pop_back();
        line(FramedLine{pending_, false, false});
    }
    pending_.clear();
    skipping_ = false;
}

std::string line_too_long_event(double t, std::string_view stream, std::size_t max_line, std::string_view start,
                                int rank) {
    constexpr std::size_t kQuoted = 80;
    std::string message = "a " + std::string(stream) + " line longer than " + format_bytes(double(max_line), ByteUnit::GiB, 0) +
                          " was not read (it starts '" + quoting::one_line(start.substr(0, kQuoted)) +
                          (start.size() > kQuoted ? "…" : "") + "')";
    nlohmann::json fields = {{"code", "line_too_long"}, {"message", message}, {"bytes", max_line}};
    if (rank >= 0) fields["rank"] = rank;
    return protocol::encode(protocol::EventType::Error, t, std::move(fields));
}

}  // namespace wingspan
