#include "data.hpp"
#include "stop_signals.hpp"

#include "chat_format.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

#ifndef WINGSPAN_SOURCE_RESOURCES_DIR
#define WINGSPAN_SOURCE_RESOURCES_DIR ""
#endif

namespace wingspan::train {

namespace {

using nlohmann::json;

void append(Example& e, const std::vector<std::int32_t>& ids, bool trained) {
    e.ids.insert(e.ids.end(), ids.begin(), ids.end());
    e.trained.insert(e.trained.end(), ids.size(), trained ? 1 : 0);
}

void append_id(Example& e, std::int32_t id, bool trained) {
    if (id < 0) return;
    e.ids.push_back(id);
    e.trained.push_back(trained ? 1 : 0);
}

std::string need_string(const json& obj, const char* key, std::int64_t line) {
    const auto& v = obj.at(key);
    if (!v.is_string())
        throw DataError("line " + std::to_string(line) + ": \"" + key + "\" must be a string", line);
    return v.get<std::string>();
}

}  // namespace

// Deterministic Fisher-Yates (std::shuffle's algorithm is not fixed by the standard).
void shuffle_indices(std::vector<size_t>& v, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (size_t i = v.size(); i > 1; --i) {
        const size_t j = static_cast<size_t>(rng() % i);
        std::swap(v[i - 1], v[j]);
    }
}

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
    append_id(e, f.bos, false);
    for (const auto& m : messages) {
        const bool answer = m.role == "assistant";
        switch (f.kind) {
            case ChatFormat::ChatML:
                append(e, tok.encode("<|im_start|>" + m.role + "\n"), false);
                append(e, tok.encode(m.content), answer);
                append(e, tok.encode("<|im_end|>"), answer);
                append(e, tok.encode("\n"), false);
                break;
            case ChatFormat::Llama3:
                append(e, tok.encode("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n"), false);
                append(e, tok.encode(m.content), answer);
                append(e, tok.encode("<|eot_id|>"), answer);
                break;
            case ChatFormat::Plain: {
                std::string label = m.role;
                if (!label.empty()) label[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(label[0])));
                append(e, tok.encode(label + ": "), false);
                append(e, tok.encode(m.content), answer);
                if (answer) append_id(e, f.eos, true);
                append(e, tok.encode("\n"), false);
                break;
            }
        }
    }
    if (add_generation_prompt) {
        switch (f.kind) {
            case ChatFormat::ChatML: append(e, tok.encode("<|im_start|>assistant\n"), false); break;
            case ChatFormat::Llama3:
                append(e, tok.encode("<|start_header_id|>assistant<|end_header_id|>\n\n"), false);
                break;
            case ChatFormat::Plain: append(e, tok.encode("Assistant: "), false); break;
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

std::vector<bool> held_out_items(size_t n, double fraction, std::uint64_t seed) {
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    shuffle_indices(idx, seed ^ 0x5eedda7aULL);
    size_t n_eval = 0;
    if (fraction > 0 && n >= 2) n_eval = std::clamp<size_t>(static_cast<size_t>(std::llround(fraction * double(n))), 1, n - 1);
    std::vector<bool> is_eval(n, false);
    for (size_t i = 0; i < n_eval; ++i) is_eval[idx[i]] = true;
    return is_eval;
}

std::int64_t example_bytes(const Example& e) {
    return static_cast<std::int64_t>(sizeof(Example) + e.ids.capacity() * sizeof(std::int32_t) + e.trained.capacity());
}

Dataset load_jsonl(const std::filesystem::path& file, const Tokenizer& tok, const ChatFormat& f,
                   double eval_fraction, std::uint64_t seed, std::int64_t max_held_bytes) {
    require_regular_file(file);   // a named pipe would block here forever
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("cannot read data file " + file.string());
    Dataset d;
    std::vector<Example> all;
    std::map<std::string, std::int64_t> formats;
    std::string line;
    std::int64_t n = 0;
    bool too_long = false;
    while (read_bounded_line(in, line, kMaxDataLineBytes, too_long)) {
        ++n;
        if (n % 256 == 0) stops::throw_if_requested();   // a big data set stops while it is read
        if (too_long)
            throw DataError("line " + std::to_string(n) + " is longer than " + std::to_string(kMaxDataLineBytes) +
                                " bytes; split the example or shorten it",
                            n);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        std::string why;
        auto parsed = try_parse_untrusted_json(line, &why);
        if (!parsed) throw DataError("line " + std::to_string(n) + ": " + why, n);
        json j = std::move(*parsed);
        if (!j.is_object()) throw DataError("line " + std::to_string(n) + ": not a JSON object", n);
        Example e;
        try {
            if (j.contains("messages")) {
                const auto& ms = j["messages"];
                if (!ms.is_array() || ms.empty())
                    throw DataError("line " + std::to_string(n) + ": \"messages\" must be a non-empty array", n);
                std::vector<Message> msgs;
                bool has_answer = false;
                for (const auto& m : ms) {
                    if (!m.is_object() || !m.contains("role") || !m.contains("content"))
                        throw DataError("line " + std::to_string(n) +
                                            ": each message needs \"role\" and \"content\"", n);
                    Message msg{need_string(m, "role", n), need_string(m, "content", n)};
                    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant")
                        throw DataError("line " + std::to_string(n) + ": unknown role \"" + msg.role + "\"", n);
                    has_answer |= msg.role == "assistant";
                    msgs.push_back(std::move(msg));
                }
                if (!has_answer)
                    throw DataError("line " + std::to_string(n) + ": no assistant message to learn from", n);
                e = render_chat(msgs, tok, f);
                formats["messages"]++;
            } else if (j.contains("prompt") || j.contains("completion")) {
                if (!j.contains("prompt") || !j.contains("completion"))
                    throw DataError("line " + std::to_string(n) + ": \"prompt\" and \"completion\" go together", n);
                append_id(e, f.bos, false);
                append(e, tok.encode(need_string(j, "prompt", n)), false);
                append(e, tok.encode(need_string(j, "completion", n)), true);
                append_id(e, f.eos, true);
                formats["prompt/completion"]++;
            } else if (j.contains("text")) {
                append_id(e, f.bos, false);
                append(e, tok.encode(need_string(j, "text", n)), true);
                append_id(e, f.eos, true);
                formats["text"]++;
            } else {
                throw DataError("line " + std::to_string(n) +
                                    ": needs \"text\", \"prompt\"/\"completion\" or \"messages\"", n);
            }
        } catch (const json::exception& ex) {
            throw DataError("line " + std::to_string(n) + ": " + ex.what(), n);
        } catch (const InputError& ex) {   // the tokenizer refused this text (a split pattern's bounds)
            throw DataError("line " + std::to_string(n) + ": " + ex.what(), n);
        }
        if (e.ids.size() < 2) continue;
        // Appending the end token doubled the capacity: the data set is held at 5 B per token, not 10.
        e.ids.shrink_to_fit();
        e.trained.shrink_to_fit();
        d.held_bytes += example_bytes(e);
        if (max_held_bytes > 0 && d.held_bytes > max_held_bytes)
            throw DataError("the data set holds more than " + std::to_string(max_held_bytes) +
                                " B of RAM as tokens by line " + std::to_string(n) + " (" + std::to_string(d.tokens) +
                                " tokens so far, about 5 B each); that is the most this run gives it. Train on a part "
                                "of the file, or on a machine with more memory",
                            n);
        d.tokens += static_cast<std::int64_t>(e.ids.size());
        for (auto t : e.trained) d.trained_tokens += t;
        all.push_back(std::move(e));
    }
    d.lines = n;
    if (all.empty()) throw DataError(file.string() + " holds no examples", 0);
    for (const auto& [k, v] : formats) d.formats += (d.formats.empty() ? "" : ", ") + k + ": " + std::to_string(v);

    const std::vector<bool> is_eval = held_out_items(all.size(), eval_fraction, seed);
    for (size_t i = 0; i < all.size(); ++i) (is_eval[i] ? d.eval : d.train).push_back(std::move(all[i]));
    return d;
}

EpochBatches::EpochBatches(const std::vector<Example>& examples, std::int64_t seq, std::int64_t batch, bool packing,
                           std::int32_t pad_id, std::uint64_t seed, std::int64_t epoch, bool shuffle, bool drop_last)
    : examples_(&examples), seq_(seq), batch_(batch), packing_(packing), pad_id_(pad_id) {
    if (examples.size() > std::numeric_limits<std::uint32_t>::max())
        throw DataError("more than 4,294,967,295 examples in one data set", 0);
    std::vector<size_t> order(examples.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (shuffle) shuffle_indices(order, seed * 1000003ULL + static_cast<std::uint64_t>(epoch));
    order_.assign(order.begin(), order.end());
    if (packing) {
        // Rows of seq inputs over the concatenation, each with the token after it for the last label.
        starts_.resize(order_.size() + 1, 0);
        for (size_t k = 0; k < order_.size(); ++k)
            starts_[k + 1] = starts_[k] + static_cast<std::int64_t>(examples[order_[k]].ids.size());
        const std::int64_t total = starts_.back();
        rows_ = total >= seq + 1 ? (total - 1) / seq : 0;
    } else {
        rows_ = static_cast<std::int64_t>(order_.size());   // one padded example per row
    }
    std::int64_t n = rows_ / batch;
    if (rows_ % batch != 0 && !drop_last) ++n;
    batches_ = static_cast<size_t>(n);
    if (batches_ == 0 && !examples.empty())
        throw DataError("the data is too small for one batch of " + std::to_string(batch) + " x " +
                            std::to_string(seq) + " tokens",
                        0);
}

void EpochBatches::fill_row(std::int64_t r, std::int64_t* in, std::int64_t* lab) const {
    const auto& ex = *examples_;
    if (!packing_) {
        const Example& e = ex[order_[static_cast<size_t>(r)]];
        const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(e.ids.size()) - 1, seq_);
        std::fill(in, in + seq_, pad_id_);
        std::fill(lab, lab + seq_, -100);
        for (std::int64_t t = 0; t < n; ++t) {
            in[t] = e.ids[t];
            lab[t] = e.trained[t + 1] ? e.ids[t + 1] : -100;
        }
        return;
    }
    // The example holding token r·seq of the concatenation, then forward through the next ones.
    std::int64_t pos = r * seq_;
    size_t k = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), pos) - starts_.begin()) - 1;
    for (std::int64_t t = 0; t <= seq_; ++t, ++pos) {
        while (pos >= starts_[k + 1]) ++k;
        const Example& e = ex[order_[k]];
        const size_t at = static_cast<size_t>(pos - starts_[k]);
        const std::int64_t id = e.ids[at];
        if (t < seq_) in[t] = id;
        if (t > 0) lab[t - 1] = e.trained[at] ? id : -100;
    }
}

