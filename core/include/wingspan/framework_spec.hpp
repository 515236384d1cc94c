#pragma once
// How a plan names the framework it was planned with: the spelling `--framework` takes back
// ("unsloth@2025.1" for an earlier release, the plain id for the current one), so a plan's JSON
// and text say which release's behaviour made their numbers.
#include <string>

#include "profiles.hpp"

namespace wingspan {

inline std::string framework_spec(const FrameworkProfile& framework) {
    return framework.release.empty() ? framework.id : framework.id + "@" + framework.release;
}

}  // namespace wingspan
