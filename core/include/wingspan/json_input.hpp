#pragma once
// JSON we did not write (downloaded configs, tokenizer files, Hub answers, run events,
// profiles, checkpoints): parsed with a bounded nesting depth, so a hostile file answers with
// a clear error instead of a stack overflow in the code that copies or walks the value, and
// read only from regular files of a bounded size, so a named pipe or a folder never blocks
// or surprises the reader.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace wingspan {

// Deeper than any real config, tokenizer or event (they nest fewer than 10 levels).
inline constexpr int kMaxJsonDepth = 128;
// Larger than any real tokenizer.json (a 256k vocabulary is ~20 MB) or config.
inline constexpr std::uint64_t kMaxJsonFileBytes = 512ull << 20;

// True when no array or object in `text` nests deeper than max_depth (strings are skipped).
bool json_depth_within(std::string_view text, int max_depth = kMaxJsonDepth);

// Parses `text`; throws InputError "<what>: ..." for invalid JSON or nesting past max_depth.
nlohmann::json parse_untrusted_json(std::string_view text, const std::string& what,
                                    int max_depth = kMaxJsonDepth);
// The same without exceptions: nullopt for invalid or too deeply nested JSON; `error` says why.
std::optional<nlohmann::json> try_parse_untrusted_json(std::string_view text, std::string* error = nullptr,
                                                       int max_depth = kMaxJsonDepth);

// The bytes of a regular file. Throws InputError when it is missing, a folder, a named pipe
// or device (never opened in a way that blocks), or larger than max_bytes.
std::string read_regular_file(const std::filesystem::path& file, std::uint64_t max_bytes = kMaxJsonFileBytes);
// The same without exceptions, for a file whose absence is normal: nullopt where read_regular_file
// would throw; `error` says why.
std::optional<std::string> try_read_regular_file(const std::filesystem::path& file, std::uint64_t max_bytes,
                                                 std::string* error = nullptr);
// Throws InputError when `file` exists but is not a regular file (checked without opening it).
void require_regular_file(const std::filesystem::path& file);

// The last max_bytes of a regular file (a log shown in part), refused as read_regular_file
// refuses; `cut` says whether the start was left out.
std::string read_regular_file_tail(const std::filesystem::path& file, std::uint64_t max_bytes, bool* cut = nullptr);

// What for_each_line_of_regular_file saw.
struct LineReadStats {
    std::uint64_t lines = 0;        // lines handed to the callback
    std::uint64_t long_lines = 0;   // lines longer than the cap, skipped
    std::uint64_t file_bytes = 0;   // the file's size when opened
    bool truncated = false;         // reading stopped at max_bytes before the end
};
// Calls `line` for each line of a regular file (without its newline), read in blocks, so a
// long file never sits in memory whole. Refuses a folder, named pipe or device as
// read_regular_file does (never blocking); a line longer than max_line_bytes is skipped and
// counted; reading stops after max_bytes. A missing file is empty when missing_is_empty,
// else an InputError like any other unreadable file.
LineReadStats for_each_line_of_regular_file(const std::filesystem::path& file, std::uint64_t max_bytes,
                                            std::size_t max_line_bytes,
                                            const std::function<void(std::string_view)>& line,
                                            bool missing_is_empty = false);

// read_regular_file + parse_untrusted_json, naming the file in every error.
nlohmann::json read_untrusted_json_file(const std::filesystem::path& file,
                                        std::uint64_t max_bytes = kMaxJsonFileBytes);

}  // namespace wingspan
