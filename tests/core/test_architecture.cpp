#include <QtTest>

#include "test_support.hpp"
#include "wingspan/errors.hpp"

using namespace wingspan;
using nlohmann::json;

class ArchitectureTest : public QObject {
    Q_OBJECT
private slots:
    void exactParameterCounts_data() {
        QTest::addColumn<QString>("id");
        QTest::addColumn<qint64>("params");
        // Published counts of the real checkpoints.
        QTest::newRow("llama-3.1-8b") << "llama-3.1-8b" << qint64(8'030'261'248);
        QTest::newRow("qwen2.5-7b") << "qwen2.5-7b" << qint64(7'615'616'512);
        QTest::newRow("mistral-7b-v0.1") << "mistral-7b-v0.1" << qint64(7'241'732'096);
        QTest::newRow("llama-2-7b") << "llama-2-7b" << qint64(6'738'415'616);
        QTest::newRow("smollm2-135m") << "smollm2-135m" << qint64(134'515'008);
        QTest::newRow("qwen2.5-0.5b") << "qwen2.5-0.5b" << qint64(494'032'768);
        QTest::newRow("qwen2.5-72b") << "qwen2.5-72b" << qint64(72'706'203'648);
        QTest::newRow("llama-3.1-70b") << "llama-3.1-70b" << qint64(70'553'706'496);
        QTest::newRow("llama-3.2-1b") << "llama-3.2-1b" << qint64(1'235'814'400);
        QTest::newRow("gemma-2-2b") << "gemma-2-2b" << qint64(2'614'341'888);
        QTest::newRow("gemma-2-27b") << "gemma-2-27b" << qint64(27'227'128'320);
        QTest::newRow("phi-3-mini-4k") << "phi-3-mini-4k" << qint64(3'821'079'552);
        QTest::newRow("mixtral-8x7b") << "mixtral-8x7b" << qint64(46'702'792'704);
        QTest::newRow("qwen3-8b") << "qwen3-8b" << qint64(8'190'735'360);
        QTest::newRow("gpt2") << "gpt2" << qint64(124'439'808);
        QTest::newRow("tinyllama-1.1b") << "tinyllama-1.1b" << qint64(1'100'048'384);
    }
    void exactParameterCounts() {
        QFETCH(QString, id);
        QFETCH(qint64, params);
        QCOMPARE(test::library().model(id.toStdString()).arch.parameter_count(), params);
    }

    void llamaTensorShapes() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        QCOMPARE(a.head_dim, 128);
        QCOMPARE(a.kv_dim(), 1024);
        bool sawK = false;
        for (const auto& g : a.tensor_groups()) {
            if (g.role == LinearRole::K && g.kind == TensorKind::Linear) {
                QCOMPARE(g.rows, 1024);
                QCOMPARE(g.cols, 4096);
                QCOMPARE(g.count, 32);
                sawK = true;
            }
            QVERIFY(g.kind != TensorKind::Bias);   // Llama has no biases
        }
        QVERIFY(sawK);
    }

    void qwen2HasQkvBiasesOnly() {
        const Architecture a = test::library().model("qwen2.5-7b").arch;
        QVERIFY(a.qkv_bias);
        QVERIFY(!a.o_bias);
        std::int64_t bias = 0;
        for (const auto& g : a.tensor_groups())
            if (g.kind == TensorKind::Bias) bias += g.total_elements();
        QCOMPARE(bias, qint64(28 * (3584 + 512 + 512)));
    }

    void moeActiveParameters() {
        const Architecture a = test::library().model("mixtral-8x7b").arch;
        // Non-expert weights plus 2 of 8 experts per layer.
        QCOMPARE(a.active_parameter_count(), qint64(12'879'925'248));
    }

    void missingFieldIsNamed() {
        try {
            Architecture::from_hf_config(json{{"model_type", "llama"}, {"hidden_size", 64}});
            QFAIL("expected an InputError");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("num_hidden_layers") != std::string::npos, e.what());
        }
    }

    void kvHeadsMustDivideHeads() {
        json c = test::tiny_arch().to_hf_config();
        c["num_key_value_heads"] = 3;
        QVERIFY_THROWS_EXCEPTION(InputError, Architecture::from_hf_config(c));
    }

    // A negative optional size (found by fuzz_config under UBSan: a negative shared expert made the
    // MoE inner width negative and the memory model's products overflow) is refused.
    void negativeOptionalSizeIsRejected() {
        json c = test::tiny_arch().to_hf_config();
        c["model_type"] = "qwen2_moe";
        c["num_experts"] = 4;
        c["num_experts_per_tok"] = 2;
        c["moe_intermediate_size"] = 64;
        c["shared_expert_intermediate_size"] = -9223372036854775807LL;
        try {
            (void)Architecture::from_hf_config(c);
            QFAIL("expected an InputError");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("must not be negative") != std::string::npos, e.what());
        }
    }

    void wrongTypeIsRejected() {
        json c = test::tiny_arch().to_hf_config();
        c["hidden_size"] = "large";
        QVERIFY_THROWS_EXCEPTION(InputError, Architecture::from_hf_config(c));
    }

    // Gemma 2's soft caps are read (and written back); Gemma 3 writes null for none; a negative or
    // non-numeric cap is refused with the key named.
    void softCapsAreReadAndChecked() {
        const Architecture g = test::library().model("gemma-2-2b").arch;
        QCOMPARE(g.attn_logit_softcap, 50.0);
        QCOMPARE(g.final_logit_softcap, 30.0);
        QCOMPARE(Architecture::from_hf_config(g.to_hf_config()).final_logit_softcap, 30.0);
        json c = test::tiny_arch().to_hf_config();
        c["final_logit_softcapping"] = nullptr;
        QCOMPARE(Architecture::from_hf_config(c).final_logit_softcap, 0.0);
        QVERIFY(!Architecture::from_hf_config(c).to_hf_config().contains("final_logit_softcapping"));
        for (const json bad : {json(-30.0), json("30")}) {
            c["attn_logit_softcapping"] = bad;
            try {
                (void)Architecture::from_hf_config(c);
                QFAIL("expected an InputError");
            } catch (const InputError& e) {
                QVERIFY2(std::string(e.what()).find("attn_logit_softcapping") != std::string::npos, e.what());
            }
        }
    }

    void unknownFamilyReadsWithWarning() {
        json c = test::tiny_arch().to_hf_config();
        c["model_type"] = "starcoder9";
        c.erase("tie_word_embeddings");
        const Architecture a = Architecture::from_hf_config(c);
        QCOMPARE(a.parameter_count(), test::tiny_arch().parameter_count());
        QVERIFY(a.assumptions.size() >= 2);
    }

    void interpolationWalksTheFamily() {
        std::vector<Architecture> family;
        for (const auto* m : test::library().family("qwen2.5")) family.push_back(m->arch);
        QVERIFY(family.size() >= 6);
        // A real member comes back unchanged.
        const Architecture seven = test::library().model("qwen2.5-7b").arch;
        QCOMPARE(interpolate_family(family, 7'600'000'000).parameter_count(), seven.parameter_count());
        // 10B lies between 7B and 14B: width and depth in between, count close to the target.
        const Architecture ten = interpolate_family(family, 10'000'000'000);
        QVERIFY(std::llabs(ten.parameter_count() - 10'000'000'000) < 500'000'000);
        QVERIFY(ten.hidden >= 3584 && ten.hidden <= 5120);
        QVERIFY(ten.layers >= 28 && ten.layers <= 48);
        QCOMPARE(ten.heads % ten.kv_heads, 0);
        // Below the smallest and above the largest: clamp to the ends.
        QCOMPARE(interpolate_family(family, 1000).parameter_count(), family.front().parameter_count());
        QCOMPARE(interpolate_family(family, 900'000'000'000).parameter_count(), family.back().parameter_count());
    }

    void everyBundledModelValidates() {
        QVERIFY(test::library().models().size() >= 30);
        for (const auto& m : test::library().models()) {
            m.arch.validate();
            QVERIFY2(m.arch.parameter_count() > 0, m.id.c_str());
            QVERIFY2(m.arch.assumptions.empty(), (m.id + ": " + (m.arch.assumptions.empty() ? "" : m.arch.assumptions.front())).c_str());
        }
    }
};

QTEST_APPLESS_MAIN(ArchitectureTest)
#include "test_architecture.moc"
