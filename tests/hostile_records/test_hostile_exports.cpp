// Issue 34, the window's side: its run history with hostile records (class 1), exports on a
// full disk (class 6), plan files with long lists (class 15) and machine-readable numbers
// under a comma-decimal locale (class 17). In-process where the unit is enough, and through
// the real `wingspan` program where the process's own set-up is what is tested.
#include <limits>
#include <QApplication>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include <sys/resource.h>
#include <unistd.h>

#include <clocale>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../reliability/fault_support.hpp"
#include "hostile_store.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/scenario.hpp"
#include "wingspan/units.hpp"
#include "wingspan/ui/export.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/ui/run_panel.hpp"

namespace fs = std::filesystem;
using namespace wingspan;
using namespace wingspan::ui;
using wingspan::test::with_file_size_limit;

namespace {

const QString kExe = QString(WINGSPAN_TEST_BIN_DIR) + "/wingspan";

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<missing>");
}

const ProfileLibrary& library() {
    static const ProfileLibrary lib = ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
    return lib;
}

std::string first_lesson() {
    for (const auto& [id, s] : library().scenarios())
        if (id.rfind("lesson-", 0) == 0 && s.value("kind", std::string()) == "size_table") return id;
    return library().scenarios().begin()->first;
}

// A de_DE.UTF-8 locale (decimal comma) for LOCPATH: the one ctest's fixture built (the suite
// runs in it), else one compiled into `dir` with localedef; empty when neither is possible.
QString build_comma_locale(const QString& dir) {
    if (const char* given = std::getenv("LOCPATH"); given && QFileInfo::exists(QString(given) + "/de_DE.UTF-8"))
        return given;
    QProcess p;
    p.start("localedef", {"-i", "de_DE", "-f", "UTF-8", dir + "/de_DE.UTF-8"});
    if (!p.waitForFinished(60000) || !QFileInfo::exists(dir + "/de_DE.UTF-8")) return {};
    return dir;
}

QStringList temporaries_in(const QString& dir) {
    QStringList found;
    QDirIterator it(dir, QDir::Files | QDir::Hidden);
    while (it.hasNext()) {
        const QString name = QFileInfo(it.next()).fileName();
        if (name.contains(".tmp-")) found << name;
    }
    return found;
}

}  // namespace

class HostileExports : public QObject {
    Q_OBJECT
private slots:
    // Class 1: the window's history lists every hostile record (unreadable with the reason as
    // tooltip), opens none of the bad ones fatally, and the real window starts over them.
    void windowHistoryListsHostileRecords() {
        QTemporaryDir tmp;
        const fs::path runs = fs::path(tmp.path().toStdString()) / "data" / "wingspan" / "runs";
        const auto expect = test::make_hostile_store(runs);
        RunPanel panel(kExe, &library());
        panel.setStoreRoot(runs);
        QElapsedTimer clock;
        clock.start();
        panel.refreshHistory();
        const RunHistoryModel* history = panel.historyModel();
        QCOMPARE(history->rowCount(), int(expect.size()));
        for (int i = 0; i < history->rowCount(); ++i) {
            const std::string name = history->index(i, RunHistoryModel::Run).data().toString().toStdString();
            const QString status = history->index(i, RunHistoryModel::Status).data().toString();
            QVERIFY2(expect.count(name), name.c_str());
            const bool unreadable = status == "unreadable";
            QVERIFY2(unreadable == !expect.at(name), (name + ": " + status.toStdString()).c_str());
            if (unreadable) QVERIFY2(!history->index(i, RunHistoryModel::Status).data(Qt::ToolTipRole).toString().isEmpty(), name.c_str());
            // Opening it: the run, or a message; never an abort or a hang.
            QString error;
            if (!panel.openRun(runs / name, &error)) QVERIFY2(!error.isEmpty(), name.c_str());
        }
        const int big = history->rowOf(runs / "20250101-000020-result-3mb");
        QVERIFY(big >= 0);
        QCOMPARE(history->index(big, RunHistoryModel::Status).data().toString(), QString("completed"));   // class 14: listed with what could be read
        QVERIFY2(clock.elapsed() < 20000, "listing and opening the hostile history took too long");

        // The program itself: `wingspan --screenshot` with this store starts, draws and exits 0.
        if (!QFile::exists(kExe)) QSKIP("the wingspan program is not built");
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_DATA_HOME", tmp.filePath("data"));
        env.insert("XDG_CONFIG_HOME", tmp.filePath("config"));
        env.insert("QT_QPA_PLATFORM", "offscreen");
        p.setProcessEnvironment(env);
        p.start(kExe, {"--screenshot", tmp.filePath("shot.png")});
        QVERIFY2(p.waitForFinished(60000), "the window did not finish over the hostile run store");
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
        QVERIFY(QFileInfo(tmp.filePath("shot.png")).size() > 1000);
    }

