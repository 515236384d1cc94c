#include "wingspan/safe_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <regex>
#include <vector>

#include "wingspan/confined_dir.hpp"
#include "wingspan/errors.hpp"

namespace fs = std::filesystem;

namespace wingspan {

namespace {

constexpr std::uint64_t kFnvOffset = 1469598103934665603ull;
constexpr std::uint64_t kFnvPrime = 1099511628211ull;

std::uint64_t fnv1a(std::uint64_t h, const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= kFnvPrime;
    }
    return h;
}

[[noreturn]] void io_fail(const std::string& what, const fs::path& file, int err) {
    throw IoError("cannot " + what + " " + file.string() + ": " + std::strerror(err));
}

void write_fully(int fd, const void* data, size_t bytes, const fs::path& file) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::write(fd, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) io_fail("write", file, errno);
        if (n == 0) io_fail("write", file, ENOSPC);
        p += n;
        bytes -= static_cast<size_t>(n);
    }
}

}  // namespace

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)), hash_(kFnvOffset) {
    const fs::path dir = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
    // The folder the caller names is opened as named (links followed); the temporary in it never is.
    dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0) io_fail("create a temporary file for", target_, errno);
    name_ = target_.filename().string();
    create_temporary();
}

AtomicFile::AtomicFile(const ConfinedDir& dir, const std::string& name)
    : target_(dir.path() / name), name_(name), hash_(kFnvOffset) {
    dir_fd_ = ::fcntl(dir.fd(), F_DUPFD_CLOEXEC, 0);
    if (dir_fd_ < 0) io_fail("create a temporary file for", target_, errno);
    create_temporary();
}

// ".<name>.tmp-XXXXXX" with a random suffix, O_CREAT | O_EXCL | O_NOFOLLOW (what mkostemp does,
// but relative to the folder's descriptor); mode 0666 less the umask, like any new file.
void AtomicFile::create_temporary() {
    static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::random_device rd;
    std::mt19937_64 rng((std::uint64_t(rd()) << 32) ^ rd() ^ std::uint64_t(::getpid()));
    for (int tries = 0; tries < 100; ++tries) {
        std::string temp = "." + name_ + ".tmp-";
        for (int i = 0; i < 6; ++i) temp += kChars[rng() % (sizeof kChars - 1)];
        fd_ = ::openat(dir_fd_, temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd_ >= 0) {
            temp_ = temp;
            return;
        }
        if (errno != EEXIST) break;
    }
    const int err = errno;
    ::close(dir_fd_);
    dir_fd_ = -1;
    io_fail("create a temporary file for", target_, err);
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!temp_.empty()) ::unlinkat(dir_fd_, temp_.c_str(), 0);
    if (dir_fd_ >= 0) ::close(dir_fd_);
}

void AtomicFile::write(const void* data, size_t bytes) {
    if (fd_ < 0) throw IoError("write to " + target_.string() + " after it was committed");
    write_fully(fd_, data, bytes, target_);
    hash_ = fnv1a(hash_, static_cast<const unsigned char*>(data), bytes);
    bytes_ += bytes;
}

void AtomicFile::commit() {
    if (fd_ < 0) throw IoError("commit " + target_.string() + " twice");
    if (::fsync(fd_) != 0) io_fail("write", target_, errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) io_fail("write", target_, errno);
    // renameat replaces a link at the target itself; it never writes through it.
    if (::renameat(dir_fd_, temp_.c_str(), dir_fd_, name_.c_str()) != 0) io_fail("replace", target_, errno);
    temp_.clear();
    ::fsync(dir_fd_);   // the rename happened; durability of the entry is best effort
}

void write_file_atomically(const fs::path& file, std::string_view text) {
    AtomicFile f(file);
    f.write(text);
    f.commit();
}

void append_line(const fs::path& file, std::string_view line) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) io_fail("open", file, errno);
    std::string buf;
    buf.reserve(line.size() + 1);
    buf.append(line);
    buf.push_back('\n');
    // One write() of the whole line: O_APPEND makes the seek and the write one step, so
    // concurrent writers' lines stay whole.
    const ssize_t n = ::write(fd, buf.data(), buf.size());
    const int err = errno;
    // A short write (the disk filled, the file size limit) leaves a piece of a line: cut it
    // off again, so the file holds whole lines only and the next append starts a fresh one.
    if (n > 0 && static_cast<size_t>(n) != buf.size()) {
        const off_t end = ::lseek(fd, 0, SEEK_CUR);
        const int cut = end >= n ? ::ftruncate(fd, end - n) : 0;
        (void)cut;   // best effort: should it fail, the reader skips a torn last line
    }
    ::close(fd);
    if (n < 0) io_fail("append to", file, err);
    if (static_cast<size_t>(n) != buf.size()) io_fail("append to", file, ENOSPC);
}

bool create_directory_exclusively(const fs::path& dir) {
    if (::mkdir(dir.c_str(), 0777) == 0) return true;
    if (errno == EEXIST) return false;
    io_fail("create the folder", dir, errno);
}

void require_writable_directory(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw IoError("cannot create the folder " + dir.string() + ": " + ec.message());
    if (!fs::is_directory(dir, ec)) throw IoError(dir.string() + " is not a folder");
    std::string pattern = (dir / ".wingspan-write-test-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd < 0) throw IoError("cannot write in " + dir.string() + ": " + std::strerror(errno));
    const char probe = '\n';
    const bool ok = ::write(fd, &probe, 1) == 1;
    const int err = errno;
    ::close(fd);
    ::unlink(buf.data());
    if (!ok) throw IoError("cannot write in " + dir.string() + ": " + std::strerror(err));
}

int remove_stale_temporaries(const fs::path& dir) {
    static const std::regex kTemp(R"(\..+\.tmp-[A-Za-z0-9]{6})");
    int removed = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_regular_file(ec) && !e.is_symlink(ec)) continue;
        if (!std::regex_match(e.path().filename().string(), kTemp)) continue;
        if (fs::remove(e.path(), ec)) ++removed;
    }
    return removed;
}

std::uint64_t file_checksum(const fs::path& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) io_fail("read", file, errno);
    std::uint64_t h = kFnvOffset;
    std::vector<unsigned char> buf(1 << 20);
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            io_fail("read", file, err);
        }
        if (n == 0) break;
        h = fnv1a(h, buf.data(), static_cast<size_t>(n));
    }
    ::close(fd);
    return h;
}

}  // namespace wingspan
