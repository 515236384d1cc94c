#pragma once
// `wingspan-train generate --model DIR [--adapter DIR] --prompt TEXT [--chat]
//     [--max-tokens N] [--temperature T] [--top-p P] [--seed S] [--chat-format NAME]`:
// samples a continuation with a KV cache and prints it to stdout as it comes.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace wingspan::train {

// Exit 0, 2 for bad input, 1 for failures; errors on stderr.
int run_generate(const std::vector<std::string>& args);

// The next token from logits [V]: argmax when temperature <= 0, else a draw from the
// softmax of logits / temperature restricted to the smallest set of tokens whose
// probability reaches top_p (nucleus sampling).
std::int64_t sample_token(const at::Tensor& logits, double temperature, double top_p, at::Generator& gen);

}  // namespace wingspan::train
