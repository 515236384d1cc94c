#include "gguf/gguf_modelfile.hpp"

#include <set>

#include "chat_format.hpp"
#include "tokenizer.hpp"

namespace wingspan::train::gguf {

namespace {

struct OllamaFormat {
    std::string tmpl;                     // "" when the model has no chat format we know
    std::vector<std::string> stops;
};

// The turns as each format's Jinja template renders them, in Ollama's Go template language
// (ranges over .Messages; BOS is llama.cpp's to add, as tokenizer.ggml.add_bos_token says).
OllamaFormat ollama_format(ChatFormat::Kind kind) {
    switch (kind) {
        case ChatFormat::ChatML:
            return {"{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n",
                    {"<|im_start|>", "<|im_end|>"}};
        case ChatFormat::Llama3:
            return {"{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>"
                    "{{ end }}<|start_header_id|>assistant<|end_header_id|>\n\n",
                    {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}};
        case ChatFormat::Llama2:
            return {"{{- range $i, $m := .Messages }}{{ if eq $m.Role \"user\" }}[INST] {{ if and (eq $i 0) $.System }}"
                    "<<SYS>>\n{{ $.System }}\n<</SYS>>\n\n{{ end }}{{ $m.Content }} [/INST]{{ else if eq $m.Role \"assistant\" }} "
                    "{{ $m.Content }} </s><s>{{ end }}{{ end }}",
                    {"[INST]", "[/INST]"}};
        case ChatFormat::Mistral:
            return {"{{- range .Messages }}{{ if eq .Role \"user\" }}[INST] {{ .Content }} [/INST]"
                    "{{ else if eq .Role \"assistant\" }}{{ .Content }}</s>{{ end }}{{ end }}",
                    {"[INST]", "[/INST]"}};
        case ChatFormat::Zephyr:
            return {"{{- range .Messages }}<|{{ .Role }}|>\n{{ .Content }}</s>\n{{ end }}<|assistant|>\n",
                    {"<|user|>", "<|assistant|>", "</s>"}};
        case ChatFormat::Gemma:
            return {"{{- range .Messages }}<start_of_turn>{{ if eq .Role \"assistant\" }}model{{ else }}{{ .Role }}{{ end }}\n"
                    "{{ .Content }}<end_of_turn>\n{{ end }}<start_of_turn>model\n",
                    {"<start_of_turn>", "<end_of_turn>"}};
        case ChatFormat::Phi3:
            return {"{{- range .Messages }}<|{{ .Role }}|>\n{{ .Content }}<|end|>\n{{ end }}<|assistant|>\n",
                    {"<|end|>", "<|user|>", "<|assistant|>"}};
        case ChatFormat::Plain:
            return {};
    }
    return {};
}

}  // namespace

std::string ollama_modelfile(const std::string& gguf_file, const std::filesystem::path& dir, const VocabSummary& vocab) {
    std::string m = "# Written by wingspan-train export: `ollama create NAME -f Modelfile` in this folder.\nFROM ./" + gguf_file + "\n";
    const auto jinja = chat_template_of(dir);
    if (!jinja) return m + "# The model has no chat template: Ollama sends prompts as they are.\n";
    OllamaFormat f;
    std::string system;
    try {
        const auto tok = Tokenizer::from_file(dir / "tokenizer.json");
        const ChatFormat cf = recognise_chat_template(*jinja, *tok);
        f = ollama_format(cf.kind);
        system = cf.default_system;
    } catch (const std::exception& e) {
        return m + "# The chat template is none Wingspan recognises; write TEMPLATE by hand (the GGUF holds the template "
                   "as tokenizer.chat_template).\n";
    }
    if (f.tmpl.empty()) return m;
    m += "TEMPLATE \"\"\"" + f.tmpl + "\"\"\"\n";
    if (!system.empty() && system.find("\"\"\"") == std::string::npos) m += "SYSTEM \"\"\"" + system + "\"\"\"\n";
    std::set<std::string> stops(f.stops.begin(), f.stops.end());
    for (const auto& s : vocab.stop_tokens) stops.insert(s);
    for (const auto& s : stops) m += "PARAMETER stop \"" + s + "\"\n";
    return m;
}

}  // namespace wingspan::train::gguf
