// Issue 34, the trainer's own code fed hostile model files (in process): tokenizer split
// patterns that backtrack catastrophically are bounded (class 8); chat templates tokenize in
// time linear in the turns, marking exactly what re-encoding every prefix did (class 9); every
// file a model folder supplies goes through the bounded reader (class 10); adapter configs are
// checked against the model and the adapter's tensor shapes before anything is sized (class 18).
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <filesystem>
#include <algorithm>
#include <random>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/adapter_config.hpp"
#include "hostile_files.hpp"
#include "chat_format.hpp"
#include "data/data.hpp"
#include "tokenizer.hpp"
#include "tokenizer_internal.hpp"   // tok::Regex
#include "model/weights_io.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/safetensors.hpp"

using namespace wingspan;
using namespace wingspan::train;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kChatDir = WINGSPAN_CHAT_FIXTURES;

std::shared_ptr<Tokenizer> small_chat() {
    auto t = Tokenizer::from_file(kChatDir + "/small-chat.json");
    t->apply_config(json{{"bos_token", "<s>"}, {"eos_token", "</s>"}}, "test config");
    return t;
}

// What marking the turns cost before issue 34: re-encode the text before each change of the
// trained flag and take what it shares with the whole encoding (quadratic in turns).
Example prefix_reencoding(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f, bool gen) {
    const ChatText t = render_template_text(messages, tok, f, gen);
    Example e;
    e.ids = tok.encode(t.text);
    e.trained.assign(e.ids.size(), 0);
    size_t from = 0;
    bool on = false;
    for (const auto& [offset, next] : t.changes) {
        const auto prefix = tok.encode(std::string_view(t.text).substr(0, offset));
        size_t at = 0;
        while (at < prefix.size() && at < e.ids.size() && prefix[at] == e.ids[at]) ++at;
        if (on) std::fill(e.trained.begin() + long(from), e.trained.begin() + long(std::max(at, from)), 1);
        from = at;
        on = next;
    }
    if (on) std::fill(e.trained.begin() + long(from), e.trained.end(), 1);
    return e;
}

std::vector<Message> conversation(size_t turns, const std::vector<std::string>& contents) {
    std::vector<Message> m{{"system", "Be brief."}};
    for (size_t i = 0; i < turns; ++i) {
        m.push_back({"user", contents[(2 * i) % contents.size()]});
        m.push_back({"assistant", contents[(2 * i + 1) % contents.size()]});
    }
    return m;
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// Runs `f`, which must throw InputError; returns its message.
template <typename F>
std::string input_error_of(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no InputError)";
}

// An adapter folder: adapter_config.json `config` and lora_A/lora_B tensors of the shapes given.
void write_adapter(const fs::path& dir, const json& config,
                   const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& tensors) {
    fs::create_directories(dir);
    write_text(dir / "adapter_config.json", config.dump());
    std::vector<std::pair<std::string, at::Tensor>> t;
    for (const auto& [name, shape] : tensors) t.push_back({name, at::zeros(shape)});
    save_safetensors(dir / "adapter_model.safetensors", t, {{"format", "pt"}});
}

const std::string kQ = "model.layers.0.self_attn.q_proj.weight";
const std::string kA = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight";
const std::string kB = "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight";

std::optional<std::vector<std::int64_t>> base_64x32(const std::string& name) {
    if (name == kQ) return std::vector<std::int64_t>{64, 32};
    return std::nullopt;
}

}  // namespace

