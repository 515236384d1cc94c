#pragma once
// Chat templates of the model families Wingspan trains: recognised from the model's
// tokenizer_config.json "chat_template" (or chat_template.jinja) and rendered exactly as the
// template renders (for the conversations training data holds), with the assistant turns
// marked as trained. `--chat-format NAME` overrides the recognition.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "examples.hpp"

namespace wingspan::train {

// chatml (Qwen, SmolLM), llama3, llama2 ([INST] with <<SYS>>), mistral ([INST]), zephyr
// (TinyLlama chat), gemma, phi3.
const std::vector<std::string>& chat_format_names();

// The template text of a model folder: chat_template.jinja, else tokenizer_config.json's
// "chat_template" (a string, or a list of {name, template} whose "default" is taken).
// nullopt when the folder has none.
std::optional<std::string> chat_template_of(const std::filesystem::path& model_dir);

// The format a template renders. Throws DataError (line 0) naming the template's first line
// when it is none of the known ones.
ChatFormat recognise_chat_template(const std::string& jinja, const Tokenizer& tok);

// By name (see chat_format_names); throws InputError listing the names for any other.
ChatFormat chat_format_named(const std::string& name, const Tokenizer& tok);

// What a run uses: `override_name` if given, else the folder's template, else the special
// tokens' guess (chat_format_for).
ChatFormat chat_format_for_model(const Tokenizer& tok, const std::filesystem::path& model_dir,
                                 const std::string& override_name);

// A conversation as the template renders it, and where the trained flag changes: (byte
// offset, flag from there on).
struct ChatText {
    std::string text;
    std::vector<std::pair<size_t, bool>> changes;
};
ChatText render_template_text(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                              bool add_generation_prompt);

// Renders a conversation for the template kinds (ChatFormat::is_template()): the text encoded
// once, each change of the trained flag placed where re-encoding the text before it would.
Example render_template_chat(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                             bool add_generation_prompt);

}  // namespace wingspan::train
