// The lesson texts are the product brief: every table and claim in them must come out of
// the model. These tests pin each one against the figures the lessons print.
#include <limits>
#include <QtTest>

#include "test_support.hpp"
#include "wingspan/scenario.hpp"

using namespace wingspan;

namespace {
Table table(const std::string& id) { return build_table(test::library(), test::library().scenario(id)); }

const MachineVerdict verdict(const std::string& model, Method method, const std::string& machine) {
    const auto& lib = test::library();
    TrainingSetup s;
    s.method = method;
    s.seq_len = 1024;
    s.micro_batch = 1;
    s.lora_targets = parse_targets("all");
    const auto& m = lib.machine(machine);
    return evaluate(lib.model(model).arch, s, m, lib.framework_for(m));
}
}  // namespace

class LessonsTest : public QObject {
    Q_OBJECT
private slots:
    // "Run the numbers": the per-size table, within 30 % of each printed "~" figure.
    void sizeTable() {
        const Table t = table("lesson-sizes");
        const double lesson[6][3] = {{18e9, 3e9, 1.5e9},  {70e9, 10e9, 4e9},   {140e9, 18e9, 7e9},
                                     {250e9, 32e9, 12e9}, {550e9, 70e9, 24e9}, {1.2e12, 150e9, 48e9}};
        QCOMPARE(t.rows.size(), size_t(6));
        QCOMPARE(t.headers.size(), size_t(4));
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < 3; ++c) {
                const double ours = *t.rows[r][c + 1].value;
                const double ratio = ours / lesson[r][c];
                QVERIFY2(ratio > 0.7 && ratio < 1.3,
                         qPrintable(QString("%1 / %2: %3 vs lesson %4").arg(QString::fromStdString(t.rows[r][0].text),
                                                                            QString::fromStdString(t.headers[c + 1]))
                                        .arg(ours / 1e9)
                                        .arg(lesson[r][c] / 1e9)));
            }
        // And the order the lesson's argument rests on: full ≫ LoRA > QLoRA in every row.
        for (const auto& row : t.rows) QVERIFY(*row[1].value > 4 * *row[2].value && *row[2].value > *row[3].value);
    }

    void bytesPerParameter() {
        const Table t = table("lesson-bytes-per-param");
        QCOMPARE(t.rows.size(), size_t(5));
        QCOMPARE(*t.rows[0][1].value, 2.0);   // bf16 weights
        QCOMPARE(*t.rows[1][1].value, 2.0);   // bf16 gradients
        QCOMPARE(*t.rows[2][1].value, 4.0);   // fp32 master weights
        QCOMPARE(*t.rows[3][1].value, 8.0);   // two fp32 Adam moments
        QCOMPARE(*t.rows[4][1].value, 16.0);
        // 7B × 16 B "does not fit on one 80 GB card".
        QVERIFY(*t.rows[4][2].value > 80e9);
    }

    void rulesOfThumb() {
        const Table t = table("lesson-rules-of-thumb");
        // The lesson's ranges per 1B parameters; ours must land inside or overlap them.
        const double lo[3] = {16, 2.0, 0.6}, hi[3] = {20, 2.5, 0.8};
        for (int i = 0; i < 3; ++i) {
            const std::string text = t.rows[i][1].text;   // "17.3–17.4 GB"
            const double ours_lo = std::stod(text);
            const double ours_hi = *t.rows[i][1].value;
            QVERIFY2(ours_lo <= hi[i] * 1.15 && ours_hi >= lo[i] * 0.9, text.c_str());
        }
    }

    void sevenBillionOnOneCard() {
        // "That fits a 24 GB card (RTX 3090, 4090, A10G). It does not fit a 16 GB T4."
        for (const char* m : {"rtx-4090", "rtx-3090", "a10g"})
            QVERIFY2(verdict("llama-2-7b", Method::Lora, m).fit != Fit::No, m);
        QCOMPARE(verdict("llama-2-7b", Method::Lora, "t4").fit, Fit::No);
        // QLoRA: "fits a free Colab T4, a Kaggle P100, or a 12 GB consumer card".
        for (const char* m : {"t4", "p100", "rtx-3060-12gb"}) {
            const auto v = verdict("llama-2-7b", Method::Qlora, m);
            QVERIFY2(v.fit == Fit::Fits, m);
            QVERIFY(v.needed_bytes > 5e9 && v.needed_bytes < 11e9);   // "seven to ten gigabytes"
        }
        // A full fine-tune of a 7B "does not fit on one 80 GB card".
        QCOMPARE(verdict("llama-2-7b", Method::Full, "a100-80gb").fit, Fit::No);
        QCOMPARE(verdict("llama-2-7b", Method::Full, "h100").fit, Fit::No);
    }

    void fourteenBillionLoraDoesNotFit24GB() {
        QCOMPARE(verdict("qwen2.5-14b", Method::Lora, "rtx-4090").fit, Fit::No);
        QVERIFY(verdict("qwen2.5-14b", Method::Lora, "mac-studio-m3-ultra-96gb").fit == Fit::Fits);
        QVERIFY(verdict("qwen2.5-32b", Method::Qlora, "mac-studio-m3-ultra-96gb").fit == Fit::Fits);
        QVERIFY(verdict("llama-3.1-70b", Method::Qlora, "mac-studio-m3-ultra-96gb").fit != Fit::No);
        QCOMPARE(verdict("llama-3.1-70b", Method::Qlora, "rtx-4090").fit, Fit::No);
    }

    void qloraScaling() {
        // "70B → about 40 GB → needs one 48 GB or 80 GB card".
        QCOMPARE(verdict("llama-3.1-70b", Method::Qlora, "a100-40gb").fit, Fit::No);
        QVERIFY(verdict("llama-3.1-70b", Method::Qlora, "a100-80gb").fit == Fit::Fits);
        // "7-8B → fits 16 GB".
        QVERIFY(verdict("llama-3.1-8b", Method::Qlora, "t4").fit != Fit::No);
    }

    void whichMachineTrainsWhat() {
        const Table t = table("lesson-machines");
        const auto& lib = test::library();
        const std::string rtx = lib.machine("rtx-4090").name, mac = lib.machine("mac-studio-m3-ultra-96gb").name;
        const std::vector<std::string> winners = {rtx, mac, mac, "Tie", rtx};
        QCOMPARE(t.rows.size(), winners.size());
        for (size_t i = 0; i < winners.size(); ++i)
            QVERIFY2(t.rows[i][1].text == winners[i], (t.rows[i][0].text + " → " + t.rows[i][1].text).c_str());
        QVERIFY(t.rows[0][2].text.find("faster") != std::string::npos);
        QVERIFY(t.rows[2][2].text.find("only machine with the memory") != std::string::npos);
    }

    void exportsAsMarkdownAndCsv() {
        const Table t = table("lesson-sizes");
        const std::string md = t.to_markdown();
        QVERIFY(md.find("| Model size | Full fine-tune | LoRA (16-bit) | QLoRA (4-bit) |") != std::string::npos);
        const std::string csv = t.to_csv();
        QCOMPARE(std::count(csv.begin(), csv.end(), '\n'), 7L);
        // CSV carries exact bytes, the Markdown the rounded figures.
        QVERIFY(csv.find(std::to_string(std::llround(*t.rows[2][1].value))) != std::string::npos);
        QVERIFY(md.find(t.rows[2][1].text) != std::string::npos);
    }

    // Issue 34, class 20: a data set of int64-max examples made a run of ~1e50 s, which the CSV wrote as
    // -9223372036854775808 (an int64 cast). Every magnitude is written as the number it is, never cut.
    void csvNumbersNeverOverflow() {
        Table t;
        t.headers = {"what", "value"};
        const double huge_seconds = 7.8e56 / 8236.8, beyond_exact = 9007199254740993.0 * 4, big_fraction = 123456789.125;
        for (double v : {huge_seconds, -huge_seconds, beyond_exact, big_fraction, 42.0, 9007199254740992.0,
                         std::numeric_limits<double>::infinity()})
            t.rows.push_back({{"x", {}, {}}, {"shown", v, {}}});
        const std::string csv = t.to_csv(true);
        std::vector<std::string> cells;
        for (size_t at = csv.find('\n') + 1; at < csv.size();) {
            const size_t end = csv.find('\n', at);
            cells.push_back(csv.substr(csv.find(',', at) + 1, end - csv.find(',', at) - 1));
            at = end + 1;
        }
        QCOMPARE(cells.size(), size_t(7));
        QVERIFY2(csv.find("-9223372036854775808") == std::string::npos, csv.c_str());
        QVERIFY(std::fabs(std::stod(cells[0]) / huge_seconds - 1) < 1e-6);
        QVERIFY(std::fabs(std::stod(cells[1]) / -huge_seconds - 1) < 1e-6);
        QVERIFY(std::fabs(std::stod(cells[2]) / beyond_exact - 1) < 1e-6);
        QCOMPARE(cells[3], std::string("123456789.125"));
        QCOMPARE(cells[4], std::string("42"));
        QCOMPARE(cells[5], std::string("9007199254740992"));
        QCOMPARE(cells[6], std::string(""));   // no number rather than "inf"
    }
};

QTEST_APPLESS_MAIN(LessonsTest)
#include "test_lessons.moc"
