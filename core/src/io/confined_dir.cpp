#include "wingspan/confined_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "wingspan/errors.hpp"

namespace fs = std::filesystem;

namespace wingspan {

namespace {

[[noreturn]] void fail(const std::string& what, const fs::path& file, int err) {
    throw IoError("cannot " + what + " " + file.string() + ": " + std::strerror(err));
}

bool is_link_at(int dirfd, const std::string& name) {
    struct stat st {};
    return ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

// One folder below `dirfd`, never through a link.
Fd open_child_dir(int dirfd, const std::string& name, const fs::path& shown, bool create) {
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(dirfd, name.c_str(), flags);
    if (fd < 0 && errno == ENOENT && create) {
        if (::mkdirat(dirfd, name.c_str(), 0777) != 0 && errno != EEXIST) fail("create the folder", shown, errno);
        fd = ::openat(dirfd, name.c_str(), flags);
    }
    if (fd >= 0) return Fd(fd);
    const int err = errno;
    if (is_link_at(dirfd, name)) throw IoError(ConfinedDir::link_refusal(shown));
    if (err == ENOTDIR) throw IoError(shown.string() + " is not a folder; remove it and try again");
    fail("open the folder", shown, err);
}

}  // namespace

Fd::~Fd() {
    if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = o.release();
    }
    return *this;
}

std::string ConfinedDir::link_refusal(const fs::path& what) {
    return what.string() + " is a symbolic link; Wingspan never follows links inside the folders it writes "
                           "(one planted there could redirect a write anywhere). Remove it and try again";
}

std::string ConfinedDir::refusal(const std::string& name) const {
    if (is_link_at(fd(), name)) return link_refusal(path_ / name);
    return (path_ / name).string() + " is not a regular file (a folder, a pipe or a device); remove it and try again";
}

ConfinedDir ConfinedDir::open(const fs::path& root, const fs::path& relative, bool create) {
    // No root is no folder (never the current one by accident).
    if (root.empty()) throw IoError("no folder given to write " + relative.string() + " in");
    std::error_code ec;
    if (create) fs::create_directories(root, ec);   // the root is the user's: links allowed
    const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail("open the folder", root, errno);
    return ConfinedDir(Fd(fd), root).sub(relative, create);
}

ConfinedDir ConfinedDir::sub(const fs::path& relative, bool create) const {
    Fd current(::dup(fd_.get()));
    if (current.get() < 0) fail("open the folder", path_, errno);
    fs::path shown = path_;
    for (const auto& part : relative) {
        const std::string name = part.string();
        if (name.empty() || name == "." || name == "/") continue;
        if (name == "..") throw IoError((path_ / relative).string() + " leaves " + path_.string());
        shown /= name;
        current = open_child_dir(current.get(), name, shown, create);
    }
    return ConfinedDir(std::move(current), shown);
}

ConfinedDir::Entry ConfinedDir::entry(const std::string& name) const {
    struct stat st {};
    if (::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    if (!S_ISREG(st.st_mode)) return {Entry::Other, 0, 0};
    return {Entry::File, static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_nlink)};
}

Fd ConfinedDir::open_file(const std::string& name, int flags) const {
    // O_NONBLOCK: opening a planted FIFO returns at once (and is refused below).
    const int fd = ::openat(fd_.get(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
    if (fd < 0) {
        const int err = errno;
        if (is_link_at(fd_.get(), name)) throw IoError(link_refusal(path_ / name));
        fail((flags & (O_WRONLY | O_RDWR)) ? "write" : "read", path_ / name, err);
    }
    Fd file(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail("read", path_ / name, errno);
    if (!S_ISREG(st.st_mode)) throw IoError((path_ / name).string() + " is not a regular file; remove it and try again");
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return file;
}

void ConfinedDir::rename(const std::string& from, const std::string& to) const {
    if (::renameat(fd(), from.c_str(), fd(), to.c_str()) != 0) fail("move " + (path_ / from).string() + " to", path_ / to, errno);
}

bool ConfinedDir::remove(const std::string& name) const { return ::unlinkat(fd(), name.c_str(), 0) == 0; }

std::optional<std::string> ConfinedDir::read_link(const std::string& name) const {
    std::vector<char> buf(4096);
    const ssize_t n = ::readlinkat(fd(), name.c_str(), buf.data(), buf.size());
    if (n < 0 || static_cast<size_t>(n) >= buf.size()) return std::nullopt;
    return std::string(buf.data(), static_cast<size_t>(n));
}

void ConfinedDir::replace_with_link(const std::string& name, const std::string& target) const {
    // A fresh random name, made by symlinkat (which fails rather than follow anything there).
    std::random_device rd;
    for (int tries = 0;; ++tries) {
        const std::string tmp = "." + name + ".tmp-link-" + std::to_string(rd());
        if (::symlinkat(target.c_str(), fd(), tmp.c_str()) != 0) {
            if (errno == EEXIST && tries < 16) continue;
            fail("create the link", path_ / name, errno);
        }
        if (::renameat(fd(), tmp.c_str(), fd(), name.c_str()) != 0) {
            const int err = errno;
            ::unlinkat(fd(), tmp.c_str(), 0);
            fail("replace", path_ / name, err);
        }
        return;
    }
}

}  // namespace wingspan
