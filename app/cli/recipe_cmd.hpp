#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace wingspan::cli {

// `wingspan recipe --framework ID [plan flags | --plan FILE] --out DIR [...]`; args[0] is "recipe".
int run_recipe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
               const std::string& executable);
// `wingspan watch [--plan FILE] [--label NAME] [--framework ID] -- COMMAND...`; args[0] is "watch".
int run_watch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
              const std::string& executable);

}  // namespace wingspan::cli
