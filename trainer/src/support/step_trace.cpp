#include "support/step_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "support/emit.hpp"

namespace wingspan::train {

StepTrace::StepTrace(bool wanted) {
    const char* v = std::getenv("WINGSPAN_PROFILE_TRACE");
    if (!wanted || !v || !*v) return;
    path_ = v;
    // Created (empty) now, written by libtorch's profiler when the steps end.
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        error_ = "WINGSPAN_PROFILE_TRACE=" + path_ + ": cannot write the trace there (" + std::strerror(errno) + ")";
        path_.clear();
        return;
    }
    ::close(fd);
}

StepTrace::~StepTrace() {
    try {
        finish();
    } catch (const std::exception& e) {   // a destructor must not throw
        log_warning(std::string("WINGSPAN_PROFILE_TRACE: ") + e.what());
    }
}

void StepTrace::before_step() {
    if (path_.empty()) return;
    if (++steps_seen_ == 2) profile_ = std::make_unique<torch::autograd::profiler::RecordProfile>(path_);
    if (profile_) ++steps_traced_;
}

void StepTrace::finish() {
    if (path_.empty()) return;
    const std::string path = std::exchange(path_, std::string());
    if (!profile_) {
        std::error_code ignored;
        std::filesystem::remove(path, ignored);   // the empty file the constructor made
        log_warning("WINGSPAN_PROFILE_TRACE: no trace written, the run made fewer than 2 steps (the first is left out)");
        return;
    }
    profile_.reset();   // RecordProfile writes the file as it ends
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (ec || bytes == 0) {
        log_warning("WINGSPAN_PROFILE_TRACE: the profiler wrote nothing to " + path);
        return;
    }
    log_info("profile trace of " + std::to_string(steps_traced_) + " steps written to " + path + " (" +
             std::to_string(bytes) + " bytes)");
}

}  // namespace wingspan::train
