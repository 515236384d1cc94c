#include "wingspan/quoting.hpp"

#include <cstdint>
#include <cstdio>

namespace wingspan::quoting {

namespace {

// The length of the valid UTF-8 sequence at s[i] (1..4), or 0 when the byte there starts none
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
size_t utf8_length(std::string_view s, size_t i, std::uint32_t* code) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    std::uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
        if ((b(k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(k) & 0x3F);
    }
    static const std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    *code = cp;
    return n;
}

// Code points no quoted form writes literally: controls, DEL, C1 controls (U+0085 is a line
// break in YAML), the Unicode line and paragraph separators, the BOM, the non-characters.
bool needs_escape(std::uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF ||
           cp == 0xFFFE || cp == 0xFFFF;
}

std::string hex(const char* format, unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// Python, JSON and YAML's double-quoted scalars share these escapes: \\ \" \n \r \t and \uXXXX
// (and \UXXXXXXXX past the BMP, which JSON writes as a surrogate pair). A byte that is not
// UTF-8 becomes the surrogateescape code point U+DC80..U+DCFF. One escaper, so the three
// languages' quoting cannot drift apart.
std::string double_quoted(std::string_view s) {
    std::string out = "\"";
    for (size_t i = 0; i < s.size();) {
        std::uint32_t cp = 0;
        const size_t n = utf8_length(s, i, &cp);
        if (n == 0) {
            out += hex("\\u%04x", 0xDC00u + static_cast<unsigned char>(s[i]));
            ++i;
            continue;
        }
        if (cp == '"') out += "\\\"";
        else if (cp == '\\') out += "\\\\";
        else if (cp == '\n') out += "\\n";
        else if (cp == '\r') out += "\\r";
        else if (cp == '\t') out += "\\t";
        else if (needs_escape(cp)) out += hex("\\u%04x", cp);
        else out.append(s.substr(i, n));
        i += n;
    }
    return out + "\"";
}

}  // namespace

std::string python_string(std::string_view value) { return double_quoted(value); }
std::string json_string(std::string_view value) { return double_quoted(value); }
std::string yaml_string(std::string_view value) { return double_quoted(value); }

std::string shell_word(std::string_view value) {
    // Words of only these characters mean themselves to every shell: left as they are.
    if (!value.empty() && value.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-") ==
                              std::string_view::npos)
        return std::string(value);
    bool plain = true;
    for (size_t i = 0; i < value.size() && plain;) {
        std::uint32_t cp = 0;
        const size_t n = utf8_length(value, i, &cp);
        plain = n > 0 && !needs_escape(cp);
        i += n ? n : 1;
    }
    if (plain) {
        std::string out = "'";
        for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return out + "'";
    }
    std::string out = "$'";
    for (size_t i = 0; i < value.size();) {
        std::uint32_t cp = 0;
        const size_t n = utf8_length(value, i, &cp);
        if (n == 0 || needs_escape(cp)) {   // each byte of it, so the word holds exactly these bytes
            for (size_t k = 0; k < (n ? n : 1); ++k) out += hex("\\x%02x", static_cast<unsigned char>(value[i + k]));
        } else if (cp == '\'' || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else {
            out.append(value.substr(i, n));
        }
        i += n ? n : 1;
    }
    return out + "'";
}

bool is_utf8(std::string_view value) {
    for (size_t i = 0; i < value.size();) {
        std::uint32_t cp = 0;
        const size_t n = utf8_length(value, i, &cp);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string one_line(std::string_view value) {
    std::string out;
    for (size_t i = 0; i < value.size();) {
        std::uint32_t cp = 0;
        const size_t n = utf8_length(value, i, &cp);
        if (n == 0) out += "\xEF\xBF\xBD";
        else if (needs_escape(cp)) out += ' ';
        else out.append(value.substr(i, n));
        i += n ? n : 1;
    }
    return out;
}

}  // namespace wingspan::quoting