    // Class 6, in-process: each format's failed write (a "full disk": writes limited to a few
    // bytes) answers false with the reason, keeps the old file whole and leaves no temporary.
    void everyExportFormatIsAtomic() {
        QTemporaryDir tmp;
        const Plan plan = Plan::lesson_default();
        const Evaluation eval = evaluate_plan(library(), plan);
        const ChartData chart = machines_chart(eval, ByteUnit::GB);
        const Table table = chart_table(chart);
        ImageOptions o;
        o.width = 400;
        o.height = 300;
        for (const QString suffix : {"png", "svg", "pdf", "csv", "md"}) {
            const QString path = tmp.filePath("chart." + suffix);
            const bool image = suffix == "png" || suffix == "svg" || suffix == "pdf";
            QString error;
            // A first export succeeds and is whole.
            QVERIFY2(image ? export_chart(chart, path, o, &error) : export_table(table, path, &error), qPrintable(error));
            const QByteArray old = read_all(path);
            QVERIFY2(old.size() > 64, qPrintable(suffix));
            bool ok = true;
            with_file_size_limit(16, [&] {
                ok = image ? export_chart(chart, path, o, &error) : export_table(table, path, &error);
            });
            QVERIFY2(!ok, qPrintable(suffix + " claimed success on a full disk"));
            QVERIFY2(error.contains("cannot write") || error.contains("File too large"), qPrintable(error));
            QCOMPARE(read_all(path), old);
            QVERIFY2(temporaries_in(tmp.path()).isEmpty(), qPrintable(temporaries_in(tmp.path()).join(", ")));
        }
        // The which-machine grid's exports go through the same writer.
        QWidget w;
        w.resize(200, 100);
        for (const QString suffix : {"png", "svg", "pdf"}) {
            const QString path = tmp.filePath("grid." + suffix);
            QString error;
            QVERIFY2(export_widget(&w, path, o, &error), qPrintable(error));
            const QByteArray old = read_all(path);
            bool ok = true;
            with_file_size_limit(16, [&] { ok = export_widget(&w, path, o, &error); });
            QVERIFY(!ok);
            QCOMPARE(read_all(path), old);
        }
    }

    // Class 6, the program: `wingspan export` on a full disk exits 1, lists no file as
    // written and leaves every earlier file as it was.
    void exportCommandOnAFullDiskFailsAndKeepsOldFiles() {
        if (!QFile::exists(kExe)) QSKIP("the wingspan program is not built");
        QTemporaryDir tmp;
        const QString out = tmp.filePath("out");
        const QStringList args{"export", "--scenario", QString::fromStdString(first_lesson()), "--out", out,
                               "--format", "png,svg,pdf,csv,md", "--width", "400", "--height", "300"};
        QProcess first;
        first.start(kExe, args);
        QVERIFY(first.waitForFinished(60000));
        QCOMPARE(first.exitCode(), 0);
        std::map<QString, QByteArray> before;
        for (const QString& f : QDir(out).entryList(QDir::Files)) before[f] = read_all(QDir(out).filePath(f));
        QVERIFY(before.size() >= 5);
        QProcess full;
        full.setChildProcessModifier([] {
            ::signal(SIGXFSZ, SIG_IGN);
            rlimit lim{64, 64};
            ::setrlimit(RLIMIT_FSIZE, &lim);
        });
        full.start(kExe, args);
        QVERIFY(full.waitForFinished(60000));
        const QString err = full.readAllStandardError();
        QCOMPARE(full.exitCode(), 1);
        QVERIFY2(err.contains("File too large") || err.contains("cannot write"), qPrintable(err));
        const QString listed = full.readAllStandardOutput();
        for (const auto& [name, bytes] : before) {
            QCOMPARE(read_all(QDir(out).filePath(name)), bytes);
            QVERIFY2(!listed.contains(name) || bytes.size() <= 64, qPrintable(name + " listed as written"));
        }
        QVERIFY2(temporaries_in(out).isEmpty(), qPrintable(temporaries_in(out).join(", ")));
    }

