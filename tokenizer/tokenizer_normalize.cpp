// tokenizer.json normalizers. Unicode normalization forms come from ICU, as the Hugging Face
// tokenizers library uses the Unicode tables for them (Qwen's tokenizers normalize to NFC).
#include <unicode/errorcode.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "tokenizer_internal.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train::tok {

using nlohmann::json;

namespace {

std::string icu_normalize(const std::string& text, const char* form, UNormalization2Mode mode) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = icu::Normalizer2::getInstance(nullptr, form, mode, status);
    if (U_FAILURE(status) || !n) return text;
    icu::UnicodeString in = icu::UnicodeString::fromUTF8(text);
    // Already normalized (the usual case): no copy.
    if (n->isNormalized(in, status) && U_SUCCESS(status)) return text;
    status = U_ZERO_ERROR;
    icu::UnicodeString out = n->normalize(in, status);
    if (U_FAILURE(status)) return text;
    std::string s;
    out.toUTF8String(s);
    return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    std::string out;
    size_t pos = 0;
    for (size_t at; (at = s.find(from, pos)) != std::string::npos; pos = at + from.size()) {
        out.append(s, pos, at - pos);
        out += to;
    }
    out.append(s, pos, std::string::npos);
    return out;
}

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

void Normalizer::load(const json& j, const std::string& origin) {
    if (j.is_null()) return;
    const std::string type = j.value("type", "");
    if (type == "Sequence") {
        for (const auto& n : j.at("normalizers")) load(n, origin);
    } else if (type == "NFC") {
        steps_.push_back({Step::NFC, {}, {}});
    } else if (type == "NFD") {
        steps_.push_back({Step::NFD, {}, {}});
    } else if (type == "NFKC") {
        steps_.push_back({Step::NFKC, {}, {}});
    } else if (type == "NFKD") {
        steps_.push_back({Step::NFKD, {}, {}});
    } else if (type == "Prepend") {
        steps_.push_back({Step::Prepend, j.at("prepend").get<std::string>(), {}});
    } else if (type == "Replace") {
        const auto& pat = j.at("pattern");
        if (!pat.contains("String"))
            throw InputError(origin + ": a Replace normalizer with a regex pattern is not supported (string patterns are)");
        steps_.push_back({Step::Replace, pat.at("String").get<std::string>(), j.at("content").get<std::string>()});
    } else if (type == "Lowercase") {
        steps_.push_back({Step::Lowercase, {}, {}});
    } else if (type == "Strip") {
        Step s{Step::Strip, {}, {}};
        s.left = j.value("strip_left", true);
        s.right = j.value("strip_right", true);
        steps_.push_back(s);
    } else {
        throw InputError(origin + ": unsupported normalizer \"" + type +
                         "\" (NFC, NFD, NFKC, NFKD, Prepend, Replace, Lowercase, Strip and Sequence are)");
    }
}

std::string Normalizer::apply(std::string text) const {
    for (const auto& s : steps_) {
        switch (s.kind) {
            case Step::NFC: text = icu_normalize(text, "nfc", UNORM2_COMPOSE); break;
            case Step::NFD: text = icu_normalize(text, "nfc", UNORM2_DECOMPOSE); break;
            case Step::NFKC: text = icu_normalize(text, "nfkc", UNORM2_COMPOSE); break;
            case Step::NFKD: text = icu_normalize(text, "nfkc", UNORM2_DECOMPOSE); break;
            case Step::Prepend:
                if (!text.empty()) text = s.a + text;   // as Hugging Face: never on an empty piece
                break;
            case Step::Replace: text = replace_all(std::move(text), s.a, s.b); break;
            case Step::Lowercase: {
                icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
                u.toLower();
                text.clear();
                u.toUTF8String(text);
                break;
            }
            case Step::Strip: {
                size_t a = 0, b = text.size();
                if (s.left)
                    while (a < b && is_space(static_cast<unsigned char>(text[a]))) ++a;
                if (s.right)
                    while (b > a && is_space(static_cast<unsigned char>(text[b - 1]))) --b;
                text = text.substr(a, b - a);
                break;
            }
        }
    }
    return text;
}

}  // namespace wingspan::train::tok
