#pragma once
// The user's home folder, the one place every per-user default (the run store, the Hugging Face
// cache, the user's profiles, the Hub token) starts from when no variable names its folder.
#include <filesystem>

namespace wingspan {

// $HOME when it is set, else the home folder the password database gives this user, else
// empty: callers then refuse with a clear error rather than fall back to a folder other users
// share (/tmp) or to the current folder.
std::filesystem::path home_directory();

}  // namespace wingspan