class HostileTrainer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // ---- 8. a split pattern that backtracks catastrophically ----
    void splitPatternsAreBounded_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<int>("bytes");
        QTest::addColumn<QString>("fill");
        // The issue's: each position backtracks 2^22 ways (36 s on 2000 bytes before).
        QTest::newRow("alternation 2000") << R"((?:a|a){1,22}c|a|[^a])" << 2000 << "a";
        QTest::newRow("alternation 20000") << R"((?:a|a){1,22}c|a|[^a])" << 20000 << "a";
        // Nested quantifiers, the textbook case.
        QTest::newRow("nested plus") << R"((?:a+)+b|.)" << 5000 << "a";
        // Unicode classes that overlap.
        QTest::newRow("unicode classes") << R"((?:\p{L}|\p{Ll})+\d|\s|.)" << 5000 << "x";
        // Each position just under the per-match bound: the per-text budget ends it.
        QTest::newRow("many cheap matches") << R"((?:a|a){1,16}c|a|[^a])" << 20000 << "a";
    }
    void splitPatternsAreBounded() {
        QFETCH(QString, pattern);
        QFETCH(int, bytes);
        QFETCH(QString, fill);
        const std::string p = pattern.toStdString();
        const std::string text(static_cast<size_t>(bytes), fill.toStdString()[0]);
        QElapsedTimer t;
        t.start();
        const std::string why = input_error_of([&] { tok::Regex(p).find_all(text); });
        qInfo("%lld ms: %s", static_cast<long long>(t.elapsed()), why.c_str());
        QVERIFY2(t.elapsed() < 5000, why.c_str());
        QVERIFY2(why.find("split pattern") != std::string::npos, why.c_str());
        // The pattern is named (as a JSON string: backslashes doubled), on one line.
        QVERIFY2(why.find(json(p).dump()) != std::string::npos, why.c_str());
        QVERIFY(why.find('\n') == std::string::npos);
        // Through a whole tokenizer the same.
        auto tok = Tokenizer::from_json_text(testing::split_tokenizer(p), "hostile tokenizer.json");
        QVERIFY(input_error_of([&] { tok->encode(text); }).find("split pattern") != std::string::npos);
    }

    void realPatternsStillSplitLongText() {
        // GPT-2's and Llama 3's patterns on a megabyte of prose and a 300 KB "word": well inside the bounds.
        const std::string gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
        const std::string llama3 =
            R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
        std::string prose;
        while (prose.size() < (1u << 20)) prose += "The quick brown fox, 1234 times; jumps   over\n\tthe lazy dog's back. ";
        const std::string word(300'000, 'w'), spaces = std::string(300'000, ' ') + "x";
        for (const auto& p : {gpt2, llama3}) {
            QElapsedTimer t;
            t.start();
            const tok::Regex re(p);
            QVERIFY(re.find_all(prose).size() > 100'000);
            QCOMPARE(re.find_all(word).size(), size_t(1));
            QVERIFY(!re.find_all(spaces).empty());
            qInfo("%lld ms", static_cast<long long>(t.elapsed()));
        }
    }

    // ---- 9. chat templates: one encoding, boundaries by offsets ----
    void turnsMarkedAsPrefixReencodingDid() {
        const std::vector<std::string> contents = {
            "What is the capital of France?", " In Paris. ", "", "  leading and trailing  ", "line\nbreaks\n\n",
            "looks like a marker: <|im_end|> <|eot_id|> </s> [/INST]", "ünïcödé ✓ 東京", "\t", "a"};
        for (auto tok : {small_chat(), Tokenizer::byte_level()}) {
            for (const auto& name : chat_format_names()) {
                const ChatFormat f = chat_format_named(name, *tok);
                for (size_t turns : {1, 2, 5}) {
                    for (bool gen : {false, true}) {
                        auto m = conversation(turns, contents);
                        if (gen) m.push_back({"user", "and then?"});
                        const Example want = prefix_reencoding(m, *tok, f, gen);
                        const Example got = render_template_chat(m, *tok, f, gen);
                        QCOMPARE(got.ids, want.ids);
                        if (got.trained != want.trained) qWarning("%s, %zu turns", name.c_str(), turns);
                        QCOMPARE(got.trained, want.trained);
                    }
                }
            }
        }
    }

    void thousandsOfTurnsTokenizeInLinearTime_data() {
        QTest::addColumn<bool>("builtin");
        QTest::newRow("SentencePiece with every template's special tokens") << false;
        // The built-in tokenizer lacks most templates' markers: one stretch holds every turn.
        QTest::newRow("built-in byte-level") << true;
    }
    void thousandsOfTurnsTokenizeInLinearTime() {
        QFETCH(bool, builtin);
        const auto tok = builtin ? Tokenizer::byte_level() : small_chat();
        const std::vector<std::string> contents = {"Where is the tower?", "In Paris, by the Seine.", "And the river?",
                                                    "It flows through the city."};
        const auto m = conversation(4000, contents);
        for (const auto& name : chat_format_names()) {
            const ChatFormat f = chat_format_named(name, *tok);
            QElapsedTimer t;
            t.start();
            const Example e = render_template_chat(m, *tok, f, false);
            const qint64 ms = t.elapsed();
            qInfo("%s: 4000 turns, %zu tokens in %lld ms", name.c_str(), e.ids.size(), static_cast<long long>(ms));
            QVERIFY(e.ids.size() > 40'000);
            std::int64_t trained = 0;
            for (auto x : e.trained) trained += x;
            QVERIFY(trained > 10'000 && trained < static_cast<std::int64_t>(e.ids.size()));
            // Re-encoding each prefix took 91 s for 4000 turns; linear is tens of milliseconds.
            QVERIFY2(ms < 1500, name.c_str());
        }
    }

    // ---- 10. every model file through the bounded reader ----
    void modelFilesThatAreNotFilesAreRefused_data() {
        QTest::addColumn<QString>("kind");
        QTest::newRow("fifo") << "fifo";
        QTest::newRow("link to /dev/zero") << "zero";
        QTest::newRow("folder") << "folder";
    }
    void modelFilesThatAreNotFilesAreRefused() {
        QFETCH(QString, kind);
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        // Makes `p` the hostile kind of non-file.
        auto plant = [&](const fs::path& p) {
            fs::remove_all(p);
            if (kind == "fifo") QCOMPARE(::mkfifo(p.c_str(), 0644), 0);
            else if (kind == "zero") fs::create_symlink("/dev/zero", p);
            else fs::create_directory(p);
        };
        auto refused = [&](const std::string& why, const char* file) {
            QVERIFY2(why.find(file) != std::string::npos && why.find("not a regular file") != std::string::npos,
                     why.c_str());
        };
        // chat_template.jinja, then tokenizer_config.json's template.
        plant(dir / "chat_template.jinja");
        refused(input_error_of([&] { chat_template_of(dir); }), "chat_template.jinja");
        fs::remove_all(dir / "chat_template.jinja");
        plant(dir / "tokenizer_config.json");
        refused(input_error_of([&] { chat_template_of(dir); }), "tokenizer_config.json");
        // tokenizer.json, and tokenizer_config.json beside a good one.
        write_text(dir / "tokenizer.json", testing::split_tokenizer("\\s+|\\S+"));
        refused(input_error_of([&] { Tokenizer::from_file(dir / "tokenizer.json"); }), "tokenizer_config.json");
        fs::remove_all(dir / "tokenizer_config.json");
        plant(dir / "tokenizer.json");
        refused(input_error_of([&] { Tokenizer::from_file(dir / "tokenizer.json"); }), "tokenizer.json");
        // Weights, and an adapter's config and weights.
        plant(dir / "model.safetensors");
        refused(input_error_of([&] { WeightReader::open_dir(dir); }), "model.safetensors");
        write_adapter(dir / "a", {{"r", 8}, {"lora_alpha", 16}, {"target_modules", {"q_proj"}}},
                      {{kA, {8, 32}}, {kB, {64, 8}}});
        plant(dir / "a" / "adapter_model.safetensors");
        refused(input_error_of([&] { read_adapter_config(dir / "a", base_64x32); }), "adapter_model.safetensors");
        plant(dir / "a" / "adapter_config.json");
        refused(input_error_of([&] { read_adapter_config(dir / "a", base_64x32); }), "adapter_config.json");
    }

    // ---- 18. adapter configs checked before anything is allocated ----
    void hostileAdapterConfigsAreOneLineErrors_data() {
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QString>("expect");
        const json good = {{"r", 8}, {"lora_alpha", 16}, {"target_modules", {"q_proj"}}};
        auto with = [&](const char* key, const json& v) {
            json c = good;
            if (v.is_null()) c.erase(key);
            else c[key] = v;
            return QByteArray::fromStdString(c.dump());
        };
        QTest::newRow("r twenty million") << with("r", 20'000'000) << "\"r\" must be an integer from 1 to 65536";
        QTest::newRow("r other than the tensors'") << with("r", 16) << "lora_A.weight is 8x32 but r 16";
        QTest::newRow("r negative") << with("r", -8) << "\"r\"";
        QTest::newRow("r zero") << with("r", 0) << "\"r\"";
        QTest::newRow("r as text") << with("r", "8") << "\"r\"";
        QTest::newRow("r fractional") << with("r", 8.5) << "\"r\"";
        QTest::newRow("r missing") << with("r", json()) << "missing";
        QTest::newRow("alpha as text") << with("lora_alpha", "16") << "lora_alpha";
        QTest::newRow("alpha huge") << with("lora_alpha", 1e300) << "lora_alpha";
        QTest::newRow("rslora not a flag") << with("use_rslora", "yes") << "use_rslora";
        QTest::newRow("unknown target") << with("target_modules", {"q_proj", "lm_head"}) << "lm_head";
        QTest::newRow("target not a name") << with("target_modules", {1}) << "target_modules";
        QTest::newRow("targets a string") << with("target_modules", "q_proj") << "target_modules";
        QTest::newRow("not an object") << QByteArray("[8]") << "JSON object";
    }
    void hostileAdapterConfigsAreOneLineErrors() {
        QFETCH(QByteArray, config);
        QFETCH(QString, expect);
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        write_adapter(dir, json::object(), {{kA, {8, 32}}, {kB, {64, 8}}});
        write_text(dir / "adapter_config.json", config.toStdString());
        const std::string why = input_error_of([&] { read_adapter_config(dir, base_64x32); });
        QVERIFY2(why.find(expect.toStdString()) != std::string::npos, why.c_str());
        QVERIFY2(why.find('\n') == std::string::npos, why.c_str());
    }

    void adapterTensorsMustFitTheBase() {
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        const json config = {{"r", 8}, {"lora_alpha", 16}, {"target_modules", {"q_proj"}}};
        write_adapter(dir, config, {{kA, {8, 32}}, {kB, {64, 8}}});
        const AdapterConfig ok = read_adapter_config(dir, base_64x32);
        QCOMPARE(ok.rank, std::int64_t(8));
        QCOMPARE(ok.scaling(), 2.0);
        const std::vector<std::pair<std::vector<std::pair<std::string, std::vector<std::int64_t>>>, std::string>> bad = {
            {{{kA, {8, 48}}, {kB, {64, 8}}}, "lora_A.weight is 8x48"},                   // another width
            {{{kA, {8, 32}}, {kB, {96, 8}}}, "lora_B.weight is 96x8"},                   // another height
            {{{kA, {8, 32, 1}}, {kB, {64, 8}}}, "not a matrix"},                         // not 2-D
            {{{"base_model.model.lm_head.lora_A.weight", {8, 32}}}, "does not have"},     // a weight the base lacks
            {{{"something.else", {4}}}, "no LoRA tensors"}};
        for (const auto& [tensors, expect] : bad) {
            fs::remove_all(dir);
            write_adapter(dir, config, tensors);
            const std::string why = input_error_of([&] { read_adapter_config(dir, base_64x32); });
            QVERIFY2(why.find(expect) != std::string::npos, why.c_str());
        }
    }

    // ---- 11. the data set's memory: compact, bounded, refused while read ----
    // 20 MB of JSONL took 1 GB of RAM (every batch of an epoch made up front as int64 rows, examples at twice
    // their size); now the examples hold about 5 B per token and batches are made one at a time.
    void datasetMemoryIsCompactAndBounded() {
        QTemporaryDir tmp;
        const fs::path file = fs::path(tmp.path().toStdString()) / "data.jsonl";
        std::ofstream out(file);
        std::int64_t file_bytes = 0, lines = 0;
        for (; file_bytes < 2'000'000; ++lines) {
            const std::string line = json{{"text", std::string(20 + lines % 300, char('a' + lines % 26))}}.dump() + "\n";
            out << line;
            file_bytes += std::int64_t(line.size());
        }
        out.close();
        const auto tok = Tokenizer::byte_level();
        const ChatFormat f = chat_format_for(*tok);
        const Dataset d = load_jsonl(file, *tok, f, 0.05, 1);
        QCOMPARE(std::int64_t(d.train.size() + d.eval.size()), lines);
        const std::int64_t per_example = std::int64_t(sizeof(Example));
        // Each example's ids (4 B) and flags (1 B) at their size, plus the Example itself.
        QCOMPARE(d.held_bytes, 5 * d.tokens + per_example * lines);
        QVERIFY2(d.held_bytes < 8 * file_bytes, qPrintable(QString::number(d.held_bytes)));
        const EpochBatches batches(d.train, 64, 2, Padding::Packed, f.pad, 1, 0, true, true);
        QVERIFY(batches.held_bytes() <= 12 * std::int64_t(d.train.capacity()) + 64);
        // Refused while read, naming the line it reached, before the data set can take the machine's memory.
        try {
            (void)load_jsonl(file, *tok, f, 0.05, 1, 100'000);
            QFAIL("a data set over its RAM share was loaded");
        } catch (const DataError& e) {
            QVERIFY2(e.line > 0 && e.line < lines / 10, e.what());
            QVERIFY2(std::string(e.what()).find("more than 100000 B of RAM") != std::string::npos, e.what());
        }
    }

    // The batches made one at a time are the rows the old whole-epoch builder made: the concatenation in
    // the epoch's order cut into rows of seq (+1 for the last label), or one padded example per row.
    void epochBatchesAreTheRowsOfTheEpoch() {
        std::vector<Example> ex;
        std::mt19937 rng(7);
        for (int i = 0; i < 37; ++i) {
            Example e;
            const int n = 2 + int(rng() % 40);
            for (int t = 0; t < n; ++t) {
                e.ids.push_back(int(rng() % 1000));
                e.trained.push_back(std::uint8_t(rng() % 3 != 0));
            }
            ex.push_back(std::move(e));
        }
        for (bool packing : {true, false})
            for (bool shuffle : {true, false})
                for (bool drop_last : {true, false}) {
                    const std::int64_t seq = 16, batch = 3;
                    const EpochBatches got(ex, seq, batch, packing ? Padding::Packed : Padding::Max, -7, 5, 2, shuffle, drop_last);
                    // The reference: every row of the epoch, made up front.
                    const EpochBatches order_only(ex, 1, 1, Padding::Max, 0, 5, 2, shuffle, false);
                    std::vector<std::vector<std::int64_t>> in_rows, lab_rows;
                    std::vector<std::int32_t> ids;
                    std::vector<std::uint8_t> trained;
                    for (size_t k = 0; k < order_only.size(); ++k) {
                        const Batch one = order_only[k];   // row k of a seq-1 unpacked epoch: its first id
                        const auto it = std::find_if(ex.begin(), ex.end(), [&](const Example& e) {
                            return e.ids[0] == one.input[0] && std::count_if(ex.begin(), ex.end(), [&](const Example& o) {
                                                                   return o.ids[0] == e.ids[0];
                                                               }) == 1;
                        });
                        if (it == ex.end()) QSKIP("two examples share a first id; the seed needs changing");
                        if (packing) {
                            ids.insert(ids.end(), it->ids.begin(), it->ids.end());
                            trained.insert(trained.end(), it->trained.begin(), it->trained.end());
                        } else {
                            std::vector<std::int64_t> in(seq, -7), lab(seq, -100);
                            for (std::int64_t t = 0; t < std::min<std::int64_t>(std::int64_t(it->ids.size()) - 1, seq); ++t) {
                                in[t] = it->ids[t];
                                lab[t] = it->trained[t + 1] ? it->ids[t + 1] : -100;
                            }
                            in_rows.push_back(in);
                            lab_rows.push_back(lab);
                        }
                    }
                    for (size_t start = 0; packing && start + seq + 1 <= ids.size(); start += seq) {
                        std::vector<std::int64_t> in(seq), lab(seq);
                        for (std::int64_t t = 0; t < seq; ++t) {
                            in[t] = ids[start + t];
                            lab[t] = trained[start + t + 1] ? ids[start + t + 1] : -100;
                        }
                        in_rows.push_back(in);
                        lab_rows.push_back(lab);
                    }
                    const size_t want = drop_last ? in_rows.size() / batch : (in_rows.size() + batch - 1) / batch;
                    QCOMPARE(got.size(), want);
                    for (size_t b = 0; b < got.size(); ++b) {
                        const Batch x = got[b];
                        std::int64_t targets = 0;
                        for (std::int64_t r = 0; r < x.rows; ++r)
                            for (std::int64_t t = 0; t < seq; ++t) {
                                QCOMPARE(x.input[r * seq + t], in_rows[b * batch + r][t]);
                                QCOMPARE(x.labels[r * seq + t], lab_rows[b * batch + r][t]);
                                targets += lab_rows[b * batch + r][t] != -100;
                            }
                        QCOMPARE(x.target_tokens, targets);
                    }
                }
    }
};

QTEST_GUILESS_MAIN(HostileTrainer)
#include "test_hostile_trainer.moc"
