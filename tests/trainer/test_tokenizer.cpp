// Tokenizers on fixture tokenizer.json files written here: byte-level BPE merges, the
// Llama-3 split pattern (\p{L}, \p{N}{1,3}, lookahead), added/special tokens, round trips,
// and `wingspan-train tokenize` giving the same ids as the library.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

#include "data.hpp"
#include "tokenizer.hpp"
#include "wingspan/errors.hpp"

using namespace wingspan;
using namespace wingspan::train;
using nlohmann::json;

namespace {

const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-2's byte -> printable character map, written independently of the tokenizer's.
std::string mapped(unsigned char b) {
    std::vector<int> bs;
    for (int c = '!'; c <= '~'; ++c) bs.push_back(c);
    for (int c = 0xA1; c <= 0xAC; ++c) bs.push_back(c);
    for (int c = 0xAE; c <= 0xFF; ++c) bs.push_back(c);
    int cp = -1, n = 0;
    for (int c = 0; c < 256 && cp < 0; ++c) {
        const bool printable = std::find(bs.begin(), bs.end(), c) != bs.end();
        if (c == b) cp = printable ? c : 256 + n;
        if (!printable) ++n;
    }
    QString s(QChar(static_cast<char16_t>(cp)));
    return s.toStdString();
}

// A byte-level BPE whose ids 0..255 are the bytes, then a few merges that would fire only
// if the pre-tokenizer split the text wrongly.
json fixture(bool llama3_split, bool ignore_merges) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[mapped(static_cast<unsigned char>(b))] = b;
    const std::string G = mapped(' ');
    const std::vector<std::pair<std::string, std::string>> merges = {
        {G, "t"}, {"h", "e"}, {G + "t", "he"}, {"t", "he"}, {"c", "a"}, {"ca", "t"},
        {"3", "4"}, {G, "1"}, {",", G}, {"'", "m"}};
    int id = 256;
    json m = json::array();
    for (const auto& [a, b] : merges) {
        vocab[a + b] = id++;
        m.push_back(a + " " + b);
    }
    json pre;
    if (llama3_split) {
        pre = {{"type", "Sequence"},
               {"pretokenizers",
                {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Split}}}, {"behavior", "Isolated"}, {"invert", false}},
                 {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
    } else {
        pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
    }
    return {{"version", "1.0"},
            {"added_tokens",
             {{{"id", 300}, {"content", "<|begin_of_text|>"}, {"special", true}, {"lstrip", false}, {"rstrip", false}},
              {{"id", 301}, {"content", "<|eot_id|>"}, {"special", true}, {"lstrip", false}, {"rstrip", false}}}},
            {"normalizer", nullptr},
            {"pre_tokenizer", pre},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}, {"ignore_merges", ignore_merges}}}};
}

std::vector<std::int32_t> bytes_of(const std::string& s) {
    std::vector<std::int32_t> v;
    for (unsigned char c : s) v.push_back(c);
    return v;
}

}  // namespace

class TokenizerTest : public QObject {
    Q_OBJECT
private slots:
    void builtinByteLevel() {
        auto t = Tokenizer::byte_level();
        QCOMPARE(t->vocab_size(), std::int64_t(260));
        const std::string s = "hi <|im_end|>é";
        const auto ids = t->encode(s);
        QCOMPARE(ids, (std::vector<std::int32_t>{104, 105, 32, 258, 0xC3, 0xA9}));
        QCOMPARE(t->decode(ids), s);
        QCOMPARE(t->decode(ids, true), std::string("hi é"));
    }

    void mergesFollowRanks() {
        auto t = Tokenizer::from_json_text(fixture(true, false).dump(), "fixture");
        // "the": h+e, then t+he; " cat": c+a, then ca+t, and " " stays alone.
        QCOMPARE(t->encode("the cat"), (std::vector<std::int32_t>{259, 32, 261}));
        // " the": Ġ+t first (rank 0), then Ġt+he.
        QCOMPARE(t->encode(" the"), (std::vector<std::int32_t>{258}));
    }

    void llama3SplitPattern() {
        auto t = Tokenizer::from_json_text(fixture(true, false).dump(), "fixture");
        // Digits split in runs of at most three ("123" "45"): 3 and 4 never meet, and the
        // space before a digit is its own piece, so "Ġ1" never forms.
        std::vector<std::int32_t> want = bytes_of("a 12345");
        QCOMPARE(t->encode("a 12345"), want);
        // Contractions are their own pieces ('m merges); ", " stays apart (punctuation piece
        // is "," and the space belongs to the next word).
        auto ids = t->encode("I'm here, you");
        // "I" "'m" " here" "," " you"; inside " here" only h+e merges.
        const std::vector<std::int32_t> expect = {'I', 265, ' ', 257, 'r', 'e', ',', ' ', 'y', 'o', 'u'};
        QCOMPARE(ids, expect);
        // The GPT-2 pattern (ByteLevel use_regex) lets " 12345" be one piece: now Ġ1 and 34 merge.
        auto gpt2 = Tokenizer::from_json_text(fixture(false, false).dump(), "fixture");
        QCOMPARE(gpt2->encode(" 12345"), (std::vector<std::int32_t>{263, '2', 262, '5'}));
    }

