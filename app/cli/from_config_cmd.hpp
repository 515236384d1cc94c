#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "wingspan/profiles.hpp"

namespace wingspan::cli {

// `plan|fit|explain-oom --from CONFIG [--from-format F] [flags]`; args[0] is the command. The
// config's flags come first, so every flag given on the command line overrides them.
int run_from_config(const ProfileLibrary& lib, const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace wingspan::cli
