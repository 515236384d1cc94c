// Chat templates: each family's template (fixtures/chat/*.jinja) is recognised and rendered
// to exactly the ids transformers.js's Jinja renderer gives (chat_reference.json, made by
// make_chat_reference.mjs), with the assistant turns trained; overrides and unknown templates.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "chat_format.hpp"
#include "data/data.hpp"
#include "tokenizer.hpp"
#include "wingspan/errors.hpp"

using namespace wingspan;
using namespace wingspan::train;
using nlohmann::json;

namespace {

const std::string kDir = WINGSPAN_CHAT_FIXTURES;

std::string slurp(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<Message> messages_of(const json& j) {
    std::vector<Message> m;
    for (const auto& x : j) m.push_back({x.at("role").get<std::string>(), x.at("content").get<std::string>()});
    return m;
}

std::vector<std::int32_t> trained_ids(const Example& e) {
    std::vector<std::int32_t> out;
    for (size_t i = 0; i < e.ids.size(); ++i)
        if (e.trained[i]) out.push_back(e.ids[i]);
    return out;
}

}  // namespace

class ChatFormatTest : public QObject {
    Q_OBJECT

    // As make_chat_reference.mjs configures it: bos_token <s>, eos_token </s>.
    std::shared_ptr<Tokenizer> tok_ = [] {
        auto t = Tokenizer::from_file(kDir + "/small-chat.json");
        t->apply_config(json{{"bos_token", "<s>"}, {"eos_token", "</s>"}}, "test config");
        return t;
    }();

private slots:
    void templatesRenderExactly_data() {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("format");
        QTest::addColumn<QString>("trained");   // the assistant turns as the trained tokens decode
        QTest::newRow("llama2") << "llama2" << "llama2" << "In Paris. </s> Also in Paris, by the Seine. </s>";   // the decoder strips the first space
        QTest::newRow("mistral") << "mistral" << "mistral" << "In Paris.</s>Also in Paris, by the Seine.</s>";
        QTest::newRow("zephyr") << "zephyr" << "zephyr" << "In Paris.</s>Also in Paris, by the Seine.</s>";
        QTest::newRow("gemma") << "gemma" << "gemma" << "In Paris.<end_of_turn>Also in Paris, by the Seine.<end_of_turn>";
        QTest::newRow("phi3") << "phi3" << "phi3" << "In Paris.<|end|>Also in Paris, by the Seine.<|end|>";
        QTest::newRow("qwen2.5") << "qwen2.5" << "chatml" << "In Paris.<|im_end|>Also in Paris, by the Seine.<|im_end|>";
        QTest::newRow("llama3.1") << "llama3.1" << "llama3" << "In Paris.<|eot_id|>Also in Paris, by the Seine.<|eot_id|>";
    }

    void templatesRenderExactly() {
        QFETCH(QString, family);
        QFETCH(QString, format);
        QFETCH(QString, trained);
        const json ref = json::parse(slurp(kDir + "/chat_reference.json")).at(family.toStdString());
        const ChatFormat f = recognise_chat_template(slurp(kDir + "/" + ref.at("template").get<std::string>()), *tok_);
        QCOMPARE(QString::fromStdString(f.name()), format);
        const Example e = render_chat(messages_of(ref.at("messages")), *tok_, f);
        const auto want = ref.at("ids").get<std::vector<std::int32_t>>();
        if (e.ids != want)
            qWarning("got  %s\nwant %s\n(%s)", json(e.ids).dump().c_str(), json(want).dump().c_str(),
                     tok_->decode(e.ids).c_str());
        QCOMPARE(e.ids, want);
        QCOMPARE(e.trained.size(), e.ids.size());
        QCOMPARE(QString::fromStdString(tok_->decode(trained_ids(e))), trained);
        const Example p = render_chat(messages_of(ref.at("prompt_messages")), *tok_, f, true);
        QCOMPARE(p.ids, ref.at("prompt_ids").get<std::vector<std::int32_t>>());
        QVERIFY(trained_ids(p).empty());
    }

    void templatesAreReadFromTheModelFolder() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        QVERIFY(!chat_template_of(d));
        std::ofstream(d + "/tokenizer_config.json") << json{{"chat_template", slurp(kDir + "/gemma.jinja")}}.dump();
        QCOMPARE(chat_format_for_model(*tok_, d, "").name(), std::string("gemma"));
        // A list of named templates: the default one.
        std::ofstream(d + "/tokenizer_config.json")
            << json{{"chat_template", {{{"name", "tool_use"}, {"template", "x"}}, {{"name", "default"}, {"template", slurp(kDir + "/phi3.jinja")}}}}}.dump();
        QCOMPARE(chat_format_for_model(*tok_, d, "").name(), std::string("phi3"));
        // chat_template.jinja wins over tokenizer_config.json, and --chat-format over both.
        std::ofstream(d + "/chat_template.jinja") << slurp(kDir + "/mistral.jinja");
        QCOMPARE(chat_format_for_model(*tok_, d, "").name(), std::string("mistral"));
        QCOMPARE(chat_format_for_model(*tok_, d, "zephyr").name(), std::string("zephyr"));
        QVERIFY_THROWS_EXCEPTION(InputError, chat_format_for_model(*tok_, d, "vicuna"));
        // No template at all: the special tokens decide, as before.
        QCOMPARE(chat_format_for_model(*Tokenizer::byte_level(), "", "").name(), std::string("chatml"));
    }

    void unknownTemplatesNameTheirFirstLine() {
        const std::string t = "{% for m in messages %}\n{{ '### ' + m.role + ': ' + m.content }}\n{% endfor %}";
        try {
            recognise_chat_template(t, *tok_);
            QFAIL("no DataError");
        } catch (const DataError& e) {
            qInfo("%s", e.what());
            QVERIFY(std::string(e.what()).find("its first line: \"{% for m in messages %}\"") != std::string::npos);
            QVERIFY(std::string(e.what()).find("--chat-format") != std::string::npos);
        }
    }
};

QTEST_GUILESS_MAIN(ChatFormatTest)
#include "test_chat_format.moc"
