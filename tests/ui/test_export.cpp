// Exports: PNG/SVG/PDF of the exact requested size, CSV with core's exact numbers, Markdown as
// the lessons write it, the course pack, and the headless `wingspan export` command (in
// process and as the real program without a display).
#include <QtTest>

#include <QFile>
#include <QGuiApplication>
#include <QImage>
#include <QImageReader>
#include <QProcess>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QTextStream>

#include <fstream>

#include "wingspan/ui/export.hpp"

using namespace wingspan;
using namespace wingspan::ui;

namespace {

const ProfileLibrary& library() {
    static const ProfileLibrary lib = [] {
        ProfileLibrary l = ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
        l.add_machine(detect_this_machine());
        return l;
    }();
    return lib;
}

QByteArray read_all(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

bool has_colour(const QImage& img, QColor want) {
    for (int y = 0; y < img.height(); y += 2)
        for (int x = 0; x < img.width(); x += 2)
            if (img.pixelColor(x, y).rgb() == want.rgb()) return true;
    return false;
}

}  // namespace

class ExportTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir;
    Evaluation eval;
    ChartData chart;

private slots:
    void initTestCase() {
        QVERIFY(dir.isValid());
        eval = evaluate_plan(library(), Plan::lesson_default());
        QVERIFY(eval.ok());
        chart = machines_chart(eval, ByteUnit::GB);
        QCOMPARE(int(chart.bars.size()), 6);
    }

    void png() {
        const QString path = dir.filePath("chart.png");
        ImageOptions o;
        o.width = 1200;
        o.height = 700;
        o.dpi = 192;
        QString error;
        QVERIFY2(export_chart(chart, path, o, &error), qPrintable(error));
        QImageReader reader(path);
        QCOMPARE(QByteArray(reader.format()), QByteArray("png"));
        const QImage img = reader.read();
        QCOMPARE(img.size(), QSize(1200, 700));
        QCOMPARE(qRound(img.dotsPerMeterX() * 0.0254), 192);
        // The fixed component colours are there: frozen weights, and the white background.
        QVERIFY(has_colour(img, QColor("#0072B2")));
        QCOMPARE(img.pixelColor(2, 2).rgb(), QColor("#ffffff").rgb());
        // Dark exports have a dark background.
        o.dark = true;
        const QImage dark = render_chart(chart, o);
        QVERIFY(dark.pixelColor(2, 2).lightness() < 60);
    }

    void svg() {
        const QString path = dir.filePath("chart.svg");
        ImageOptions o;
        o.width = 1600;
        o.height = 900;
        QVERIFY(export_chart(chart, path, o));
        QSvgRenderer r(path);
        QVERIFY(r.isValid());
        QCOMPARE(r.viewBox(), QRect(0, 0, 1600, 900));
        const QByteArray text = read_all(path);
        QVERIFY(text.startsWith("<?xml"));
        QVERIFY(text.contains("RTX 4090"));
        QVERIFY(text.contains("#0072b2") || text.contains("#0072B2"));
    }

    void pdf() {
        const QString path = dir.filePath("chart.pdf");
        ImageOptions o;
        o.width = 1600;
        o.height = 900;
        o.dpi = 144;
        QVERIFY(export_chart(chart, path, o));
        const QByteArray pdf = read_all(path);
        QVERIFY(pdf.startsWith("%PDF-"));
        QVERIFY(pdf.size() > 2000);
        // 1600 × 900 px at 144 DPI: an 800 × 450 pt page.
        QVERIFY(QRegularExpression(R"(/MediaBox \[0 0 800(\.0+)? 450(\.0+)?\])").match(QString::fromLatin1(pdf)).hasMatch());
    }

    void badRequests() {
        QString error;
        QVERIFY(!export_chart(chart, dir.filePath("chart.bmp"), ImageOptions{}, &error));
        QVERIFY(error.contains("png"));
        ImageOptions tiny;
        tiny.width = 4;
        QVERIFY(!export_chart(chart, dir.filePath("tiny.png"), tiny, &error));
        QVERIFY(!export_chart(chart, "/nonexistent-dir/x.png", ImageOptions{}, &error));
        QVERIFY(!export_table(Table{}, dir.filePath("t.xlsx"), &error));
    }

