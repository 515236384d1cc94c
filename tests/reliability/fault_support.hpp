#pragma once
// Faults the reliability and hostile suites inject: an environment variable set for a scope,
// and a "full disk" (file writes limited to a few bytes).
#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>

namespace wingspan::test {

struct ScopedEnv {
    std::string name;
    std::optional<std::string> old;
    ScopedEnv(const char* n, const std::string& value) : name(n) {
        if (const char* v = std::getenv(n)) old = v;
        setenv(n, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old) setenv(name.c_str(), old->c_str(), 1);
        else unsetenv(name.c_str());
    }
};

// Runs `body` with file writes limited to `bytes` (RLIMIT_FSIZE, SIGXFSZ ignored): writes
// past it fail with EFBIG, as on a full disk.
template <typename F>
void with_file_size_limit(rlim_t bytes, F body) {
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
    try {
        body();
    } catch (...) {
        setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
        throw;
    }
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
}

}  // namespace wingspan::test
