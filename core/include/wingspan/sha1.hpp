#pragma once
// SHA-1 (FIPS 180-4), incremental, for git blob ids only: the Hub names every file that is not
// in LFS by its git blob id, sha1("blob <size>\0" + bytes), so such a download is checked too.
// Not for anything that needs collision resistance.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wingspan {

class Sha1 {
public:
    Sha1();
    void update(const void* data, std::size_t size);
    void update(std::string_view s) { update(s.data(), s.size()); }
    // The digest as 40 lower-case hex digits. The object cannot be updated afterwards.
    std::string hex_digest();

private:
    void block(const unsigned char* p);
    std::array<std::uint32_t, 5> h_;
    std::array<unsigned char, 64> buf_{};
    std::size_t used_ = 0;
    std::uint64_t total_ = 0;
};

// A git blob id's hasher with its header ("blob <size>\0") already fed.
Sha1 git_blob_hasher(std::uint64_t size);

}  // namespace wingspan
