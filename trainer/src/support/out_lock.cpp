#include "support/out_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "wingspan/errors.hpp"

namespace wingspan::train {

namespace {

// The pid an owner wrote (0 when the file is empty or holds something else).
pid_t read_pid(int fd) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    char* end = nullptr;
    const long pid = std::strtol(buf, &end, 10);
    return pid > 0 && pid < (1L << 30) ? static_cast<pid_t>(pid) : 0;
}

}  // namespace

OutLock::OutLock(const std::filesystem::path& dir, pid_t* stale_pid) : file_(dir / kOutLockFile) {
    if (stale_pid) *stale_pid = 0;
    // The owner removes the file before it unlocks, so a lock taken on a file that is no
    // longer the one at the path is worthless: try again on the new one.
    for (int attempt = 0; attempt < 100; ++attempt) {
        // O_NOFOLLOW: a planted symlink never makes us create or lock a file elsewhere.
        const int fd = ::open(file_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        if (fd < 0)
            throw IoError("cannot create the lock file " + file_.string() + ": " + std::strerror(errno));
        struct stat st{};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            throw IoError(file_.string() + " is not a regular file (it is the run folder's lock file)");
        }
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            const pid_t owner = read_pid(fd);
            ::close(fd);
            if (err == EWOULDBLOCK)
                throw IoError(dir.string() + " is in use by another wingspan-train run" +
                              (owner > 0 ? " (pid " + std::to_string(owner) + ")" : std::string()) +
                              "; wait for it to end or choose another --out folder");
            throw IoError("cannot lock " + file_.string() + ": " + std::strerror(err));
        }
        struct stat now{};
        if (::stat(file_.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
            ::close(fd);   // removed (or replaced) by the owner that just ended
            continue;
        }
        // Ours. A pid still inside belongs to a run that died without removing the file.
        if (stale_pid) *stale_pid = read_pid(fd);
        // The pid is for the message a second run gets; the lock holds without it (a full disk).
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
        fd_ = fd;
        return;
    }
    throw IoError("cannot lock " + dir.string() + ": its lock file keeps being replaced");
}

OutLock::~OutLock() {
    if (fd_ < 0) return;
    ::unlink(file_.c_str());
    ::close(fd_);   // releases the lock
}

}  // namespace wingspan::train
