#include "data/preference_data.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "chat_format.hpp"
#include "support/stop_signals.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::train {

namespace {

using nlohmann::json;

std::vector<Message> messages_of(const json& v, const char* key, std::int64_t line) {
    if (!v.is_array() || v.empty()) DataError::at(line, std::string("\"") + key + "\" must be a string or a non-empty array of messages");
    std::vector<Message> out;
    for (const auto& m : v) {
        if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
            !m["content"].is_string())
            DataError::at(line, std::string("each message of \"") + key + "\" needs string \"role\" and \"content\"");
        Message msg{m["role"].get<std::string>(), m["content"].get<std::string>()};
        if (msg.role != "system" && msg.role != "user" && msg.role != "assistant")
            DataError::at(line, std::string("\"") + key + "\": unknown role \"" + msg.role + "\"");
        out.push_back(std::move(msg));
    }
    return out;
}

// prompt + completion rendered with the chat template; only the completion's assistant tokens
// (after the prompt rendered with its generation prompt) train.
Example render_pair_side(const std::vector<Message>& prompt, const std::vector<Message>& completion,
                         const Tokenizer& tok, const ChatFormat& f) {
    std::vector<Message> all = prompt;
    all.insert(all.end(), completion.begin(), completion.end());
    Example full = render_chat(all, tok, f);
    const Example head = render_chat(prompt, tok, f, true);
    size_t common = 0;
    while (common < head.ids.size() && common < full.ids.size() && head.ids[common] == full.ids[common]) ++common;
    for (size_t i = 0; i < common; ++i) full.trained[i] = 0;
    return full;
}

std::int64_t trained_count(const Example& e) {
    std::int64_t n = 0;
    for (auto t : e.trained) n += t;
    return n;
}

// The labels a row of seq inputs keeps: positions 1 .. seq (EpochBatches' rule).
std::int64_t trained_within(const Example& e, std::int64_t seq) {
    std::int64_t n = 0;
    const std::int64_t end = std::min<std::int64_t>(static_cast<std::int64_t>(e.ids.size()), seq + 1);
    for (std::int64_t i = 1; i < end; ++i) n += e.trained[static_cast<size_t>(i)];
    return n;
}

PreferencePair parse_pair(const json& j, const Tokenizer& tok, const ChatFormat& f, std::int64_t line,
                          std::map<std::string, std::int64_t>& formats) {
    for (const char* key : {"prompt", "chosen", "rejected"})
        if (!j.contains(key)) DataError::at(line, std::string("a preference row needs \"prompt\", \"chosen\" and \"rejected\" (\"") + key + "\" is missing)");
    const json &p = j["prompt"], &c = j["chosen"], &r = j["rejected"];
    PreferencePair pair;
    pair.line = line;
    if (p.is_string() && c.is_string() && r.is_string()) {
        // As SFT's prompt/completion rows (data.cpp): BOS, the prompt, the completion and EOS trained.
        const std::vector<std::int32_t> prompt = tok.encode(p.get<std::string>());
        for (auto [side, text] : {std::pair{&pair.chosen, &c}, std::pair{&pair.rejected, &r}}) {
            side->append(f.bos, false);
            side->append(prompt, false);
            side->append(tok.encode(text->get<std::string>()), true);
            side->append(f.eos, true);
        }
        formats["strings"]++;
    } else if (c.is_array() && r.is_array() && (p.is_array() || p.is_string())) {
        const std::vector<Message> prompt =
            p.is_string() ? std::vector<Message>{{"user", p.get<std::string>()}} : messages_of(p, "prompt", line);
        const std::vector<Message> chosen = messages_of(c, "chosen", line), rejected = messages_of(r, "rejected", line);
        for (const auto* side : {&chosen, &rejected})
            if (std::none_of(side->begin(), side->end(), [](const Message& m) { return m.role == "assistant"; }))
                DataError::at(line, std::string("\"") + (side == &chosen ? "chosen" : "rejected") + "\" has no assistant message");
        pair.chosen = render_pair_side(prompt, chosen, tok, f);
        pair.rejected = render_pair_side(prompt, rejected, tok, f);
        formats["messages"]++;
    } else {
        DataError::at(line, "\"chosen\" and \"rejected\" must both be strings (with a string \"prompt\") or both lists of "
                  "messages");
    }
    if (trained_count(pair.chosen) == 0 || trained_count(pair.rejected) == 0)
        DataError::at(line, std::string("\"") + (trained_count(pair.chosen) == 0 ? "chosen" : "rejected") + "\" has no tokens to score");
    return pair;
}

}  // namespace

