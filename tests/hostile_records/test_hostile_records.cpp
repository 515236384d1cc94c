// Issue 34, classes 1, 13 and 14 (core and command line): one bounded, typed reader of run
// records. Every malformed, special-file or oversized record is listed (unreadable with the
// reason, or with what could be read), never fatal, never a hang; records stay small.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <optional>
#include <sstream>

#include "../core/cli_result.hpp"
#include "../reliability/fault_support.hpp"
#include "hostile_store.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/run_record.hpp"

namespace fs = std::filesystem;
using namespace wingspan;
using wingspan::test::ScopedEnv;
using wingspan::test::write_file;

namespace {

test::CliResult run_cli(std::vector<std::string> args) {
    args.push_back("--profiles");
    args.push_back(WINGSPAN_TEST_PROFILES_DIR);
    return test::run_cli(args);
}

std::string line_of(const std::string& text, const std::string& name) {
    const size_t at = text.find(name);
    if (at == std::string::npos) return {};
    return text.substr(at, text.find('\n', at) - at);
}

}  // namespace

class HostileRecords : public QObject {
    Q_OBJECT
private slots:
    // Class 1: every reader (the listing the window uses, load for `runs` and `calibrate`)
    // answers each hostile record without throwing anything but InputError, within seconds.
    void everyMalformedRecordIsNamedNeverFatal() {
        QTemporaryDir tmp;
        const fs::path runs = fs::path(tmp.path().toStdString()) / "runs";
        const auto expect = test::make_hostile_store(runs);
        QElapsedTimer clock;
        clock.start();
        for (const auto& [name, readable] : expect) {
            const RunListing l = RunStore::read_listing(runs / name);
            QVERIFY2(l.readable() == readable, (name + ": " + l.problem).c_str());
            if (!readable) QVERIFY2(l.problem.find(name) != std::string::npos, l.problem.c_str());   // names the run
            bool loaded = false;
            try {
                (void)RunStore::load(runs / name);
                loaded = true;
            } catch (const InputError& e) {
                QVERIFY2(!readable, (name + " should load: " + e.what()).c_str());
            }
            QVERIFY2(loaded == readable, name.c_str());
        }
        QVERIFY2(clock.elapsed() < 10000, "reading the hostile store took too long");
        // The reasons a person can act on.
        const RunListing folder = RunStore::read_listing(runs / "20250101-000010-result-folder");
        QVERIFY2(folder.problem.find("result.json is a folder") != std::string::npos, folder.problem.c_str());
        const RunListing fifo = RunStore::read_listing(runs / "20250101-000011-plan-fifo");
        QVERIFY2(fifo.problem.find("named pipe") != std::string::npos, fifo.problem.c_str());
        const RunListing zero = RunStore::read_listing(runs / "20250101-000012-result-devzero");
        QVERIFY2(zero.problem.find("a device") != std::string::npos, zero.problem.c_str());
        const RunListing status = RunStore::read_listing(runs / "20250101-000001-status-number");
        QVERIFY2(status.problem.find("\"status\" must be") != std::string::npos, status.problem.c_str());
        // What could be read is kept: a bad result.json still shows the plan's settings.
        QVERIFY(status.plan.is_object() && status.plan.contains("options"));
    }

    // Classes 1 and 13: `wingspan runs` lists every folder (named pipes and /dev/zero as
    // events.jsonl included) and `calibrate` uses the readable ones.
    void runsAndCalibrateListEveryRecord() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const ScopedEnv data("XDG_DATA_HOME", (root / "data").string());
        const ScopedEnv config("XDG_CONFIG_HOME", (root / "config").string());
        const fs::path runs = root / "data" / "wingspan" / "runs";
        const auto expect = test::make_hostile_store(runs);
        QElapsedTimer clock;
        clock.start();
        test::CliResult r = run_cli({"runs"});
        QCOMPARE(r.code, 0);
        QVERIFY2(clock.elapsed() < 10000, "wingspan runs took too long");
        for (const auto& [name, readable] : expect) {
            const std::string line = line_of(r.out, name);
            QVERIFY2(!line.empty(), (name + " is not listed:\n" + r.out).c_str());
            QVERIFY2((line.find("unreadable: ") != std::string::npos) == !readable, line.c_str());
        }
        QVERIFY2(line_of(r.out, "events-fifo").find("named pipe") != std::string::npos, r.out.c_str());
        QVERIFY2(line_of(r.out, "events-devzero").find("a device") != std::string::npos, r.out.c_str());
        // Class 14: the 3 MB result.json lists as completed, with a note of what was read.
        const std::string big = line_of(r.out, "result-3mb");
        QVERIFY2(big.find("completed") != std::string::npos && big.find("partly read") != std::string::npos, big.c_str());
        const std::string long_line = line_of(r.out, "events-long-line");
        QVERIFY2(long_line.find("longer than") != std::string::npos, long_line.c_str());

