#pragma once
// The user's home folder, the one place every per-user default (the run store, the Hugging Face
// cache, the user's profiles, the Hub token) starts from when no variable names its folder.
#include <filesystem>
#include <vector>

namespace wingspan {

// $HOME when it is set, else the home folder the password database gives this user, else
// empty: callers then refuse with a clear error rather than fall back to a folder other users
// share (/tmp) or to the current folder.
std::filesystem::path home_directory();

// The folders a program's bundled data may be in, most specific first: for a program at
// <dir>/<name>, <dir>/../share/wingspan/<what> (installed, and the build tree, which links its
// share/ to the checkout's folders) then <dir>/../<source_folder>. `executable` empty: the running
// program (/proc/self/exe). No path of the checkout the program was built from is ever used.
std::vector<std::filesystem::path> bundled_data_dirs(const std::filesystem::path& executable, const char* what,
                                                     const char* source_folder);

}  // namespace wingspan
