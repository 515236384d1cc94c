#include "examples.hpp"

#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

#include "chat_format.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::train {

namespace {

using nlohmann::json;

std::string need_string(const json& obj, const char* key, std::int64_t line) {
    const auto& v = obj.at(key);
    if (!v.is_string()) DataError::at(line, std::string("\"") + key + "\" must be a string");
    return v.get<std::string>();
}

Example chat_example(const json& ms, const Tokenizer& tok, const ChatFormat& f, std::int64_t n) {
    if (!ms.is_array() || ms.empty()) DataError::at(n, "\"messages\" must be a non-empty array");
    std::vector<Message> msgs;
    bool has_answer = false;
    for (const auto& m : ms) {
        if (!m.is_object() || !m.contains("role") || !m.contains("content"))
            DataError::at(n, "each message needs \"role\" and \"content\"");
        Message msg{need_string(m, "role", n), need_string(m, "content", n)};
        if (msg.role != "system" && msg.role != "user" && msg.role != "assistant")
            DataError::at(n, "unknown role \"" + msg.role + "\"");
        has_answer |= msg.role == "assistant";
        msgs.push_back(std::move(msg));
    }
    if (!has_answer) DataError::at(n, "no assistant message to learn from");
    return render_chat(msgs, tok, f);
}

Example alpaca_example(const json& j, const Tokenizer& tok, const ChatFormat& f, std::int64_t n) {
    if (!j.contains("instruction") || !j.contains("output"))
        DataError::at(n, "an alpaca row needs \"instruction\" and \"output\" (\"input\" is optional)");
    std::string prompt = need_string(j, "instruction", n);
    if (j.contains("input") && !j["input"].is_null()) {
        const std::string input = need_string(j, "input", n);
        if (!input.empty()) prompt += "\n" + input;
    }
    return render_chat({{"user", prompt}, {"assistant", need_string(j, "output", n)}}, tok, f);
}

}  // namespace

std::string ChatFormat::name() const {
    switch (kind) {
        case ChatML: return "chatml";
        case Llama3: return "llama3";
        case Llama2: return "llama2";
        case Mistral: return "mistral";
        case Zephyr: return "zephyr";
        case Gemma: return "gemma";
        case Phi3: return "phi3";
        default: return "plain";
    }
}

ChatFormat chat_format_for(const Tokenizer& tok) {
    ChatFormat f;
    auto id = [&](const char* s) { return tok.token_id(s).value_or(-1); };
    if (id("<|start_header_id|>") >= 0 && id("<|eot_id|>") >= 0) {
        f.kind = ChatFormat::Llama3;
        f.bos = id("<|begin_of_text|>");
        f.eos = id("<|end_of_text|>") >= 0 ? id("<|end_of_text|>") : id("<|eot_id|>");
    } else if (id("<|im_start|>") >= 0 && id("<|im_end|>") >= 0) {
        f.kind = ChatFormat::ChatML;
        f.eos = id("<|endoftext|>") >= 0 ? id("<|endoftext|>") : id("<|im_end|>");
    } else {
        f.kind = ChatFormat::Plain;
        for (const char* s : {"<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>"})
            if (id(s) >= 0) {
                f.eos = id(s);
                break;
            }
    }
    // SentencePiece models (Llama 2, Mistral, Gemma) start every sequence with the BOS their
    // tokenizer_config.json asks for.
    if (f.bos < 0 && tok.adds_bos()) f.bos = *tok.bos_id();
    if (f.eos < 0 && tok.eos_id()) f.eos = *tok.eos_id();
    f.pad = id("<|pad|>") >= 0 ? id("<|pad|>") : (f.eos >= 0 ? f.eos : 0);
    return f;
}

