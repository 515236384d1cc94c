#pragma once
// The safetensors container: an 8-byte little-endian header length, a JSON header naming
// every tensor's dtype, shape and byte range, then the raw data. Header handling lives here
// (no torch) so the trainer, the local-folder import and the Hub client share it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace wingspan::safetensors {

// Upper bound on a header we accept; the format's own reference uses 100 MB.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorInfo {
    std::string name;
    std::string dtype;                 // "BF16", "F16", "F32", "I8", "U8", ...
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0;           // byte offsets relative to the start of the data section
    std::uint64_t end = 0;
    std::int64_t elements() const;
};

struct Header {
    std::uint64_t header_bytes = 0;    // length of the JSON part
    std::uint64_t data_offset = 0;     // 8 + header_bytes: where tensor data starts in the file
    std::vector<TensorInfo> tensors;   // in file order
    std::map<std::string, std::string> metadata;   // "__metadata__"
    std::int64_t total_elements() const;
    std::map<std::string, std::int64_t> elements_by_dtype() const;
};

// Bytes per element of a safetensors dtype name; throws InputError for unknown names.
int dtype_size(const std::string& dtype);

// Reads the 8-byte length prefix (little-endian). Throws InputError if it exceeds the limit.
std::uint64_t parse_header_length(const unsigned char prefix[8]);
// Parses the JSON header text and validates it: known dtypes, byte ranges that match shape ×
// dtype size, no overlaps or gaps past data_size (when data_size is given, i.e. > 0).
// Throws InputError naming the tensor that is wrong.
Header parse_header(const std::string& json_text, std::uint64_t header_bytes,
                    std::uint64_t data_size = 0);
// Reads and validates the header of a file on disk (checks ranges against the file size).
Header read_header(const std::filesystem::path& file);

// The JSON header text for tensors laid out back to back in the given order (offsets are
// computed here), padded with spaces to a multiple of 8 bytes as the reference writer does.
std::string build_header(const std::vector<TensorInfo>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace wingspan::safetensors
