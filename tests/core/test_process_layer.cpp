// Core's process layer (issue 27, item 3): the bounded line framer every reader of a child's
// output uses, and the stop ladder and exit reporting every supervisor uses.
#include <QtTest>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "wingspan/line_framer.hpp"
#include "wingspan/process_stop.hpp"
#include "wingspan/protocol.hpp"

using namespace wingspan;
using namespace std::chrono_literals;

namespace {

struct Got {
    std::string text;
    bool over_long;
    bool terminated;
    bool operator==(const Got& o) const { return text == o.text && over_long == o.over_long && terminated == o.terminated; }
};

// Feeds `chunks` one after another (and finishes the stream) into a framer of `max` bytes.
struct Framed {
    std::vector<Got> lines;
    std::string overflow;
    int overflow_ends = 0;
    std::size_t most_buffered = 0;
};

Framed frame(const std::vector<std::string>& chunks, std::size_t max, bool finish = true) {
    Framed f;
    LineFramer framer(max);
    const auto line = [&](const FramedLine& l) { f.lines.push_back({std::string(l.text), l.over_long, l.terminated}); };
    for (const auto& c : chunks) {
        framer.feed(c, line, [&](std::string_view rest, bool ends) {
            f.overflow += rest;
            f.overflow_ends += ends ? 1 : 0;
        });
        f.most_buffered = std::max(f.most_buffered, framer.buffered());
    }
    if (finish) framer.finish(line);
    return f;
}

std::vector<Got> whole(std::initializer_list<const char*> texts) {
    std::vector<Got> v;
    for (const char* t : texts) v.push_back({t, false, true});
    return v;
}

}  // namespace

class ProcessLayerTest : public QObject {
    Q_OBJECT
private slots:
    void linesSplitAcrossChunksComeOutWhole() {
        // One byte at a time and all at once frame alike.
        const std::string text = "alpha\nbeta\n\ngamma\n";
        std::vector<std::string> bytes;
        for (char c : text) bytes.emplace_back(1, c);
        QVERIFY(frame(bytes, 64).lines == whole({"alpha", "beta", "", "gamma"}));
        QVERIFY(frame({text}, 64).lines == whole({"alpha", "beta", "", "gamma"}));
        QVERIFY(frame({"al", "pha\nbe", "ta\n"}, 64).lines == whole({"alpha", "beta"}));
    }

    void crlfEndsALineLikeLf() {
        QVERIFY(frame({"one\r\ntwo\r", "\nthree\n"}, 64).lines == whole({"one", "two", "three"}));
        // Only the "\r" right before the newline goes: a progress bar's inner ones stay.
        QVERIFY(frame({"10%\r20%\r\n"}, 64).lines == whole({"10%\r20%"}));
    }

    void partialLastLineIsPassedOnAtTheEnd() {
        const Framed f = frame({"done\nhalf a li", "ne"}, 64);
        QCOMPARE(f.lines.size(), size_t(2));
        QVERIFY(f.lines[1] == (Got{"half a line", false, false}));
        // Not before the end of the stream.
        QCOMPARE(frame({"done\nhalf"}, 64, false).lines.size(), size_t(1));
        // A stream that ends on a newline has no partial line.
        QCOMPARE(frame({"done\n"}, 64).lines.size(), size_t(1));
    }

    void lineOfExactlyTheBoundIsWhole() {
        const std::string eight(8, 'x');
        QVERIFY(frame({eight + "\n"}, 8).lines == whole({"xxxxxxxx"}));
        // Its "\r\n" does not count against the bound, even split between chunks.
        QVERIFY(frame({eight + "\r", "\n"}, 8).lines == whole({"xxxxxxxx"}));
        QVERIFY(frame({eight}, 8).lines == (std::vector<Got>{{eight, false, false}}));
    }

    void lineOneOverTheBoundIsOverLong() {
        const Framed f = frame({std::string(9, 'y') + "\nnext\n"}, 8);
        QCOMPARE(f.lines.size(), size_t(2));
        QVERIFY(f.lines[0] == (Got{std::string(8, 'y'), true, true}));
        QCOMPARE(f.overflow, std::string("y"));
        QCOMPARE(f.overflow_ends, 1);
        QVERIFY(f.lines[1] == (Got{"next", false, true}));
        // A "\r" not followed by the newline is a byte of the line.
        const Framed cr = frame({std::string(8, 'z') + "\r", "z\n"}, 8);
        QVERIFY(cr.lines[0].over_long);
        QCOMPARE(cr.overflow, std::string("\rz"));
    }

    void overLongLineIsNeverKept() {
        // 10 MB without a newline through a 1 KiB framer in 64 KiB chunks: passed on once, cut,
        // the rest streamed to the overflow, and never more than the bound + 1 byte held.
        std::vector<std::string> chunks(160, std::string(65536, 'a'));
        chunks.push_back("\nafter\n");
        const Framed f = frame(chunks, 1024);
        QCOMPARE(f.lines.size(), size_t(2));
        QVERIFY(f.lines[0].over_long);
        QCOMPARE(f.lines[0].text.size(), size_t(1024));
        QCOMPARE(f.overflow.size(), size_t(160 * 65536 - 1024));
        QVERIFY(f.most_buffered <= 1025);
        QVERIFY(f.lines[1] == (Got{"after", false, true}));
        // An over-long line the stream ends inside is not passed on a second time.
        QCOMPARE(frame({std::string(5000, 'b')}, 1024).lines.size(), size_t(1));
    }

