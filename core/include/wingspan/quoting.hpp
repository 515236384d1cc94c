#pragma once
// Writing a value into the text of another language so that it stays one value there, whatever
// it holds (quotes, newlines, `" + __import__("os")...`, bytes that are not UTF-8): one quoting
// function per language, used by every writer of Python, YAML, JSON and shell text (the recipe
// templates' {{py:x}}, {{yaml:x}}, {{json:x}}, {{sh:x}} and {{line:x}}).
//
// Bytes that are not UTF-8 (a file name is bytes) are written as Python's surrogateescape
// code points (\udcXX), so os.fsencode() of the value read back gives the original bytes; in
// shell text they are $'\xXX' escapes. Every result is valid UTF-8 on one line.
#include <string>
#include <string_view>

namespace wingspan::quoting {

// A Python string literal: "…" with \\, \", \n, \xXX and \udcXX escapes.
std::string python_string(std::string_view value);
// A YAML double-quoted scalar (YAML 1.1 and 1.2): no key, comment or line break can leak out.
std::string yaml_string(std::string_view value);
// A JSON string: "…" (RFC 8259 escapes; \udcXX for bytes that are not UTF-8).
std::string json_string(std::string_view value);
// One shell word: as it is when it holds only [A-Za-z0-9_./:@%+=,-], else
// '…' with ' as '\'' ; $'…' with \xXX escapes when it holds control
// characters or bytes that are not UTF-8 (so it stays on one line).
std::string shell_word(std::string_view value);
// Whether the bytes are UTF-8 throughout (no stray, overlong, surrogate or cut sequence).
bool is_utf8(std::string_view value);
// Text for a comment or a heading: control characters and line breaks become spaces, bytes
// that are not UTF-8 U+FFFD.
std::string one_line(std::string_view value);

}  // namespace wingspan::quoting
