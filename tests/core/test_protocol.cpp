#include <QtTest>

#include <cmath>

#include "wingspan/protocol.hpp"
#include "wingspan/protocol_events.hpp"

using namespace wingspan;
using namespace wingspan::protocol;

class ProtocolTest : public QObject {
    Q_OBJECT
private slots:
    void roundTrip() {
        const std::string line = encode(EventType::Memory, 1.25,
                                        {{"step", 3},
                                         {"components", components_to_json({{Component::Activations, 2048},
                                                                            {Component::Adapters, 512}})},
                                         {"allocated_bytes", 4096},
                                         {"peak_bytes", 8192}});
        QVERIFY(line.find('\n') == std::string::npos);
        const ParseResult r = parse_line(line);
        QVERIFY2(r.event.has_value(), r.error.c_str());
        QCOMPARE(r.event->type, EventType::Memory);
        QCOMPARE(r.event->t, 1.25);
        QCOMPARE(r.event->int_field("step"), 3);
        QCOMPARE(r.event->int_field("peak_bytes"), 8192);
        const auto c = r.event->components();
        QCOMPARE(c.size(), size_t(2));
        QCOMPARE(c.at(Component::Activations), 2048);
    }

    void everyEventNameRoundTrips() {
        for (EventType t : {EventType::Hello, EventType::Predicted, EventType::Memory, EventType::Step, EventType::Eval,
                            EventType::Checkpoint, EventType::Log, EventType::Error, EventType::Done}) {
            const auto r = parse_line(encode(t, 0.5));
            QVERIFY(r.event && r.event->type == t);
        }
    }