    void unicodeRoundTrips() {
        auto t = Tokenizer::from_json_text(fixture(true, false).dump(), "fixture");
        const std::string s = "naïve café — 日本語 the cat's 42\n\n  tabs\tand emoji 🙂";
        QCOMPARE(t->decode(t->encode(s)), s);
    }

    void addedTokensAreMatchedFirst() {
        auto t = Tokenizer::from_json_text(fixture(true, false).dump(), "fixture");
        QCOMPARE(t->encode("<|begin_of_text|>the<|eot_id|>"), (std::vector<std::int32_t>{300, 259, 301}));
        QCOMPARE(t->token_id("<|eot_id|>").value(), 301);
        QCOMPARE(t->vocab_size(), std::int64_t(302));
        QCOMPARE(t->decode({300, 259, 301}, true), std::string("the"));
    }

    void ignoreMergesUsesWholeWords() {
        json j = fixture(true, true);
        j["model"]["vocab"]["cats"] = 299;   // a word in the vocabulary without merges to it
        auto t = Tokenizer::from_json_text(j.dump(), "fixture");
        QCOMPARE(t->encode("cats"), (std::vector<std::int32_t>{299}));
        auto t2 = Tokenizer::from_json_text(fixture(true, false).dump(), "fixture");
        QCOMPARE(t2->encode("cats"), (std::vector<std::int32_t>{261, 's'}));
    }

    void unsupportedTokenizersAreClearErrors() {
        json j = fixture(true, false);
        j["model"]["type"] = "Unigram";
        QVERIFY_THROWS_EXCEPTION(InputError, Tokenizer::from_json_text(j.dump(), "x"));
        QVERIFY_THROWS_EXCEPTION(InputError, Tokenizer::from_json_text("{not json", "x"));
    }

    void chatTemplateMasksAnswers() {
        auto t = Tokenizer::byte_level();
        const ChatFormat f = chat_format_for(*t);
        QCOMPARE(f.kind, ChatFormat::ChatML);
        const Example e = render_chat({{"user", "Hi"}, {"assistant", "Yo"}}, *t, f);
        std::string trained;
        std::vector<std::int32_t> trained_ids;
        for (size_t i = 0; i < e.ids.size(); ++i)
            if (e.trained[i]) trained_ids.push_back(e.ids[i]);
        QCOMPARE(t->decode(trained_ids), std::string("Yo<|im_end|>"));
        QCOMPARE(t->decode(e.ids), std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n"));
        // A Llama-3 style vocabulary switches the template.
        json j = fixture(true, false);
        j["added_tokens"].push_back({{"id", 302}, {"content", "<|start_header_id|>"}, {"special", true}});
        j["added_tokens"].push_back({{"id", 303}, {"content", "<|end_header_id|>"}, {"special", true}});
        auto l3 = Tokenizer::from_json_text(j.dump(), "fixture");
        const ChatFormat f3 = chat_format_for(*l3);
        QCOMPARE(f3.kind, ChatFormat::Llama3);
        QCOMPARE(f3.bos, 300);
        const Example e3 = render_chat({{"user", "Hi"}, {"assistant", "Yo"}}, *l3, f3);
        QCOMPARE(e3.ids.front(), 300);
        QCOMPARE(e3.ids.back(), 301);
        QVERIFY(e3.trained.back());
    }

    void tokenizeCommandMatchesLibrary() {
        QTemporaryDir dir;
        const QString file = dir.filePath("tokenizer.json");
        std::ofstream(file.toStdString()) << fixture(true, false).dump();
        const std::string text = "<|begin_of_text|>I'm here, the cat 12345 naïve 🙂";
        QProcess p;
        p.start(WINGSPAN_TRAIN_BIN, {"tokenize", "--tokenizer", file});
        QVERIFY(p.waitForStarted());
        p.write(QByteArray::fromStdString(text));
        p.closeWriteChannel();
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        const json ids = json::parse(p.readAllStandardOutput().toStdString());
        auto t = Tokenizer::from_file(file.toStdString());
        QCOMPARE(ids.get<std::vector<std::int32_t>>(), t->encode(text));
        // A missing file is an error event and a non-zero exit.
        QProcess bad;
        bad.start(WINGSPAN_TRAIN_BIN, {"tokenize", "--tokenizer", dir.filePath("nope.json")});
        bad.closeWriteChannel();
        QVERIFY(bad.waitForFinished(30000));
        QVERIFY(bad.exitCode() != 0);
        QVERIFY(bad.readAllStandardOutput().contains("\"event\":\"error\""));
    }
};

QTEST_GUILESS_MAIN(TokenizerTest)
#include "test_tokenizer.moc"