Batch EpochBatches::operator[](size_t i) const {
    if (!made_.empty()) return made_[i];
    Batch b;
    const std::int64_t first = static_cast<std::int64_t>(i) * batch_;
    b.rows = std::min<std::int64_t>(batch_, rows_ - first);
    b.cols = seq_;
    b.input.resize(static_cast<size_t>(b.rows * seq_));
    b.labels.resize(static_cast<size_t>(b.rows * seq_));
    for (std::int64_t k = 0; k < b.rows; ++k) fill_row(first + k, b.input.data() + k * seq_, b.labels.data() + k * seq_);
    for (auto l : b.labels) b.target_tokens += l != -100;
    return b;
}

std::int64_t EpochBatches::held_bytes() const {
    size_t made = 0;
    for (const Batch& b : made_) made += (b.input.capacity() + b.labels.capacity()) * sizeof(std::int64_t);
    return static_cast<std::int64_t>(made + order_.capacity() * sizeof(std::uint32_t) +
                                     starts_.capacity() * sizeof(std::int64_t));
}

std::filesystem::path default_sample_data(const std::filesystem::path& executable, const char* name) {
    namespace fs = std::filesystem;
    const bool chat = std::string(name) == "chat.jsonl";
    if (const char* env = std::getenv("WINGSPAN_SAMPLE_DATA"); chat && env && *env) return env;
    std::vector<fs::path> candidates;
    if (!executable.empty()) {
        std::error_code ec;
        fs::path dir = fs::weakly_canonical(executable, ec).parent_path();
        candidates.push_back(dir / "../share/wingspan/sample-data" / name);
        candidates.push_back(dir / "../resources/sample-data" / name);
        candidates.push_back(dir / "../../resources/sample-data" / name);
    }
    candidates.push_back(fs::path(WINGSPAN_SOURCE_RESOURCES_DIR) / "sample-data" / name);
    for (const auto& c : candidates) {
        std::error_code ec;
        if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec);
    }
    return candidates.back();
}

}  // namespace wingspan::train
