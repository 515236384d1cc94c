#include "wingspan/json_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>
#include <algorithm>

#include "wingspan/errors.hpp"

namespace wingspan {

bool json_depth_within(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > max_depth) return false;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return true;
}

std::optional<nlohmann::json> try_parse_untrusted_json(std::string_view text, std::string* error, int max_depth) {
    // The depth is checked before parsing: nlohmann's parser itself is iterative, but copying,
    // comparing or dumping the value it builds recurses once per level.
    if (!json_depth_within(text, max_depth)) {
        if (error) *error = "nested deeper than " + std::to_string(max_depth) + " levels";
        return std::nullopt;
    }
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        if (error) *error = std::string("not valid JSON (") + e.what() + ")";
        return std::nullopt;
    }
}

nlohmann::json parse_untrusted_json(std::string_view text, const std::string& what, int max_depth) {
    std::string error;
    auto j = try_parse_untrusted_json(text, &error, max_depth);
    if (!j) throw InputError(what + ": " + error);
    return std::move(*j);
}

namespace {

std::string describe_mode(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a named pipe";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    return "not a regular file";
}

}  // namespace

void require_regular_file(const std::filesystem::path& file) {
    struct stat st{};
    if (::stat(file.c_str(), &st) != 0) return;   // missing: the caller's own message says so
    if (!S_ISREG(st.st_mode))
        throw InputError(file.string() + " is " + describe_mode(st.st_mode) + ", not a regular file");
}

namespace {

struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
};

// Opens a regular file for reading, or throws InputError saying what it is instead.
// O_NONBLOCK: opening a named pipe must not wait for a writer; fstat then refuses it.
// Returns -1 (no throw) for a missing file when missing_ok.
int open_regular_file(const std::filesystem::path& file, struct stat& st, bool missing_ok = false) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && missing_ok && errno == ENOENT) return -1;
    if (fd < 0) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
    Closer on_error{fd};
    if (::fstat(fd, &st) != 0) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw InputError(file.string() + " is " + describe_mode(st.st_mode) + ", not a regular file");
    on_error.fd = -1;
    return fd;
}

}  // namespace

namespace {

// `bytes` bytes of an open file from `start`; fewer when it shrank while we read.
std::string read_range(int fd, std::uint64_t start, std::uint64_t bytes, const std::filesystem::path& file) {
    std::string text(static_cast<size_t>(bytes), '\0');
    size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, off_t(start + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    text.resize(got);
    return text;
}

}  // namespace

std::string read_regular_file(const std::filesystem::path& file, std::uint64_t max_bytes) {
    struct stat st{};
    const int fd = open_regular_file(file, st);
    Closer closer{fd};
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
        throw InputError(file.string() + " is " + std::to_string(st.st_size) + " bytes, more than the " +
                         std::to_string(max_bytes) + " this reader accepts");
    return read_range(fd, 0, static_cast<std::uint64_t>(st.st_size), file);
}

std::optional<std::string> try_read_regular_file(const std::filesystem::path& file, std::uint64_t max_bytes,
                                                 std::string* error) {
    try {
        return read_regular_file(file, max_bytes);
    } catch (const InputError& e) {
        if (error) *error = e.what();
        return std::nullopt;
    }
}

std::string read_regular_file_tail(const std::filesystem::path& file, std::uint64_t max_bytes, bool* cut) {
    struct stat st{};
    const int fd = open_regular_file(file, st);
    Closer closer{fd};
    const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
    const std::uint64_t start = size > max_bytes ? size - max_bytes : 0;
    if (cut) *cut = start > 0;
    return read_range(fd, start, size - start, file);
}

LineReadStats for_each_line_of_regular_file(const std::filesystem::path& file, std::uint64_t max_bytes,
                                            std::size_t max_line_bytes,
                                            const std::function<void(std::string_view)>& line, bool missing_is_empty) {
    LineReadStats stats;
    struct stat st{};
    const int fd = open_regular_file(file, st, missing_is_empty);
    if (fd < 0) return stats;
    Closer closer{fd};
    stats.file_bytes = static_cast<std::uint64_t>(st.st_size);
    std::string pending;          // the start of a line that spans blocks
    bool skipping = false;        // inside a line already counted as too long
    std::vector<char> block(1 << 20);
    std::uint64_t total = 0;
    auto emit = [&](std::string_view text) {
        if (skipping) {
            skipping = false;
            return;
        }
        if (!pending.empty()) {
            pending.append(text);
            text = pending;
        }
        if (text.size() > max_line_bytes) ++stats.long_lines;
        else {
            ++stats.lines;
            line(text);
        }
        pending.clear();
    };
    for (;;) {
        if (total >= max_bytes) {
            stats.truncated = true;   // a file that grew past the cap, or was larger from the start
            char probe;
            if (::read(fd, &probe, 1) <= 0) stats.truncated = false;
            break;
        }
        const size_t want = static_cast<size_t>(std::min<std::uint64_t>(block.size(), max_bytes - total));
        const ssize_t n = ::read(fd, block.data(), want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
        if (n == 0) break;
        total += static_cast<std::uint64_t>(n);
        std::string_view rest(block.data(), static_cast<size_t>(n));
        for (size_t nl; (nl = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(nl + 1))
            emit(rest.substr(0, nl));
        if (skipping) continue;
        if (pending.size() + rest.size() > max_line_bytes) {
            ++stats.long_lines;   // counted now; its remainder is skipped up to the next newline
            pending.clear();
            skipping = true;
        } else {
            pending.append(rest);
        }
    }
    // A last line without its newline is a line; a line cut by the cap is not.
    if (!pending.empty() && !skipping && !stats.truncated) emit({});
    return stats;
}

nlohmann::json read_untrusted_json_file(const std::filesystem::path& file, std::uint64_t max_bytes) {
    return parse_untrusted_json(read_regular_file(file, max_bytes), file.string());
}

}  // namespace wingspan
