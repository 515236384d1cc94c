#pragma once
// One run per run folder. Two trainers given the same --out destroyed each other: the second
// one's start-up cleanup removed the first one's checkpoint in progress, and the folder mixed
// both runs. A run takes an advisory lock (flock) on a small file in the folder for as long as
// it uses it, with its pid written inside for the message a second run gets. The kernel drops
// the lock when its owner dies however it dies, so a lock file a killed run left behind is
// stale by construction: it is taken over (and reported), never waited for.
#include <filesystem>
#include <string>
#include <sys/types.h>

namespace wingspan::train {

inline constexpr const char* kOutLockFile = ".wingspan-train.lock";

class OutLock {
public:
    // Locks `dir` (which exists). Throws IoError naming the folder and the pid of the run that
    // holds it, or the reason the lock file cannot be made. `stale_pid` (if given) is set to
    // the pid a dead owner left in the file, 0 if none.
    explicit OutLock(const std::filesystem::path& dir, pid_t* stale_pid = nullptr);
    ~OutLock();   // removes the lock file, then releases the lock
    OutLock(const OutLock&) = delete;
    OutLock& operator=(const OutLock&) = delete;

private:
    std::filesystem::path file_;
    int fd_ = -1;
};

}  // namespace wingspan::train
