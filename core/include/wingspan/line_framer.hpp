#pragma once
// Splits a byte stream (a child's stdout or stderr, read in chunks of any size) into lines with
// a bounded buffer. It is the one framer of the process layer: `wingspan watch`, the window's
// run session (ui/src/run/run_session.cpp), the Run-a-recipe dialog and wingspan-train's --nproc
// launcher all read their children through it.
//
// A line longer than the bound is never kept whole: its first `max_line` bytes are passed on at
// once as an over-long line (the caller reports it: an `error` event with code `line_too_long`,
// docs/protocol.md) and the rest of it goes to the optional overflow callback as it arrives (an
// echo may want it), then is forgotten. So the framer holds at most `max_line` + 1 bytes
// whatever the child writes.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace wingspan {

// The longest run-protocol line a reader keeps (the window's run session, the --nproc
// launcher), in bytes; a longer one becomes a `line_too_long` error.
inline constexpr std::size_t kMaxProtocolLineBytes = std::size_t(4) << 20;

struct FramedLine {
    // The line without its "\n" and without a "\r" just before it; for an over-long line, its
    // first max_line bytes.
    std::string_view text;
    bool over_long = false;
    // False for the last line of a stream that ended without a newline (finish()).
    bool terminated = true;
};

class LineFramer {
public:
    using Sink = std::function<void(const FramedLine&)>;
    // The bytes of an over-long line past the bound, as they arrive; `line_ends`: its newline
    // came at the end of `bytes` (the newline itself is not passed).
    using Overflow = std::function<void(std::string_view bytes, bool line_ends)>;

    // `max_line`: the longest line kept, in bytes (a "\r" before the newline not counted); at least 1.
    explicit LineFramer(std::size_t max_line = std::size_t(1) << 20);

    void feed(std::string_view bytes, const Sink& line, const Overflow& overflow = {});
    void feed(const char* data, std::size_t n, const Sink& line, const Overflow& overflow = {}) {
        feed(std::string_view(data, n), line, overflow);
    }
    // The end of the stream: a partial last line is passed on (terminated = false); the framer
    // is empty again after.
    void finish(const Sink& line);

    std::size_t max_line() const { return max_; }
    // Bytes of an unfinished line held now (at most max_line + 1).
    std::size_t buffered() const { return pending_.size(); }
    // Lines passed on over-long so far.
    std::int64_t over_long_lines() const { return over_long_; }

private:
    std::size_t max_;
    std::string pending_;
    bool skipping_ = false;   // inside an over-long line already passed on
    std::int64_t over_long_ = 0;
};

// The protocol line that reports an over-long line of `stream` ("stdout", "stderr"): an `error`
// with code `line_too_long`, the bound in `bytes`, the line's first bytes quoted in the message
// and, from the --nproc launcher, the `rank` that wrote it (rank < 0: none).
std::string line_too_long_event(double t, std::string_view stream, std::size_t max_line, std::string_view start,
                                int rank = -1);

}  // namespace wingspan
