// Chat templates: which family a template is, and its exact rendering. The conversation is
// rendered to text as the Jinja template would, tokenized as one string (so tokens merge
// across turn boundaries exactly as in transformers), and the assistant turns are marked
// trained by where their text starts and ends in the token sequence.
#include "chat_format.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Part {
    std::string text;
    bool trained;
};

std::string strip(const std::string& s) {   // Jinja's trim / Python's strip (ASCII whitespace)
    const char* ws = " \t\n\r\f\v";
    const auto a = s.find_first_not_of(ws);
    if (a == std::string::npos) return {};
    return s.substr(a, s.find_last_not_of(ws) - a + 1);
}

std::string token_text(const Tokenizer& tok, std::int32_t id) { return id >= 0 ? tok.decode({id}) : std::string(); }

std::string first_line(const std::string& s) {
    std::string line = strip(s.substr(0, s.find('\n')));
    if (line.size() > 120) line = line.substr(0, 120) + "...";
    return line;
}

// The system message (if the conversation starts with one) and the rest.
std::pair<std::optional<std::string>, std::vector<Message>> split_system(const std::vector<Message>& m) {
    if (!m.empty() && m.front().role == "system") return {m.front().content, {m.begin() + 1, m.end()}};
    return {std::nullopt, m};
}

// Folds a system message into the first user turn (templates without a system role).
std::vector<Message> fold_system(const std::vector<Message>& messages, const std::string& joiner) {
    auto [system, rest] = split_system(messages);
    if (system && !rest.empty() && rest.front().role == "user") rest.front().content = *system + joiner + rest.front().content;
    return rest;
}

std::vector<Part> render_parts(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                               bool gen) {
    std::vector<Part> p;
    auto add = [&](std::string text, bool trained = false) { p.push_back({std::move(text), trained}); };
    const std::string bos = token_text(tok, f.bos), eos = token_text(tok, f.eos);
    switch (f.kind) {
        case ChatFormat::ChatML:
        case ChatFormat::Plain: {
            auto [system, rest] = split_system(messages);
            if (!system && !f.default_system.empty()) system = f.default_system;
            if (system) add("<|im_start|>system\n" + *system + "<|im_end|>\n");
            for (const auto& m : rest) {
                add("<|im_start|>" + m.role + "\n");
                add(m.content + "<|im_end|>", m.role == "assistant");
                add("\n");
            }
            if (gen) add("<|im_start|>assistant\n");
            break;
        }
        case ChatFormat::Llama3: {
            add(bos);
            std::vector<Message> rest = messages;
            if (f.llama31_dates) {
                auto [system, others] = split_system(messages);
                add("<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" +
                    strip(system.value_or("")) + "<|eot_id|>");
                rest = others;
            }
            for (const auto& m : rest) {
                add("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n");
                add(strip(m.content) + "<|eot_id|>", m.role == "assistant");
            }
            if (gen) add("<|start_header_id|>assistant<|end_header_id|>\n\n");
            break;
        }
        case ChatFormat::Llama2: {
            auto [system, rest] = split_system(messages);
            for (size_t i = 0; i < rest.size(); ++i) {
                std::string content = rest[i].content;
                if (i == 0 && system) content = "<<SYS>>\n" + *system + "\n<</SYS>>\n\n" + content;
                if (rest[i].role == "user") add(bos + "[INST] " + strip(content) + " [/INST]");
                else if (rest[i].role == "assistant") add(" " + strip(content) + " " + eos, true);
            }
            break;
        }
        case ChatFormat::Mistral: {
            add(bos);
            for (const auto& m : fold_system(messages, "\n\n")) {
                if (m.role == "user") add("[INST] " + m.content + " [/INST]");
                else if (m.role == "assistant") add(m.content + eos, true);
            }
            break;
        }
        case ChatFormat::Zephyr: {
            for (const auto& m : messages) {
                add("<|" + m.role + "|>\n");
                add(m.content + eos, m.role == "assistant");
                add("\n");
            }
            if (gen) add("<|assistant|>\n");
            break;
        }
        case ChatFormat::Gemma: {
            add(bos);
            for (const auto& m : fold_system(messages, "\n\n")) {
                add("<start_of_turn>" + std::string(m.role == "assistant" ? "model" : m.role) + "\n");
                add(strip(m.content) + "<end_of_turn>", m.role == "assistant");
                add("\n");
            }
            if (gen) add("<start_of_turn>model\n");
            break;
        }
        case ChatFormat::Phi3: {
            for (const auto& m : messages) {
                add("<|" + m.role + "|>\n");
                add(m.content + "<|end|>", m.role == "assistant");
                add("\n");
            }
            add(gen ? "<|assistant|>\n" : eos);
            break;
        }
    }
    return p;
}

// A model folder's template files, through the bounded reader: a named pipe or a link to
// /dev/zero is refused instead of blocking or reading without end. Real templates are a few
// KB; tokenizer_config.json can also list every added token (a few MB).
constexpr std::uint64_t kMaxTemplateFileBytes = 64ull << 20;
std::string read_file(const fs::path& file) { return read_regular_file(file, kMaxTemplateFileBytes); }

}  // namespace

const std::vector<std::string>& chat_format_names() {
    static const std::vector<std::string> names = {"chatml", "llama3", "llama2", "mistral", "zephyr", "gemma", "phi3"};
    return names;
}

