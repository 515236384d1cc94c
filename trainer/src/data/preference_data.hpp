#pragma once
// Preference data for DPO and ORPO (issue 31): JSONL rows of `prompt`/`chosen`/`rejected`, as
// strings or as chat messages (TRL's "conversational" preference format), tokenized like SFT data
// (data.hpp) with the prompt's tokens untrained, and batched as TRL's concatenated forward does:
// a micro-batch of B pairs is one batch of 2·B rows, the B chosen rows first, then the B rejected.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data.hpp"
#include "tokenizer.hpp"

namespace wingspan::train {

struct PreferencePair {
    Example chosen, rejected;   // prompt + completion; `trained` marks the completion's tokens
    std::int64_t line = 0;      // 1-based line of the data file
};

struct PreferenceDataset {
    std::vector<PreferencePair> train, eval;
    std::int64_t lines = 0;
    std::int64_t truncated = 0;     // pairs cut at --seq (the end of the longer row dropped)
    std::int64_t dropped = 0;       // pairs whose prompt left no completion token within --seq
    std::int64_t first_dropped_line = 0;
    std::string formats;            // "strings: 12, messages: 3"
};

// Reads the file. Truncation (TRL DPOConfig truncation_mode "keep_start", huggingface/trl f2cd577
// trl/trainer/dpo_config.py:195): each row keeps its first seq + 1 tokens (seq inputs, seq
// labels); a pair whose chosen or rejected row keeps no completion token is dropped and counted.
// Throws DataError naming the line for a malformed row, InputError for an unreadable file.
PreferenceDataset load_preference_jsonl(const std::filesystem::path& file, const Tokenizer& tok, const ChatFormat& f,
                                        std::int64_t seq, double eval_fraction, std::uint64_t seed);

// Micro-batches of one epoch, each 2·pairs rows × seq columns padded with pad_id (chosen rows
// 0..B-1, rejected rows B..2B-1), pairs shuffled by (seed, epoch) when `shuffle`. drop_last drops
// a final partial batch. Throws DataError when not even one batch can be formed.
std::vector<Batch> make_pair_batches(const std::vector<PreferencePair>& pairs, std::int64_t seq, std::int64_t batch,
                                     std::int32_t pad_id, std::uint64_t seed, std::int64_t epoch, bool shuffle,
                                     bool drop_last);

// The chosen examples (the sample's prompt comes from them).
std::vector<Example> chosen_examples(const std::vector<PreferencePair>& pairs);

}  // namespace wingspan::train
