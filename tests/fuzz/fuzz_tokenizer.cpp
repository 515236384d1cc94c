// tokenizer.json: load a BPE tokenizer, then encode and decode text with it.
#include "fuzz_harness.hpp"
#include "tokenizer.hpp"
#include "wingspan/errors.hpp"

int main() {
    using namespace wingspan;
    return fuzz::run<InputError>("tokenizer", WINGSPAN_FUZZ_CORPUS, [](const std::string& input) {
        auto tok = train::Tokenizer::from_json_text(input, "tokenizer.json");
        const auto ids = tok->encode("Hello, world! Ünïcödé 123 <|im_start|>user\nhi");
        (void)tok->decode(ids, true);
    });
}
