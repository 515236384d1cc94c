#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace wingspan::cli {

// `wingspan download OWNER/NAME [--revision R] [--include GLOB]... [--offline]`: the model into
// the Hugging Face cache; progress on `err`, the snapshot folder as the last line of `out`.
// Exit 0, 2 for bad input (bad id, unknown repo/revision/file, gated without access, not
// cached offline), 1 for failures worth retrying (network, disk full, corrupted transfer).
int cmd_download(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace wingspan::cli