    void chartCsvHasCoresExactBytes() {
        const QString path = dir.filePath("memory.csv");
        QVERIFY(export_table(chart_table(chart), path));
        const QStringList lines = QString::fromUtf8(read_all(path)).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 7);
        QVERIFY(lines[0].startsWith("Bar,Frozen weights (bytes)"));
        QVERIFY(lines[0].endsWith("Total (bytes),Usable (bytes),Margin (bytes),Verdict"));
        const QStringList r4090 = lines[1].split(',');
        QCOMPARE(r4090[0], QString("RTX 4090"));
        QCOMPARE(r4090[1].toLongLong(), eval.verdicts[0].estimate.components.at(Component::FrozenWeights));
        QCOMPARE(r4090[r4090.size() - 4].toLongLong(), eval.verdicts[0].needed_bytes);
        QCOMPARE(r4090.last(), QString("fits"));
        QVERIFY(lines[3].startsWith("T4,") && lines[3].endsWith(",no"));
    }

    void tablesAsCsvAndMarkdown() {
        const Plan plan = Plan::lesson_default();
        const Table t = machine_table(library(), plan, eval, ByteUnit::GB);
        QVERIFY(export_table(t, dir.filePath("machines.csv")));
        QVERIFY(export_table(t, dir.filePath("machines.md")));
        const QString csv = QString::fromUtf8(read_all(dir.filePath("machines.csv")));
        QVERIFY(csv.startsWith("Machine,Framework,Needs,Usable,Verdict,Margin,Max batch,Max sequence,Tokens/s,Time,Cost"));
        QCOMPARE(csv.count('\n'), 7);
        const QString md = QString::fromUtf8(read_all(dir.filePath("machines.md")));
        QVERIFY(md.contains("| Machine | Framework |"));
        QVERIFY(md.contains("| RTX 4090 |"));
        // The lesson's size table, as core builds it.
        const Table sizes = build_table(library(), library().scenario("lesson-sizes"), ByteUnit::GB);
        QVERIFY(export_table(sizes, dir.filePath("sizes.md")));
        QCOMPARE(read_all(dir.filePath("sizes.md")).toStdString(), sizes.to_markdown());
    }

    void scenarioCharts() {
        const auto charts = scenario_charts(library(), library().scenario("lesson-sizes"), ByteUnit::GB);
        QCOMPARE(int(charts.size()), 1);
        const ChartData& c = charts.front().second;
        QCOMPARE(int(c.bars.size()), 18);   // 6 sizes × 3 methods
        QCOMPARE(int(c.lines.size()), 2);   // the lesson's two machines
        const auto grid = scenario_charts(library(), library().scenario("lesson-7b-fit"), ByteUnit::GB);
        QVERIFY(grid.size() >= 2);
        for (const auto& [name, chart] : grid) QVERIFY(!chart.bars.empty());
    }

    // Issue 32, item 7: `export --scenario all` charts are slide-ready: no text elided inside the
    // image (a file has no tooltip), checked with the same layout code that paints the PNG; the
    // cut-at-the-top notice names a control that exists; every legend entry has its own colour.
    void scenarioExportsShowEveryTextWhole() {
        int charts = 0, serving = 0;
        for (const auto& [id, scenario] : library().scenarios())
            for (const auto& [name, c] : scenario_charts(library(), scenario, ByteUnit::GB)) {
                ++charts;
                // Item 7: no text elided and no text over another ("24.3 GB" over the "RTX 4090"
                // ceiling's name), at `export`'s default size and the course pack's 800×450.
                ImageOptions pack;
                pack.width = 800;
                pack.height = 450;
                pack.dpi = 96;   // as the course pack writes them
                for (const ImageOptions& o : {ImageOptions{}, pack}) {
                    const QStringList cut = chart_cut_texts(c, o);
                    QVERIFY2(cut.isEmpty(), qPrintable(QString::fromStdString(id) + " / " + name + " at " +
                                                       QString::number(o.width) + " px: cut: " + cut.join(" | ")));
                    const QStringList over = chart_overlapping_texts(c, o);
                    QVERIFY2(over.isEmpty(), qPrintable(QString::fromStdString(id) + " / " + name + " at " +
                                                        QString::number(o.width) + " px: " + over.join("; ")));
                }
                QVERIFY2(!c.subtitle.contains("View ▸") && !c.footnote.contains("View ▸"), qPrintable(name));
                // A serving chart's footer speaks of serving, not of a training step.
                if (c.subtitle.contains(" · Serve")) {
                    ++serving;
                    QVERIFY2(c.footnote.contains("peak of serving") && !c.footnote.contains("training step"),
                             qPrintable(name + ": " + c.footnote));
                }
                // Distinct colours per legend entry (segments of different components).
                std::map<QRgb, QString> colour_of;
                for (const auto& b : c.bars)
                    for (const auto& seg : b.segments) {
                        if (!seg.component) continue;
                        const QRgb rgb = component_qcolor(*seg.component).rgb();
                        auto [it, added] = colour_of.emplace(rgb, seg.label);
                        QVERIFY2(added || it->second == seg.label,
                                 qPrintable(name + ": '" + seg.label + "' and '" + it->second + "' share a colour"));
                    }
            }
        QVERIFY(charts >= 6);
        QVERIFY(serving >= 2);   // lesson-machines: 70B served in 4-bit, serving afterwards
    }

    void coursePack() {
        const QString out = dir.filePath("pack");
        ImageOptions o;
        o.width = 800;
        o.height = 450;
        o.dpi = 96;
        const ExportResult r = export_course_pack(library(), Plan::lesson_default(), out, {"png", "csv", "md"}, o, ByteUnit::GB);
        QVERIFY2(r.ok(), qPrintable(r.errors.join("\n")));
        QVERIFY(QFile::exists(out + "/index.md"));
        QVERIFY(QFile::exists(out + "/lesson-sizes.png"));
        QVERIFY(QFile::exists(out + "/plan-machines.png"));
        QVERIFY(QFile::exists(out + "/plan-machines.csv"));
        for (const auto& [id, s] : library().scenarios()) {
            if (id.rfind("lesson-", 0) != 0) continue;
            const QString csv = out + "/" + QString::fromStdString(id) + ".csv";
            QVERIFY2(QFile::exists(csv), qPrintable(csv));
            QCOMPARE(read_all(csv).toStdString(), build_table(library(), s, ByteUnit::GB).to_csv());
        }
        const QImage img(out + "/lesson-sizes.png");
        QCOMPARE(img.size(), QSize(800, 450));
        const QString index = QString::fromUtf8(read_all(out + "/index.md"));
        QVERIFY(index.contains("lesson-sizes.csv"));
    }

    void headlessCommandInProcess() {
        const QString plan_path = dir.filePath("lesson.wingspan.json");
        // "This machine" is measured afresh by each library; leave it out so pixels can match.
        Plan plan = Plan::lesson_default();
        plan.machines.pop_back();
        write_plan_file(plan, plan_path.toStdString());
        QString out_text, err_text;
        QTextStream out(&out_text), err(&err_text);
        const QString out_dir = dir.filePath("cmd");
        const int code = run_export_command({"--plan", plan_path, "--out", out_dir, "--format", "png,svg,pdf,csv",
                                             "--width", "1000", "--height", "600", "--profiles", WINGSPAN_TEST_PROFILES_DIR},
                                            out, err, QString());
        QVERIFY2(code == 0, qPrintable(err_text));
        for (const char* f : {"lesson-machines.png", "lesson-machines.svg", "lesson-machines.pdf", "lesson-machines.csv",
                              "lesson-memory.csv", "lesson-methods.png", "lesson-sizes.png"})
            QVERIFY2(QFile::exists(out_dir + "/" + f), f);
        QCOMPARE(QImage(out_dir + "/lesson-machines.png").size(), QSize(1000, 600));
        // The same chart as the window: identical pixels from the same ChartData.
        ImageOptions o;
        o.width = 1000;
        o.height = 600;
        const ChartData same = machines_chart(evaluate_plan(library(), plan), ByteUnit::GB);
        QVERIFY(QImage(out_dir + "/lesson-machines.png").convertToFormat(QImage::Format_ARGB32) ==
                render_chart(same, o).convertToFormat(QImage::Format_ARGB32));

        QString e2;
        QTextStream err2(&e2);
        QCOMPARE(run_export_command({"--scenario", "no-such", "--out", out_dir, "--profiles", WINGSPAN_TEST_PROFILES_DIR},
                                    out, err2, QString()),
                 2);
        QVERIFY(e2.contains("no-such"));
        QCOMPARE(run_export_command({"--plan", plan_path}, out, err2, QString()), 2);   // no --out
        QCOMPARE(run_export_command({"--scenario", "lesson-sizes", "--out", out_dir, "--format", "gif"}, out, err2, QString()), 2);
    }

    void realProgramWithoutDisplay() {
        const QString exe = QString(WINGSPAN_TEST_BIN_DIR) + "/wingspan";
        if (!QFile::exists(exe)) QSKIP("the wingspan program is not built");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("DISPLAY");
        env.remove("WAYLAND_DISPLAY");
        env.remove("QT_QPA_PLATFORM");
        env.insert("WINGSPAN_PROFILES", WINGSPAN_TEST_PROFILES_DIR);
        QProcess p;
        p.setProcessEnvironment(env);
        const QString out_dir = dir.filePath("real");
        p.start(exe, {"export", "--scenario", "lesson-7b-fit", "--out", out_dir, "--format", "png,csv"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QVERIFY(QFile::exists(out_dir + "/lesson-7b-fit.csv"));
        QVERIFY(!QDir(out_dir).entryList({"lesson-7b-fit-*.png"}).isEmpty());
        // Command-line commands never start Qt: they work with no display at all.
        p.start(exe, {"table", "--scenario", "lesson-sizes"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(p.readAllStandardOutput().contains("| 8B"));
        // And the window refuses politely instead of crashing.
        p.start(exe, {});
        QVERIFY(p.waitForFinished(30000));
        QVERIFY(p.exitCode() != 0);
        QVERIFY(p.readAllStandardError().contains("no display"));
    }
};

QTEST_MAIN(ExportTest)
#include "test_export.moc"