PreferenceDataset load_preference_jsonl(const std::filesystem::path& file, const Tokenizer& tok, const ChatFormat& f,
                                        std::int64_t seq, double eval_fraction, std::uint64_t seed) {
    require_regular_file(file);   // a named pipe would block here forever
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("cannot read data file " + file.string());
    PreferenceDataset d;
    std::vector<PreferencePair> all;
    std::map<std::string, std::int64_t> formats;
    std::string line;
    bool too_long = false;
    std::int64_t n = 0;
    while (read_bounded_line(in, line, kMaxDataLineBytes, too_long)) {
        ++n;
        if (n % 256 == 0) stops::throw_if_requested();
        if (too_long) DataError::at(n, "longer than " + std::to_string(kMaxDataLineBytes) + " bytes; shorten the example");
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        std::string why;
        auto parsed = try_parse_untrusted_json(line, &why);
        if (!parsed) DataError::at(n, why);
        if (!parsed->is_object()) DataError::at(n, "not a JSON object");
        PreferencePair pair;
        try {
            pair = parse_pair(*parsed, tok, f, n, formats);
        } catch (const InputError& ex) {   // the tokenizer refused this text
            DataError::at(n, ex.what());
        }
        // keep_start: a row keeps its first seq + 1 tokens (EpochBatches cuts it there).
        const auto longer = std::max(pair.chosen.ids.size(), pair.rejected.ids.size());
        if (trained_within(pair.chosen, seq) == 0 || trained_within(pair.rejected, seq) == 0) {
            if (d.dropped++ == 0) d.first_dropped_line = n;
            continue;
        }
        if (static_cast<std::int64_t>(longer) > seq + 1) ++d.truncated;
        all.push_back(std::move(pair));
    }
    d.lines = n;
    for (const auto& [k, v] : formats) d.formats += (d.formats.empty() ? "" : ", ") + k + ": " + std::to_string(v);
    if (all.empty())
        throw DataError(file.string() + " holds no preference pairs" +
                            (d.dropped ? " that fit --seq " + std::to_string(seq) + " (" + std::to_string(d.dropped) +
                                             " prompts leave no completion token; the first on line " +
                                             std::to_string(d.first_dropped_line) + ")"
                                       : std::string()),
                        0);
    const std::vector<bool> is_eval = held_out_items(all.size(), eval_fraction, seed);
    for (size_t i = 0; i < all.size(); ++i) (is_eval[i] ? d.eval : d.train).push_back(std::move(all[i]));
    return d;
}

std::vector<Batch> make_pair_batches(const std::vector<PreferencePair>& pairs, std::int64_t seq, std::int64_t batch,
                                     std::int32_t pad_id, std::uint64_t seed, std::int64_t epoch, bool shuffle,
                                     bool drop_last) {
    std::vector<size_t> order(pairs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (shuffle) shuffle_indices(order, seed * 1000003ULL + static_cast<std::uint64_t>(epoch));
    std::vector<Batch> out;
    for (size_t start = 0; start < order.size(); start += static_cast<size_t>(batch)) {
        const size_t count = std::min(static_cast<size_t>(batch), order.size() - start);
        if (static_cast<std::int64_t>(count) < batch && drop_last) break;
        std::vector<Example> rows;
        rows.reserve(2 * count);
        for (size_t k = 0; k < count; ++k) rows.push_back(pairs[order[start + k]].chosen);
        for (size_t k = 0; k < count; ++k) rows.push_back(pairs[order[start + k]].rejected);
        // One padded row per example, in this order: the chosen half, then the rejected half.
        const EpochBatches one(rows, seq, static_cast<std::int64_t>(rows.size()), Padding::Max, pad_id, 0, 0, false, false);
        out.push_back(one[0]);
    }
    if (out.empty())
        throw DataError("the data is too small for one batch of " + std::to_string(batch) + " pairs (" +
                            std::to_string(2 * batch) + " rows of " + std::to_string(seq) + " tokens); " +
                            std::to_string(pairs.size()) + " pairs",
                        0);
    return out;
}

std::vector<Example> chosen_examples(const std::vector<PreferencePair>& pairs) {
    std::vector<Example> out;
    out.reserve(pairs.size());
    for (const auto& p : pairs) out.push_back(p.chosen);
    return out;
}

}  // namespace wingspan::train
