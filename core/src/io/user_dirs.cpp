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

std::vector<std::filesystem::path> bundled_data_dirs(const std::filesystem::path& executable, const char* what,
                                                     const char* source_folder) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path program = executable.empty() ? fs::read_symlink("/proc/self/exe", ec) : fs::weakly_canonical(executable, ec);
    if (program.empty()) return {};
    const fs::path dir = program.parent_path();
    return {dir / "../share/wingspan" / what, dir / ".." / source_folder};
}

}  // namespace wingspan
