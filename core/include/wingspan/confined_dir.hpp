#pragma once
// A folder reached from a trusted root without following any symbolic link below it, and held
// open by descriptor: every file made, renamed or removed through it stays inside, whatever is
// planted on the way (a shared cache, another user's links). The root itself is trusted, so a
// user may keep a cache on another disk behind a link. Linux and macOS (openat, O_NOFOLLOW).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace wingspan {

// An owned file descriptor, closed when it goes.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd();
    Fd(Fd&& o) noexcept : fd_(o.release()) {}
    Fd& operator=(Fd&& o) noexcept;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }
    int release() {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_ = -1;
};

class ConfinedDir {
public:
    // root/relative, walked one folder at a time with O_NOFOLLOW; missing folders are made when
    // `create`. Throws IoError naming the path for a link, a non-folder, ".." or a failure.
    static ConfinedDir open(const std::filesystem::path& root, const std::filesystem::path& relative, bool create);
    // A folder below this one, by the same rules.
    ConfinedDir sub(const std::filesystem::path& relative, bool create) const;

    int fd() const { return fd_.get(); }
    const std::filesystem::path& path() const { return path_; }   // for messages only

    // What `name` is, never following a link: nothing, a regular file (with its size), or
    // something else (a link, a folder, a FIFO, ...).
    struct Entry {
        enum Kind { Missing, File, Other } kind = Missing;
        std::uint64_t size = 0;
        std::uint64_t links = 0;   // hard links: more than 1 means the bytes are also elsewhere
    };
    Entry entry(const std::string& name) const;
    // Opens a regular file here; O_NOFOLLOW and O_CLOEXEC are added, and a FIFO never blocks.
    // Throws IoError for a link ("is a symbolic link; ... not followed") or a non-regular file.
    Fd open_file(const std::string& name, int flags) const;
    // rename() within this folder (a link at `to` is replaced, never followed). Throws IoError.
    void rename(const std::string& from, const std::string& to) const;
    // Removes a file or link (never what a link points at); false if there was nothing.
    bool remove(const std::string& name) const;
    // The text of the link `name`, if it is one.
    std::optional<std::string> read_link(const std::string& name) const;
    // Makes `name` a symbolic link to `target`, replacing what was there atomically. Throws IoError.
    void replace_with_link(const std::string& name, const std::string& target) const;

    // The message for a refused link at `what`: one wording everywhere.
    static std::string link_refusal(const std::filesystem::path& what);
    // Why `name` here (an Entry::Other) is refused: a link, or not a regular file.
    std::string refusal(const std::string& name) const;

private:
    ConfinedDir(Fd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
    Fd fd_;
    std::filesystem::path path_;
};

}  // namespace wingspan