std::optional<std::string> chat_template_of(const fs::path& model_dir) {
    if (model_dir.empty()) return std::nullopt;
    std::error_code ec;
    if (fs::exists(model_dir / "chat_template.jinja", ec)) return read_file(model_dir / "chat_template.jinja");
    if (!fs::exists(model_dir / "tokenizer_config.json", ec)) return std::nullopt;
    json config = try_parse_untrusted_json(read_file(model_dir / "tokenizer_config.json")).value_or(json());
    if (!config.is_object() || !config.contains("chat_template")) return std::nullopt;
    const json& t = config["chat_template"];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array())
        for (const auto& entry : t)
            if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") && entry["template"].is_string())
                return entry["template"].get<std::string>();
    return std::nullopt;
}

ChatFormat recognise_chat_template(const std::string& jinja, const Tokenizer& tok) {
    auto has = [&](const char* s) { return jinja.find(s) != std::string::npos; };
    std::string name;
    if (has("<|im_start|>")) name = "chatml";
    else if (has("<|start_header_id|>")) name = "llama3";
    else if (has("<start_of_turn>")) name = "gemma";
    else if (has("<|user|>") && has("<|end|>")) name = "phi3";
    else if (has("<|user|>")) name = "zephyr";
    else if (has("<<SYS>>")) name = "llama2";
    else if (has("[INST]")) name = "mistral";
    else
        throw DataError("the model's chat template is not one Wingspan knows (ChatML, Llama 2/3, Mistral, Zephyr, Gemma, "
                        "Phi-3); its first line: \"" + first_line(jinja) + "\". Choose one with --chat-format " +
                        "chatml|llama3|llama2|mistral|zephyr|gemma|phi3.", 0);
    ChatFormat f = chat_format_named(name, tok);
    // Built-in system prompts of the templates we ship, rendered when the data has none.
    for (const char* s : {"You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
                          "You are a helpful AI assistant named SmolLM, trained by Hugging Face"})
        if (has(s)) f.default_system = s;
    f.llama31_dates = has("Cutting Knowledge Date");
    return f;
}

ChatFormat chat_format_named(const std::string& name, const Tokenizer& tok) {
    ChatFormat f = chat_format_for(tok);   // pad, and BOS/EOS guessed from the special tokens
    // A template's bos_token / eos_token are tokenizer_config.json's.
    if (auto b = tok.bos_id()) f.bos = *b;
    if (auto e = tok.eos_id()) f.eos = *e;
    f.from_template = true;
    auto id = [&](const char* s) { return tok.token_id(s).value_or(-1); };
    if (name == "chatml") {
        f.kind = ChatFormat::ChatML;
        if (id("<|im_end|>") >= 0 && f.eos < 0) f.eos = id("<|im_end|>");
    } else if (name == "llama3") {
        f.kind = ChatFormat::Llama3;
        if (id("<|begin_of_text|>") >= 0) f.bos = id("<|begin_of_text|>");
    } else if (name == "llama2") {
        f.kind = ChatFormat::Llama2;
    } else if (name == "mistral") {
        f.kind = ChatFormat::Mistral;
    } else if (name == "zephyr") {
        f.kind = ChatFormat::Zephyr;
    } else if (name == "gemma") {
        f.kind = ChatFormat::Gemma;
    } else if (name == "phi3") {
        f.kind = ChatFormat::Phi3;
    } else {
        std::string all;
        for (const auto& n : chat_format_names()) all += (all.empty() ? "" : ", ") + n;
        throw InputError("--chat-format " + name + " is not a chat format Wingspan knows (" + all + ")");
    }
    return f;
}

ChatFormat chat_format_for_model(const Tokenizer& tok, const fs::path& model_dir, const std::string& override_name) {
    if (!override_name.empty()) return chat_format_named(override_name, tok);
    if (auto t = chat_template_of(model_dir)) return recognise_chat_template(*t, tok);
    return chat_format_for(tok);
}

ChatText render_template_text(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                              bool add_generation_prompt) {
    ChatText t;
    bool flag = false;
    for (const auto& p : render_parts(messages, tok, f, add_generation_prompt)) {
        if (p.trained != flag) {
            t.changes.emplace_back(t.text.size(), p.trained);
            flag = p.trained;
        }
        t.text += p.text;
    }
    return t;
}

Example render_template_chat(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                             bool add_generation_prompt) {
    const auto [text, changes] = render_template_text(messages, tok, f, add_generation_prompt);
    std::vector<size_t> cuts, at;
    for (const auto& c : changes) cuts.push_back(c.first);
    Example e;
    e.ids = tok.encode_with_cuts(text, cuts, at);
    e.trained.assign(e.ids.size(), 0);
    // A boundary's token index: how much of the whole encoding the text before it encodes to.
    size_t from = 0;
    bool on = false;
    for (size_t c = 0; c < changes.size(); ++c) {
        const size_t to = std::max(at[c], from);
        if (on) std::fill(e.trained.begin() + static_cast<long>(from), e.trained.begin() + static_cast<long>(to), 1);
        from = at[c];
        on = changes[c].second;
    }
    if (on) std::fill(e.trained.begin() + static_cast<long>(from), e.trained.end(), 1);
    return e;
}

}  // namespace wingspan::train