        std::vector<std::string> args{"calibrate"};
        for (const auto& [name, readable] : expect) args.push_back((runs / name).string());
        r = run_cli(args);
        QVERIFY2(r.code == 0, (r.out + r.err).c_str());
        // good, result-3mb, events-long-line, plan-odd-options, model-devzero and no-result (it has no exit but
        // its measurements: calibrate takes every run with measurements).
        QVERIFY2(r.out.find("from 6 runs") != std::string::npos, (r.out + r.err).c_str());
        QVERIFY2(r.err.find("events-fifo") != std::string::npos && r.err.find("(skipped)") != std::string::npos,
                 r.err.c_str());
    }

    // Class 14: a record stays small whatever the run did; the checkpoints it keeps are the
    // newest, and it says how many there were.
    void recordsStaySmall() {
        QTemporaryDir tmp;
        const fs::path run = fs::path(tmp.path().toStdString()) / "20250101-000000-long";
        fs::create_directories(run);
        write_file(run / "plan.json", "{}");
        RunRecord rec;
        const std::string long_path = "/data/" + std::string(200, 'p') + "/checkpoint-";
        for (int i = 0; i < 50'000; ++i)
            rec.ingest(*protocol::parse_line(protocol::encode(protocol::EventType::Checkpoint, i,
                                                              {{"path", long_path + std::to_string(i)}}))
                            .event);
        rec.ingest(*protocol::parse_line(
                        protocol::encode(protocol::EventType::Error, 1, {{"code", "x"}, {"message", std::string(100'000, 'm')}}))
                        .event);
        QVERIFY(rec.checkpoints().size() < 2 * RunRecord::kMaxCheckpoints);
        QCOMPARE(rec.checkpoints().back(), long_path + "49999");
        QCOMPARE(rec.checkpoint_events(), std::int64_t(50'000));
        rec.finish(1);
        RunStore::write_result(run, rec);
        QVERIFY2(fs::file_size(run / "result.json") < kMaxRunResultBytes / 4,
                 std::to_string(fs::file_size(run / "result.json")).c_str());
        const auto j = read_untrusted_json_file(run / "result.json");
        QCOMPARE(j["checkpoints"].size(), RunStore::kMaxResultCheckpoints);
        QCOMPARE(j["checkpoints"].back().get<std::string>(), long_path + "49999");
        QCOMPARE(j["checkpoints_total"].get<std::int64_t>(), std::int64_t(50'000));
        const RunListing l = RunStore::read_listing(run);
        QVERIFY2(l.readable() && l.result && l.result->note.empty(), l.problem.c_str());
    }

    // The bounded line reader every events.jsonl reader shares: lines across blocks, long
    // lines skipped and counted, a cap on the bytes read, special files refused.
    void lineReaderIsBounded() {
        QTemporaryDir tmp;
        const fs::path f = fs::path(tmp.path().toStdString()) / "lines";
        std::string text;
        for (int i = 0; i < 3000; ++i) text += std::string(1000, char('a' + i % 26)) + "\n";   // 3 MB, spans blocks
        text += std::string(3000, 'L') + "\n" + "last";
        write_file(f, text);
        std::vector<size_t> sizes;
        LineReadStats s = for_each_line_of_regular_file(f, 1ull << 30, 2000, [&](std::string_view l) { sizes.push_back(l.size()); });
        QCOMPARE(s.lines, std::uint64_t(3001));
        QCOMPARE(s.long_lines, std::uint64_t(1));
        QVERIFY(!s.truncated);
        QCOMPARE(sizes.back(), size_t(4));   // "last", without a newline
        for (size_t i = 0; i + 1 < sizes.size(); ++i) QCOMPARE(sizes[i], size_t(1000));
        s = for_each_line_of_regular_file(f, 10'000, 2000, [](std::string_view) {});
        QVERIFY(s.truncated);
        QCOMPARE(s.lines, std::uint64_t(9));
        s = for_each_line_of_regular_file(f.string() + "-missing", 100, 100, [](std::string_view) {}, true);
        QCOMPARE(s.lines, std::uint64_t(0));
        QVERIFY_THROWS_EXCEPTION(InputError, for_each_line_of_regular_file("/dev/zero", 100, 100, [](std::string_view) {}));
        QVERIFY_THROWS_EXCEPTION(InputError, for_each_line_of_regular_file(tmp.path().toStdString(), 100, 100,
                                                                         [](std::string_view) {}));
        bool cut = false;
        QCOMPARE(read_regular_file_tail(f, 4, &cut), std::string("last"));
        QVERIFY(cut);
    }
};

QTEST_GUILESS_MAIN(HostileRecords)
#include "test_hostile_records.moc"