Example render_chat(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                    bool add_generation_prompt) {
    if (f.is_template()) return render_template_chat(messages, tok, f, add_generation_prompt);
    Example e;
    e.append(f.bos, false);
    for (const auto& m : messages) {
        const bool answer = m.role == "assistant";
        switch (f.kind) {
            case ChatFormat::ChatML:
                e.append(tok.encode("<|im_start|>" + m.role + "\n"), false);
                e.append(tok.encode(m.content), answer);
                e.append(tok.encode("<|im_end|>"), answer);
                e.append(tok.encode("\n"), false);
                break;
            case ChatFormat::Llama3:
                e.append(tok.encode("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n"), false);
                e.append(tok.encode(m.content), answer);
                e.append(tok.encode("<|eot_id|>"), answer);
                break;
            case ChatFormat::Plain: {
                std::string label = m.role;
                if (!label.empty()) label[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(label[0])));
                e.append(tok.encode(label + ": "), false);
                e.append(tok.encode(m.content), answer);
                if (answer) e.append(f.eos, true);
                e.append(tok.encode("\n"), false);
                break;
            }
            default: break;   // the template kinds were rendered above
        }
    }
    if (add_generation_prompt) {
        switch (f.kind) {
            case ChatFormat::ChatML: e.append(tok.encode("<|im_start|>assistant\n"), false); break;
            case ChatFormat::Llama3:
                e.append(tok.encode("<|start_header_id|>assistant<|end_header_id|>\n\n"), false);
                break;
            case ChatFormat::Plain: e.append(tok.encode("Assistant: "), false); break;
            default: break;
        }
    }
    return e;
}

// std::getline without a bound: one 1 GB line took 40 GB and ended in bad_alloc. Reads at most
// max_bytes; `too_long` says the line had more (the rest is not read).
bool read_bounded_line(std::istream& in, std::string& line, size_t max_bytes, bool& too_long) {
    line.clear();
    too_long = false;
    std::streambuf* sb = in.rdbuf();
    bool any = false;
    for (int c; (c = sb->sbumpc()) != std::char_traits<char>::eof();) {
        any = true;
        if (c == '\n') return true;
        if (line.size() >= max_bytes) {
            too_long = true;
            return true;
        }
        line.push_back(static_cast<char>(c));
    }
    return any;
}

Example example_from_row(const json& j, const Tokenizer& tok, const ChatFormat& f, std::int64_t n, std::string& format) {
    if (!j.is_object()) DataError::at(n, "not a JSON object");
    Example e;
    try {
        if (j.contains("messages")) {
            e = chat_example(j["messages"], tok, f, n);
            format = "messages";
        } else if (j.contains("prompt") || j.contains("completion")) {
            if (!j.contains("prompt") || !j.contains("completion")) DataError::at(n, "\"prompt\" and \"completion\" go together");
            e.append(f.bos, false);
            e.append(tok.encode(need_string(j, "prompt", n)), false);
            e.append(tok.encode(need_string(j, "completion", n)), true);
            e.append(f.eos, true);
            format = "prompt/completion";
        } else if (j.contains("text")) {
            e.append(f.bos, false);
            e.append(tok.encode(need_string(j, "text", n)), true);
            e.append(f.eos, true);
            format = "text";
        } else if (j.contains("instruction") || j.contains("output")) {
            e = alpaca_example(j, tok, f, n);
            format = "alpaca";
        } else {
            DataError::at(n, "needs \"text\", \"prompt\"/\"completion\", \"instruction\"/\"output\" or \"messages\"");
        }
    } catch (const json::exception& ex) {
        DataError::at(n, ex.what());
    } catch (const InputError& ex) {   // the tokenizer refused this text (a split pattern's bounds)
        DataError::at(n, ex.what());
    }
    return e;
}

bool example_from_line(const std::string& text, const Tokenizer& tok, const ChatFormat& f, std::int64_t n, Example& out,
                       std::string& format) {
    std::string_view line = text;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return false;
    std::string why;
    auto parsed = try_parse_untrusted_json(line, &why);
    if (!parsed) DataError::at(n, why);
    out = example_from_row(*parsed, tok, f, n, format);
    return true;
}

}  // namespace wingspan::train