    void rejectsWithReasons_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("reason");
        QTest::newRow("garbage") << "Segmentation fault" << "not a JSON object";
        QTest::newRow("array") << "[1,2]" << "not a JSON object";
        QTest::newRow("no version") << "{\"event\":\"step\",\"t\":1}" << "missing protocol version";
        QTest::newRow("newer") << "{\"v\":2,\"event\":\"step\",\"t\":1}" << "newer than this reader";
        // Issue 34 class 20: a version past 32 bits is not version 1 (2^32 + 1), nor are 0 and -1.
        QTest::newRow("version past 32 bits") << "{\"v\":4294967297,\"event\":\"step\",\"t\":1}" << "newer than this reader";
        QTest::newRow("version past 64 bits") << "{\"v\":18446744073709551617,\"event\":\"step\",\"t\":1}" << "protocol version";
        QTest::newRow("version 0") << "{\"v\":0,\"event\":\"step\",\"t\":1}" << "positive integer";
        QTest::newRow("version -1") << "{\"v\":-1,\"event\":\"step\",\"t\":1}" << "positive integer";
        QTest::newRow("unknown event") << "{\"v\":1,\"event\":\"party\",\"t\":1}" << "unknown event 'party'";
        QTest::newRow("no time") << "{\"v\":1,\"event\":\"step\"}" << "missing time";
        QTest::newRow("truncated") << "{\"v\":1,\"event\":\"st" << "not a JSON object";
        QTest::newRow("rank text") << "{\"v\":1,\"event\":\"step\",\"t\":1,\"rank\":\"one\"}" << "'rank' is not a non-negative integer";
        QTest::newRow("negative rank") << "{\"v\":1,\"event\":\"step\",\"t\":1,\"rank\":-1}" << "'rank' is not";
        QTest::newRow("world size") << "{\"v\":1,\"event\":\"hello\",\"t\":1,\"world_size\":1.5}" << "'world_size' is not";
    }
    void rejectsWithReasons() {
        QFETCH(QString, line);
        QFETCH(QString, reason);
        const auto r = parse_line(line.toStdString());
        QVERIFY(!r.event);
        QVERIFY2(r.error.find(reason.toStdString()) != std::string::npos, r.error.c_str());
    }

    void unknownFieldsAndComponentsAreIgnored() {
        const auto r = parse_line("{\"v\":1,\"event\":\"memory\",\"t\":2,\"future\":true,\"components\":{\"activations\":5,\"dark_matter\":7}}");
        QVERIFY(r.event);
        QCOMPARE(r.event->components().size(), size_t(1));
    }

    // memory/done device fields (issue 12), and what an older trainer's lines mean.
    void deviceMemoryFields() {
        auto cuda = parse_line(R"({"v":1,"event":"memory","t":1,"device":"cuda:0","allocated_bytes":100,)"
                               R"("peak_bytes":150,"reserved_bytes":2097152,"reserved_peak_bytes":4194304,)"
                               R"("device_process_bytes":600000000})");
        QVERIFY(cuda.event);
        const DeviceMemory d = device_memory(*cuda.event);
        QCOMPARE(d.device, std::string("cuda:0"));
        QCOMPARE(d.reserved_bytes, std::int64_t(2097152));
        QCOMPARE(d.reserved_peak_bytes, std::int64_t(4194304));
        QCOMPARE(d.device_process_bytes.value_or(-1), std::int64_t(600000000));
        QVERIFY(!d.device_process_peak_bytes);
        auto old = parse_line(R"({"v":1,"event":"memory","t":1,"allocated_bytes":100,"peak_bytes":150})");
        QVERIFY(old.event);
        const DeviceMemory o = device_memory(*old.event);
        QCOMPARE(o.device, std::string("cpu"));
        QCOMPARE(o.reserved_bytes, std::int64_t(100));
        QCOMPARE(o.reserved_peak_bytes, std::int64_t(150));
        QVERIFY(!o.device_process_bytes);
    }
    // Lines from several ranks name theirs; older lines (no rank) read as rank 0 of 1.
    void rankAndWorldSize() {
        const auto old_line = parse_line("{\"v\":1,\"event\":\"hello\",\"t\":0}");
        QVERIFY(old_line.event);
        QCOMPARE(old_line.event->rank(), 0);
        QCOMPARE(old_line.event->world_size(), 1);
        const auto ranked = parse_line(encode(EventType::Hello, 0.5, {{"rank", 3}, {"world_size", 4}}));
        QVERIFY(ranked.event);
        QCOMPARE(ranked.event->rank(), 3);
        QCOMPARE(ranked.event->world_size(), 4);
    }

    void toleratesCrlf() { QVERIFY(parse_line("{\"v\":1,\"event\":\"log\",\"t\":0}\r\n").event); }

    // Typed events (protocol_events.hpp): each kind read once into its struct; a field missing
    // or of the wrong type keeps the default; an event of another kind gives nothing.
    void typedEventsReadTheirFieldsOnce() {
        const Event done = *parse_line(encode(EventType::Done, 60,
                                              {{"reason", "interrupted"}, {"steps", 12}, {"checkpoint", "/runs/ck-12"},
                                               {"peak_bytes", 8192}, {"rss_peak_bytes", 310000000}}))
                                .event;
        const auto d = as_done(done);
        QVERIFY(d);
        QCOMPARE(d->reason, std::string("interrupted"));
        QCOMPARE(d->steps, std::int64_t(12));
        QCOMPARE(d->checkpoint, std::string("/runs/ck-12"));
        QCOMPARE(d->peak_bytes, std::int64_t(8192));
        QCOMPARE(d->rss_peak_bytes, std::int64_t(310000000));
        QVERIFY(!as_error(done) && !as_step(done) && !as_memory(done));

        const auto err = as_error(*parse_line(encode(EventType::Error, 1,
                                                     {{"code", "out_of_memory"}, {"message", "no room"},
                                                      {"component", "activations"}, {"bytes", 123}, {"available_bytes", 45}}))
                                       .event);
        QVERIFY(err);
        QCOMPARE(err->code, std::string("out_of_memory"));
        QCOMPARE(err->component, std::string("activations"));
        QCOMPARE(err->bytes, std::int64_t(123));
        QCOMPARE(err->available_bytes, std::int64_t(45));

        const auto step = as_step(*parse_line(encode(EventType::Step, 2,
                                                     {{"step", 3}, {"total_steps", 50}, {"loss", "high"}, {"lr", 2e-4},
                                                      {"preference", {{"reward_margin", 0.42}}}}))
                                       .event);
        QVERIFY(step);
        QCOMPARE(step->step, std::int64_t(3));
        QCOMPARE(step->total_steps, std::int64_t(50));
        QCOMPARE(step->loss, 0.0);   // a string where a number belongs: the default
        QCOMPARE(step->lr, 2e-4);
        QCOMPARE(step->reward_margin, 0.42);
        QVERIFY(std::isnan(step->reward_accuracy));

        const auto mem = as_memory(*parse_line(encode(EventType::Memory, 3,
                                                      {{"step", 4}, {"phase", "backward"}, {"allocated_bytes", 4096},
                                                       {"rss_peak_bytes", 9000},
                                                       {"components", components_to_json({{Component::Gradients, 512}})}}))
                                        .event);
        QVERIFY(mem);
        QCOMPARE(mem->phase, std::string("backward"));
        QCOMPARE(mem->allocated_bytes, std::int64_t(4096));
        QCOMPARE(mem->peak_bytes, std::int64_t(0));
        QCOMPARE(mem->rss_peak_bytes, std::int64_t(9000));
        QCOMPARE(mem->components.at(Component::Gradients), std::int64_t(512));

        const auto log = as_log(*parse_line(encode(EventType::Log, 4, {{"message", "hi"}, {"source", "stderr"}})).event);
        QVERIFY(log);
        QCOMPARE(log->level, std::string("info"));
        QCOMPARE(log->source, std::string("stderr"));
        QCOMPARE(as_checkpoint(*parse_line(encode(EventType::Checkpoint, 5, {{"step", 10}, {"path", "/c"}})).event)->path,
                 std::string("/c"));
        QCOMPARE(as_eval(*parse_line(encode(EventType::Eval, 6, {{"step", 10}, {"loss", 1.5}})).event)->loss, 1.5);
    }

    // hello and predicted as docs/protocol.md writes them: nested objects (precision, params,
    // plan, batch, cpu) read into fields; wrong types keep the defaults.
    void helloAndPredictedAreTyped() {
        const char* hello_line =
            R"({"v":1,"event":"hello","t":0.01,"trainer":"wingspan-train","version":"0.1.0","torch":"1.13.1",)"
            R"("device":"cpu","device_name":"AMD EPYC 7B13","threads":2,"plan":{"method":"lora","sharding":"zero2"},)"
            R"("precision":{"precision":"bf16-mixed","auto":true,"reason":"hardware bf16"},)"
            R"("params":{"total":1234,"trainable":56},"objective":{"kind":"dpo","beta":0.1},"rank":1,"world_size":2,"pid":4242})";
        const auto h = as_hello(*parse_line(hello_line).event);
        QVERIFY(h);
        QCOMPARE(h->trainer, std::string("wingspan-train"));
        QCOMPARE(h->device_name, std::string("AMD EPYC 7B13"));
        QCOMPARE(h->threads, std::int64_t(2));
        QCOMPARE(h->params_total, std::int64_t(1234));
        QCOMPARE(h->params_trainable, std::int64_t(56));
        QCOMPARE(h->precision.precision, std::string("bf16-mixed"));
        QVERIFY(h->precision.automatic);
        QCOMPARE(h->precision.reason, std::string("hardware bf16"));
        QCOMPARE(h->sharding, std::string("zero2"));
        QCOMPARE(h->objective, std::string("dpo"));
        QCOMPARE(h->rank, std::int64_t(1));
        QCOMPARE(h->world_size, std::int64_t(2));
        QCOMPARE(h->pid, std::int64_t(4242));
        QCOMPARE(h->plan.value("method", ""), std::string("lora"));
        QVERIFY(!as_predicted(*parse_line(hello_line).event) && !as_done(*parse_line(hello_line).event));

        // An older trainer's hello: no precision, no objective, params as a number, plan a string.
        const auto old = as_hello(*parse_line(R"({"v":1,"event":"hello","t":0,"params":7,"plan":"x"})").event);
        QVERIFY(old);
        QCOMPARE(old->precision.precision, std::string());
        QVERIFY(!old->precision.automatic);
        QCOMPARE(old->objective, std::string("sft"));
        QCOMPARE(old->params_total, std::int64_t(0));
        QVERIFY(old->plan.is_null());
        QCOMPARE(old->world_size, std::int64_t(1));
        QCOMPARE(old->device, std::string("cpu"));

        const auto p = as_predicted(*parse_line(
            R"({"v":1,"event":"predicted","t":0.02,"components":{"frozen_weights":1024,"activations":2048},)"
            R"("component_maxima":{"activations":4096},"peak_bytes":123456,"total_bytes":234567,"framework":"libtorch-cpu",)"
            R"("batch":{"rows":4,"cols":399,"padding":"dynamic","tokens":1596},"tokens_per_s":512.5,"step_time_s":2.0,)"
            R"("speed_scale":-3,"cpu":{"bf16_isa":"avx512_bf16","bf16_path":"hardware"},"precision":{"precision":"fp32"}})").event);
        QVERIFY(p);
        QCOMPARE(p->components.at(Component::FrozenWeights), std::int64_t(1024));
        QCOMPARE(p->component_maxima.size(), std::size_t(1));
        QCOMPARE(p->component_maxima.at(Component::Activations), std::int64_t(4096));
        QCOMPARE(p->peak_bytes, std::int64_t(123456));
        QCOMPARE(p->total_bytes, std::int64_t(234567));
        QCOMPARE(p->framework, std::string("libtorch-cpu"));
        QCOMPARE(p->batch_rows, std::int64_t(4));
        QCOMPARE(p->batch_cols, std::int64_t(399));
        QCOMPARE(p->batch_tokens, std::int64_t(1596));
        QCOMPARE(p->padding, std::string("dynamic"));
        QCOMPARE(p->tokens_per_s, 512.5);
        QCOMPARE(p->step_time_s, 2.0);
        QCOMPARE(p->speed_scale, 1.0);   // not positive: uncalibrated
        QCOMPARE(p->bf16_isa, std::string("avx512_bf16"));
        QCOMPARE(p->bf16_path, std::string("hardware"));
        QCOMPARE(p->precision.precision, std::string("fp32"));
        // Without component_maxima the maxima are the peak phase's components.
        const auto bare = as_predicted(*parse_line(R"({"v":1,"event":"predicted","t":0,"components":{"gradients":8}})").event);
        QVERIFY(bare);
        QCOMPARE(bare->component_maxima, bare->components);
        QCOMPARE(bare->tokens_per_s, 0.0);
    }
};

QTEST_APPLESS_MAIN(ProtocolTest)
#include "test_protocol.moc"
