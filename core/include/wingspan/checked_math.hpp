#pragma once
// Size arithmetic on numbers that came from files or the command line: a product or sum
// that does not fit in 64 bits is an error that says so, never a wrapped small number that
// makes an impossible plan "fit".
#include <cstdint>
#include <optional>
#include <string>

#include "errors.hpp"

namespace wingspan {

inline std::optional<std::int64_t> mul_or_none(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<std::int64_t> add_or_none(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// a × b, or InputError "<what> is larger than any machine can hold (more than 2^63 ...)".
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what) {
    if (auto r = mul_or_none(a, b)) return *r;
    throw InputError(what + " is larger than any machine can hold (" + std::to_string(a) + " × " +
                     std::to_string(b) + " overflows 64 bits)");
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const std::string& what) {
    if (auto r = add_or_none(a, b)) return *r;
    throw InputError(what + " is larger than any machine can hold (" + std::to_string(a) + " + " +
                     std::to_string(b) + " overflows 64 bits)");
}

}  // namespace wingspan