    void overLongLineCountsAndReportsAsAnError() {
        LineFramer framer(16);
        std::string cut;
        framer.feed(std::string(40, 'q') + "\n" + std::string(17, 'r') + "\n", [&](const FramedLine& l) {
            if (l.over_long) cut = std::string(l.text);
        });
        QCOMPARE(framer.over_long_lines(), std::int64_t(2));
        const auto parsed = protocol::parse_line(line_too_long_event(2.5, "stdout", 4u << 20, cut, 1));
        QVERIFY2(parsed.event, parsed.error.c_str());
        QCOMPARE(parsed.event->type, protocol::EventType::Error);
        QCOMPARE(parsed.event->string_field("code"), std::string("line_too_long"));
        QCOMPARE(parsed.event->int_field("bytes"), std::int64_t(4) << 20);
        QCOMPARE(parsed.event->rank(), 1);
        QCOMPARE(parsed.event->t, 2.5);
        const std::string message = parsed.event->string_field("message");
        QVERIFY2(message.find("a stdout line longer than 4 MiB") != std::string::npos, message.c_str());
        QVERIFY2(message.find("'" + std::string(16, 'r') + "'") != std::string::npos, message.c_str());
        // Bytes that are not UTF-8 in the start of the line still make a valid protocol line.
        QVERIFY(protocol::parse_line(line_too_long_event(0, "stderr", 8, "\xff\xfe\x01", -1)).event);
    }

    void termThenKillWaitsOutTheGraceExactly() {
        process::StopLadder ladder = process::StopLadder::term_then_kill(3000ms);
        const auto t0 = process::Clock::now();
        QVERIFY(!ladder.started());
        QVERIFY(!ladder.remaining(t0));
        QCOMPARE(ladder.due(t0 + 10s), 0);   // nothing is due before a stop was asked for
        QCOMPARE(ladder.request(t0), SIGTERM);
        QCOMPARE(ladder.remaining(t0 + 1000ms)->count(), 2000);
        QCOMPARE(ladder.due(t0 + 2999ms), 0);      // never early
        QCOMPARE(ladder.due(t0 + 3000ms), SIGKILL);
        QVERIFY(ladder.exhausted());
        QCOMPARE(ladder.last_signal(), SIGKILL);
        QCOMPARE(ladder.request(t0 + 4s), 0);
    }

    void interruptTermKillAndRequestsClimbAtOnce() {
        process::StopLadder ladder = process::StopLadder::interrupt_term_kill(20s);
        const auto t0 = process::Clock::now();
        QCOMPARE(ladder.request(t0), SIGINT);
        QCOMPARE(ladder.due(t0 + 20s), SIGTERM);
        QCOMPARE(ladder.remaining(t0 + 20s)->count(), 10000);   // SIGKILL half the grace later
        QCOMPARE(ladder.request(t0 + 21s), SIGKILL);            // a second Ctrl-C does not wait
        QVERIFY(ladder.exhausted());
        // The launcher's: nothing at first, SIGKILL after the wait.
        process::StopLadder after_failure = process::StopLadder::kill_after(70s);
        QCOMPARE(after_failure.request(t0), 0);
        QVERIFY(after_failure.started());
        QCOMPARE(after_failure.due(t0 + 69s), 0);
        QCOMPARE(after_failure.due(t0 + 70s), SIGKILL);
    }

    void exitStatusFromRealChildren() {
        const auto run = [](auto body) {
            const pid_t pid = fork();
            if (pid == 0) body();
            int status = 0;
            waitpid(pid, &status, 0);
            return process::ExitStatus::from_wait_status(status);
        };
        const process::ExitStatus three = run([] { _exit(3); });
        QCOMPARE(three.code, 3);
        QCOMPARE(three.signal, 0);
        QCOMPARE(three.describe(), std::string("exited with code 3"));
        QCOMPARE(three.shell_code(), 3);
        const process::ExitStatus killed = run([] {
            raise(SIGKILL);
            _exit(0);
        });
        QCOMPARE(killed.signal, SIGKILL);
        QCOMPARE(killed.describe(), std::string("was killed by signal 9 (SIGKILL)"));
        QCOMPARE(killed.shell_code(), 137);
        QVERIFY(run([] { _exit(0); }).ok());
        QCOMPARE(process::signal_name(SIGTERM), std::string("SIGTERM"));
        QCOMPARE(process::signal_name(SIGSEGV), std::string("SIGSEGV"));
        QCOMPARE(process::signal_name(77), std::string("signal 77"));
    }
};

QTEST_GUILESS_MAIN(ProcessLayerTest)
#include "test_process_layer.moc"
