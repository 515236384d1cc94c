#include "wingspan/user_dirs.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace wingspan {

std::filesystem::path home_directory() {
    if (const char* home = std::getenv("HOME"); home && *home) return home;
    // HOME unset (a service, `env -i`, a cron job): the account's own home, never a shared folder.
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_dir && *found->pw_dir &&
        found->pw_dir[0] == '/')
        return found->pw_dir;
    return {};
}

}  // namespace wingspan