    // Class 20: a data set of int64-max examples × tokens × epochs (≈ 7.8e56 tokens) exported its time and cost as
    // -9223372036854775808 in the CSV and cut durations in the Markdown. Such a plan is refused, naming the product;
    // the largest data set allowed (10^15 tokens) exports whole numbers.
    void hugeDatasetsAreRefusedNotWrapped() {
        QTemporaryDir tmp;
        const QString path = tmp.filePath("huge.wingspan.json");
        nlohmann::json j = Plan::lesson_default().to_json();
        const std::int64_t max = std::numeric_limits<std::int64_t>::max();
        j["dataset"] = {{"examples", max}, {"tokens_per_example", max}, {"epochs", max}};
        std::ofstream(path.toStdString()) << j.dump();
        try {
            (void)read_plan_file(path.toStdString());
            QFAIL("a plan of 7.8e56 tokens was accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("7.85e+56 tokens") != std::string::npos, e.what());
        }
        j["dataset"] = {{"examples", 1'000'000'000}, {"tokens_per_example", 1'000'000}, {"epochs", 1}};
        std::ofstream(path.toStdString()) << j.dump();
        const Plan read = read_plan_file(path.toStdString());
        ImageOptions o;
        const ExportResult r = export_plan(library(), read, tmp.filePath("out"), {"csv"}, o, ByteUnit::GB, "huge");
        QVERIFY2(r.ok(), qPrintable(r.errors.join("\n")));
        QFile csv(QDir(tmp.filePath("out")).filePath("huge-machines.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QByteArray text = csv.readAll();
        QVERIFY2(!text.contains("-92233720368547758"), text.constData());
        const QList<QByteArray> lines = text.trimmed().split('\n');
        QVERIFY(lines.size() >= 2);
        const int time_column = lines[0].split(',').indexOf("Time");
        QVERIFY(time_column > 0);
        for (const QByteArray& line : lines.mid(1)) {   // times of 10^15 tokens: positive numbers, never wrapped
            const QList<QByteArray> cells = line.split(',');
            QVERIFY2(cells.size() > time_column && cells[time_column].toDouble() > 1e9, line.constData());
        }
    }

    // Class 20: an --out path that is not UTF-8. Qt would read it as U+FFFD and write into another folder
    // ("e\uFFFD") while saying so; export refuses it with its bytes shown as a shell word, and writes nothing.
    void nonUtf8PathsAreRefusedNotReplaced() {
        if (!QFile::exists(kExe)) QSKIP("the wingspan program is not built");
        QTemporaryDir tmp;
        QProcess p;   // the path's bytes go through sh: a QStringList argument cannot hold them
        p.setWorkingDirectory(tmp.path());
        p.start("sh", {"-c", "exec \"$0\" export --scenario \"$1\" --format csv --out \"$(printf 'e\\377x')\"", kExe,
                       QString::fromStdString(first_lesson())});
        QVERIFY(p.waitForFinished(60000));
        const QString err = p.readAllStandardError();
        QCOMPARE(p.exitCode(), 2);
        QVERIFY2(err.contains("$'e\\xffx'") && err.contains("not UTF-8"), qPrintable(err));
        QVERIFY2(QDir(tmp.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).isEmpty(),
                 qPrintable(QDir(tmp.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).join(", ")));
    }

    // Class 15: a plan file with a long list is refused at once, with the cap in the message;
    // one at the cap exports in seconds (no quadratic label fitting).
    void planListsAreCapped() {
        QTemporaryDir tmp;
        nlohmann::json j = Plan::lesson_default().to_json();
        j["machines"] = nlohmann::json::array();
        for (int i = 0; i < 20'000; ++i) j["machines"].push_back("machine-" + std::to_string(i));
        const QString path = tmp.filePath("long.wingspan.json");
        std::ofstream(path.toStdString()) << j.dump();
        QElapsedTimer clock;
        clock.start();
        try {
            (void)read_plan_file(path.toStdString());
            QFAIL("a plan with 20,000 machines was accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("at most 256") != std::string::npos, e.what());
        }
        j["machines"] = nlohmann::json::array();
        j["machine_frameworks"] = nlohmann::json::object();
        for (int i = 0; i < 5000; ++i) j["machine_frameworks"]["m" + std::to_string(i)] = "pytorch-cuda";
        std::ofstream(path.toStdString()) << j.dump();
        QVERIFY_THROWS_EXCEPTION(InputError, read_plan_file(path.toStdString()));
        j["machine_frameworks"] = nlohmann::json::object();
        j["machines"] = nlohmann::json::array({std::string(100'000, 'x')});
        std::ofstream(path.toStdString()) << j.dump();
        QVERIFY_THROWS_EXCEPTION(InputError, read_plan_file(path.toStdString()));
        QVERIFY(clock.elapsed() < 2000);

        // At the cap: every bundled machine, repeated up to 256, charted and tabled.
        Plan plan = Plan::lesson_default();
        plan.machines.clear();
        for (size_t i = 0; plan.machines.size() < kMaxPlanMachines; ++i)
            plan.machines.push_back(library().machines()[i % library().machines().size()].id);
        j = plan.to_json();
        std::ofstream(path.toStdString()) << j.dump();
        const Plan read = read_plan_file(path.toStdString());
        QCOMPARE(read.machines.size(), kMaxPlanMachines);
        clock.restart();
        ImageOptions o;
        const ExportResult r = export_plan(library(), read, tmp.filePath("out"), {"png", "csv"}, o, ByteUnit::GB, "cap");
        QVERIFY2(r.ok(), qPrintable(r.errors.join("\n")));
        qInfo("export of a plan with %zu machines: %lld ms", read.machines.size(), (long long)clock.elapsed());
        QVERIFY2(clock.elapsed() < 30000, "a plan at the cap took too long to export");
    }

    // Class 17: under a comma-decimal locale every machine-readable number is written with a
    // point; the locale really is a comma one (the test would bite without the fix).
    void machineReadableNumbersUseTheCLocale() {
        QTemporaryDir tmp;
        const QString locpath = build_comma_locale(tmp.path());
        if (locpath.isEmpty()) QSKIP("localedef cannot build de_DE.UTF-8 here");
        const QByteArray old_locpath = qgetenv("LOCPATH");
        const std::string old_locale = std::setlocale(LC_ALL, nullptr);
        setenv("LOCPATH", locpath.toUtf8().constData(), 1);
        QVERIFY(std::setlocale(LC_ALL, "de_DE.UTF-8"));
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", 1.5);
        QCOMPARE(QByteArray(buf), QByteArray("1,5"));   // what Qt's start-up leaves without the fix
        use_c_locale_for_numbers();
        std::snprintf(buf, sizeof buf, "%.1f", 1.5);
        QCOMPARE(QByteArray(buf), QByteArray("1.5"));
        QVERIFY2(format_bytes(1.5e9).find(',') == std::string::npos, format_bytes(1.5e9).c_str());
        std::ostringstream stream;
        stream << 0.0002;
        QCOMPARE(stream.str(), std::string("0.0002"));
        std::setlocale(LC_ALL, old_locale.c_str());
        if (old_locpath.isEmpty()) unsetenv("LOCPATH");
        else setenv("LOCPATH", old_locpath.constData(), 1);

        // The program, started in that locale: CSV and Markdown numbers with a decimal point.
        if (!QFile::exists(kExe)) QSKIP("the wingspan program is not built");
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("LOCPATH", locpath);
        env.insert("LANG", "de_DE.UTF-8");
        env.insert("LC_ALL", "de_DE.UTF-8");
        p.setProcessEnvironment(env);
        const QString out = tmp.filePath("out");
        const Plan plan = Plan::lesson_default();
        write_plan_file(plan, tmp.filePath("lesson.wingspan.json").toStdString());
        p.start(kExe, {"export", "--plan", tmp.filePath("lesson.wingspan.json"), "--scenario",
                       QString::fromStdString(first_lesson()), "--out", out, "--format", "csv,md"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        int decimals = 0;
        const QRegularExpression quoted_comma(R"("[^"]*\d,(\d{1,2}|\d{4,})(?!\d)[^"]*")");   // "1067,210", "3,1× faster"
        for (const QString& f : QDir(out).entryList(QDir::Files)) {
            const QString text = read_all(QDir(out).filePath(f));
            decimals += int(text.count(QRegularExpression(R"(\d\.\d)")));
            if (f.endsWith(".csv")) QVERIFY2(!text.contains(quoted_comma), qPrintable(f + ":\n" + text.left(2000)));
            // Markdown groups thousands with a comma ("40,400", as the lessons do); a decimal
            // comma shows as one, two or more than three digits after it ("20,8 GB").
            if (f.endsWith(".md"))
                QVERIFY2(!text.contains(QRegularExpression(R"(\d,(\d{1,2}|\d{4,})(?!\d))")), qPrintable(f + ":\n" + text.left(2000)));
        }
        QVERIFY2(decimals > 10, "the exports hold no decimal numbers: the test would not bite");
    }
};

QTEST_MAIN(HostileExports)
#include "test_hostile_exports.moc"
