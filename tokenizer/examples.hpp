#pragma once
// One training example from one line of a JSONL data file: `text`, `prompt`/`completion`, alpaca
// `instruction`/`input`/`output` or chat `messages`, rendered with the model's chat format into
// token ids with the loss masked to the answers. Shared by wingspan-train (which trains on the
// ids) and the planner (which needs only their lengths), so both count the same tokens.
#include <cstdint>
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer.hpp"

namespace wingspan::train {

struct Example {
    std::vector<std::int32_t> ids;
    std::vector<std::uint8_t> trained;   // trained[i]: the loss predicts ids[i]

    // Tokens the loss predicts (trained) or only reads; a negative id (a format without that
    // BOS/EOS) adds nothing.
    void append(const std::vector<std::int32_t>& tokens, bool is_trained) {
        ids.insert(ids.end(), tokens.begin(), tokens.end());
        trained.insert(trained.end(), tokens.size(), is_trained ? 1 : 0);
    }
    void append(std::int32_t id, bool is_trained) {
        if (id < 0) return;
        ids.push_back(id);
        trained.push_back(is_trained ? 1 : 0);
    }
};

// How conversations become tokens; chosen from the tokenizer's special tokens.
struct ChatFormat {
    // Llama2 .. Phi3: rendered by chat_format.cpp from the model's chat template.
    enum Kind { ChatML, Llama3, Plain, Llama2, Mistral, Zephyr, Gemma, Phi3 } kind = ChatML;
    bool from_template = false;          // chosen from a chat template or --chat-format
    bool is_template() const { return from_template || kind >= Llama2; }
    std::string default_system;          // a template's built-in system prompt (Qwen, SmolLM)
    bool llama31_dates = false;          // Llama 3.1's "Cutting Knowledge Date" system header
    std::int32_t eos = -1;               // appended to `text` and `completion` examples
    std::int32_t bos = -1;               // prepended to every example when >= 0
    std::int32_t pad = -1;
    std::string name() const;
};
ChatFormat chat_format_for(const Tokenizer& tok);

struct Message {
    std::string role, content;
};
// A conversation as tokens with the assistant turns (and their end token) trained. With
// `add_generation_prompt` the last (non-assistant) turn is followed by the assistant header.
Example render_chat(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                    bool add_generation_prompt = false);

// Longest JSONL line accepted (one example); longer ones are a bad_data error naming the line.
inline constexpr size_t kMaxDataLineBytes = 16u << 20;

// A malformed data file; `line` is 1-based (0: not about one line).
struct DataError : std::runtime_error {
    DataError(const std::string& msg, std::int64_t line_) : std::runtime_error(msg), line(line_) {}
    std::int64_t line;
    // "line N: why", naming line N.
    [[noreturn]] static void at(std::int64_t line, const std::string& why) {
        throw DataError("line " + std::to_string(line) + ": " + why, line);
    }
};

// One line of a data file into `line` (without the newline), at most max_bytes: a longer one sets
// too_long. False at the end of the file. Shared by the SFT and the preference readers.
bool read_bounded_line(std::istream& in, std::string& line, size_t max_bytes, bool& too_long);

// One data row (a parsed JSON line) as tokens. `format` receives the row's kind ("messages",
// "alpaca", "prompt/completion", "text"). Throws DataError naming `line` for a row that is none of
// them, a field of the wrong type, or text the tokenizer refuses. Alpaca rows are the conversation
// LLaMA-Factory makes of them: one user turn of the instruction and the input joined by "\n", then
// the output as the answer (hiyouga/LLaMA-Factory src/llamafactory/data/converter.py,
// AlpacaDatasetConverter.__call__).
Example example_from_row(const nlohmann::json& row, const Tokenizer& tok, const ChatFormat& f, std::int64_t line,
                         std::string& format);

// One JSONL line (the bytes read_bounded_line gave) as tokens: nullopt-like `false` for a blank
// line; DataError naming `line` for bad JSON, invalid UTF-8 or a row example_from_row refuses.
bool example_from_line(const std::string& text, const Tokenizer& tok, const ChatFormat& f, std::int64_t line,
                       Example& out, std::string& format);

}  // namespace wingspan::train
