#include "wingspan/json_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

std::string read_regular_file(const std::filesystem::path& file, std::uint64_t max_bytes) {
    // O_NONBLOCK: opening a named pipe must not wait for a writer; fstat then refuses it.
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw InputError(file.string() + " is " + describe_mode(st.st_mode) + ", not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
        throw InputError(file.string() + " is " + std::to_string(st.st_size) + " bytes, more than the " +
                         std::to_string(max_bytes) + " this reader accepts");
    std::string text(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
        if (n == 0) break;   // shrank while we read
        got += static_cast<size_t>(n);
    }
    text.resize(got);
    return text;
}

nlohmann::json read_untrusted_json_file(const std::filesystem::path& file, std::uint64_t max_bytes) {
    return parse_untrusted_json(read_regular_file(file, max_bytes), file.string());
}

}  // namespace wingspan
