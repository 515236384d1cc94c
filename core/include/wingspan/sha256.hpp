#pragma once
// SHA-256 (FIPS 180-4), incremental. The Hub names every LFS file by its sha256, so a
// download is checked against it before the file enters the cache.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace wingspan {

class Sha256 {
public:
    Sha256();
    void update(const void* data, std::size_t size);
    void update(std::string_view s) { update(s.data(), s.size()); }
    // The digest as 64 lower-case hex digits. The object cannot be updated afterwards.
    std::string hex_digest();

private:
    void block(const unsigned char* p);
    std::array<std::uint32_t, 8> h_;
    std::array<unsigned char, 64> buf_{};
    std::size_t used_ = 0;
    std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);
// Reads the file in 1 MiB pieces. Throws InputError if it cannot be read.
std::string sha256_hex_of_file(const std::filesystem::path& file);

}  // namespace wingspan
