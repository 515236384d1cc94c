// A stand-in for wingspan-train that misbehaves on purpose, for the run panel's tests.
// It accepts (and mostly ignores) wingspan-train's flags; the mode comes from
// FAKE_TRAINER_MODE or --fake-mode:
//   ok              hello, predicted, a few memory/step events, done (completed)
//   crash           some events and an `error`, then dies of SIGSEGV
//   malformed       valid events interleaved with 9 malformed lines (see below), then done
//   flood           FAKE_TRAINER_RATE memory lines a second (default 20000; 0: as fast as
//                   the pipe takes them), a step every 50 and a stderr line every 20, for
//                   FAKE_TRAINER_SECONDS (default 3) or FAKE_TRAINER_LINES lines, then done
//   slow            a step every 0.3 s for a long time; SIGTERM finishes the step, saves
//                   <out>/checkpoint-N and ends with done (interrupted)
//   ignore-sigterm  like slow, but SIGTERM is ignored (the launcher has to kill it)
//   early-kill      hello, predicted and setup-phase memory (the weights only), then it dies
//                   of SIGKILL before its first step: the run never reached its peak
//   slow-setup      hello, predicted and setup-phase memory, then a long setup (60 s) that
//                   checks for SIGTERM as wingspan-train's does (train.cpp stopped_during_setup):
//                   stopped there it says done "interrupted" at step 0, nothing saved
//   stuck-setup     like slow-setup, but its stop signals stay blocked as the window started it
//                   (a setup step that never checks, e.g. an 8B model's random init): only SIGKILL
//                   ends it
//   stuck-start     its stop signals stay blocked and it prints nothing for 60 s (a trainer
//                   still loading its libraries): only SIGKILL ends it
//   long-line       hello, predicted, a memory event, then one stdout line of
//                   FAKE_TRAINER_LINE_BYTES bytes (default 300,000,000), then a step and done
// `fake_trainer devices` lists a CPU and a fake 24 GB CUDA GPU as wingspan-train does
// (FAKE_TRAINER_DEVICES=none: fails like a trainer without the command). `--device D` is
// echoed in every memory event with `reserved_bytes` (the caching allocator's: allocated
// rounded up to 2 MiB blocks plus 20 MB on a GPU, equal to allocated on the CPU); `done` adds
// `reserved_peak_bytes`.
// Plain C++ with no dependencies: it writes protocol lines by hand.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

std::atomic<bool> g_term{false};
std::string g_device = "cpu";
long g_reserved_peak = 0;

long reserved_for(long allocated) {
    if (g_device == "cpu") return allocated;
    const long block = 2L << 20;
    return (allocated + block - 1) / block * block + 20000000;
}
void on_term(int) { g_term = true; }

const auto g_start = std::chrono::steady_clock::now();
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count(); }

void out(const std::string& line) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

std::string head(const char* event) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "{\"v\":1,\"event\":\"%s\",\"t\":%.4f", event, now());
    return buf;
}

void hello() {
    out(head("hello") +
        ",\"trainer\":\"fake-trainer\",\"version\":\"0.0.1\",\"device\":\"cpu\",\"threads\":1,"
        "\"plan\":{\"method\":\"lora\",\"seq_len\":64,\"micro_batch\":2},\"params\":{\"total\":1000,\"trainable\":100}}");
    out(head("predicted") +
        ",\"components\":{\"frozen_weights\":4000000,\"adapters\":400000,\"gradients\":400000,"
        "\"optimizer_state\":800000,\"activations\":3000000,\"logits_loss\":1000000,\"framework_overhead\":50000000},"
        "\"peak_bytes\":9600000,\"total_bytes\":60000000,"
        // The planner's speed on the CPU: 1024 tokens/s, 128 tokens per step in 0.125 s (the steps
        // below take 0.1 s).
        "\"tokens_per_s\":1024.0,\"step_time_s\":0.125,\"speed_scale\":1.0}");
}

void memory(long step, double wave) {
    const long act = long(2500000 * wave);
    const long allocated = 6500000 + act;
    const long reserved = reserved_for(allocated);
    g_reserved_peak = std::max(g_reserved_peak, reserved);
    char buf[640];
    std::snprintf(buf, sizeof buf,
                  ",\"step\":%ld,\"phase\":\"forward\",\"components\":{\"frozen_weights\":4000000,\"adapters\":400000,"
                  "\"gradients\":400000,\"optimizer_state\":800000,\"activations\":%ld,\"logits_loss\":900000},"
                  "\"allocated_bytes\":%ld,\"peak_bytes\":9000000,\"rss_bytes\":70000000,\"rss_peak_bytes\":72000000,"
                  "\"device\":\"%s\",\"reserved_bytes\":%ld}",
                  step, act, allocated, g_device.c_str(), reserved);
    out(head("memory") + buf);
}

// Before the first step only the weights are live (setup phase).
void setup_memory() {
    const long allocated = 4400000;
    const long reserved = reserved_for(allocated);
    g_reserved_peak = std::max(g_reserved_peak, reserved);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  ",\"step\":0,\"phase\":\"setup\",\"components\":{\"frozen_weights\":4000000,\"adapters\":400000},"
                  "\"allocated_bytes\":%ld,\"peak_bytes\":%ld,\"rss_bytes\":60000000,\"rss_peak_bytes\":60000000,"
                  "\"device\":\"%s\",\"reserved_bytes\":%ld}",
                  allocated, allocated, g_device.c_str(), reserved);
    out(head("memory") + buf);
}

void step(long s, long total) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  ",\"step\":%ld,\"total_steps\":%ld,\"loss\":%.4f,\"lr\":0.0002,\"tokens_per_s\":%.1f,\"tokens\":128,"
                  "\"step_time_s\":0.1}",
                  s, total, 5.0 / (1.0 + 0.1 * double(s)), 1000.0 + double(s % 7) * 10.0);
    out(head("step") + buf);
}

void done(const char* reason, long steps, const std::string& checkpoint) {
    out(head("done") + ",\"reason\":\"" + reason + "\",\"steps\":" + std::to_string(steps) + ",\"checkpoint\":\"" +
        checkpoint + "\",\"sample\":\"fake sample text\",\"peak_bytes\":9000000,\"rss_peak_bytes\":72000000," +
        "\"reserved_peak_bytes\":" + std::to_string(g_reserved_peak) + "}");
}

std::string save(const std::string& out_dir, long s) {
    if (out_dir.empty()) return {};
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(out_dir) / ("checkpoint-" + std::to_string(s));
    fs::create_directories(dir);
    std::ofstream(dir / "adapter_model.safetensors") << "fake";
    out(head("checkpoint") + ",\"step\":" + std::to_string(s) + ",\"path\":\"" + dir.string() + "\"}");
    return dir.string();
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// A setup that takes `seconds` (nothing saved, no step). With `checks`, SIGTERM ends it as
// wingspan-train's setup does: done "interrupted" at step 0, no checkpoint, exit 0.
int long_setup(double seconds, bool checks) {
    setup_memory();
    const double end = now() + seconds;
    while (now() < end) {
        if (checks && g_term) {
            std::fprintf(stderr, "fake: SIGTERM during setup, nothing saved\n");
            out(head("done") + ",\"reason\":\"interrupted\",\"steps\":0,\"peak_bytes\":4400000,"
                               "\"rss_peak_bytes\":60000000,\"reserved_peak_bytes\":" + std::to_string(g_reserved_peak) + "}");
            return 0;
        }
        sleep_s(0.05);
    }
    std::fprintf(stderr, "fake: setup over without a stop\n");
    return 3;
}

int slow(const std::string& out_dir, bool ignore_term) {
    if (ignore_term) std::signal(SIGTERM, SIG_IGN);
    const long total = 1000;
    for (long s = 1; s <= total; ++s) {
        for (int i = 0; i < 3; ++i) {
            memory(s, i / 2.0);
            sleep_s(0.1);
        }
        step(s, total);
        if (g_term) {
            std::fprintf(stderr, "fake: SIGTERM, saving after step %ld\n", s);
            sleep_s(0.2);
            const std::string ckpt = save(out_dir, s);
            done("interrupted", s, ckpt);
            return 0;
        }
    }
    done("completed", total, save(out_dir, total));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, on_term);
    // The window starts a trainer with its stop signals blocked (docs/protocol.md); one that
    // stops by a handler, as this one does, unblocks them.
    sigset_t stops;
    sigemptyset(&stops);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
    std::string mode = std::getenv("FAKE_TRAINER_MODE") ? std::getenv("FAKE_TRAINER_MODE") : "ok";
    for (int i = 1; i + 1 < argc; ++i)
        if (!std::strcmp(argv[i], "--fake-mode")) mode = argv[i + 1];
    // The stuck modes keep the mask they were started with: a stop stays pending, unheard.
    if (mode.rfind("stuck-", 0) != 0) sigprocmask(SIG_UNBLOCK, &stops, nullptr);
    std::string out_dir;
    if (argc > 1 && !std::strcmp(argv[1], "devices")) {
        const char* devices = std::getenv("FAKE_TRAINER_DEVICES");
        if (devices && !std::strcmp(devices, "none")) {
            std::fprintf(stderr, "fake: unknown argument 'devices'\n");
            return 2;
        }
        std::puts("{\"devices\":[{\"type\":\"cpu\",\"index\":0,\"name\":\"Fake CPU\",\"total_bytes\":16000000000,"
                  "\"bf16\":true},{\"type\":\"cuda\",\"index\":0,\"name\":\"Fake GPU 24GB\",\"total_bytes\":"
                  "24000000000,\"bf16\":true}]}");
        return 0;
    }
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--fake-mode") && i + 1 < argc) mode = argv[++i];
        else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) g_device = argv[++i];
        else if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out_dir = argv[++i];
        else if (!std::strcmp(argv[i], "--help")) {
            std::puts("usage: fake_trainer [--fake-mode ok|crash|malformed|flood|slow|ignore-sigterm|early-kill|slow-setup|stuck-setup|stuck-start|long-line] [wingspan-train flags]");
            return 0;
        }
    }
    std::fprintf(stderr, "fake: mode %s\n", mode.c_str());
    if (mode == "stuck-start") {
        sleep_s(60);
        return 3;
    }
    hello();

    if (mode == "ok") {
        for (long s = 1; s <= 5; ++s) {
            memory(s, 0.5);
            memory(s, 1.0);
            step(s, 5);
        }
        out(head("eval") + ",\"step\":5,\"loss\":1.5}");
        done("completed", 5, save(out_dir, 5));
        return 0;
    }
    if (mode == "crash") {
        for (long s = 1; s <= 3; ++s) {
            memory(s, 1.0);
            step(s, 10);
        }
        std::fprintf(stderr, "fake: about to crash\n");
        out(head("error") + ",\"code\":\"internal\",\"message\":\"fake failure before the crash\"}");
        std::fflush(nullptr);
        std::signal(SIGSEGV, SIG_DFL);
        std::raise(SIGSEGV);
        return 99;
    }
    if (mode == "malformed") {
        memory(1, 0.5);
        out("this is not json");                                            // 1
        out("{\"v\":1,\"event\":\"step\"");                                 // 2 truncated
        out("{\"event\":\"memory\",\"t\":1}");                              // 3 no v
        out("{\"v\":99,\"event\":\"memory\",\"t\":1}");                     // 4 newer version
        out("{\"v\":1,\"event\":\"teleport\",\"t\":1}");                    // 5 unknown event
        out("[1,2,3]");                                                     // 6 not an object
        out("\x01\x02\xff\xfe binary");                                     // 7 bytes
        out(std::string(200000, 'x'));                                      // 8 a very long line
        out("{\"v\":1,\"event\":\"memory\",\"t\":\"soon\"}");               // 9 t not a number
        out("");                                                            // blank: not counted
        step(1, 2);
        memory(2, 1.0);
        step(2, 2);
        done("completed", 2, save(out_dir, 2));
        return 0;
    }
    if (mode == "flood") {
        const double seconds = std::getenv("FAKE_TRAINER_SECONDS") ? std::atof(std::getenv("FAKE_TRAINER_SECONDS")) : 3.0;
        const double rate = std::getenv("FAKE_TRAINER_RATE") ? std::atof(std::getenv("FAKE_TRAINER_RATE")) : 20000.0;
        // FAKE_TRAINER_LINES: exactly that many memory lines (however long they take), so a
        // test can count them on a loaded machine; else as many as fit in the seconds.
        const long lines = std::getenv("FAKE_TRAINER_LINES") ? std::atol(std::getenv("FAKE_TRAINER_LINES")) : 0;
        long n = 0, s = 0;
        while (lines > 0 ? n < lines : now() < seconds) {
            memory(s, double(n % 10) / 10.0);
            if (++n % 50 == 0) step(++s, 1000000);
            if (n % 20 == 0) std::fprintf(stderr, "fake: flood line %ld\n", n);
            if (rate > 0 && double(n) > rate * now()) sleep_s(0.005);   // ahead of the rate: wait a little
        }
        std::fprintf(stderr, "fake: flooded %ld memory events\n", n);
        done("completed", s, save(out_dir, s));
        return 0;
    }
    if (mode == "early-kill") {
        setup_memory();
        sleep_s(0.1);
        setup_memory();
        std::fprintf(stderr, "fake: killed before the first step\n");
        std::fflush(nullptr);
        std::raise(SIGKILL);
        return 99;
    }
    if (mode == "long-line") {
        memory(1, 0.5);
        const char* env = std::getenv("FAKE_TRAINER_LINE_BYTES");
        long left = env ? std::atol(env) : 300000000L;
        const std::string chunk(1 << 20, 'x');
        while (left > 0) {
            const size_t n = size_t(std::min<long>(left, long(chunk.size())));
            std::fwrite(chunk.data(), 1, n, stdout);
            left -= long(n);
        }
        std::fputc('\n', stdout);
        step(1, 1);
        done("completed", 1, save(out_dir, 1));
        return 0;
    }
    if (mode == "slow-setup") return long_setup(60, true);
    if (mode == "stuck-setup") return long_setup(60, false);
    if (mode == "slow") return slow(out_dir, false);
    if (mode == "ignore-sigterm") return slow(out_dir, true);
    std::fprintf(stderr, "fake: unknown mode %s\n", mode.c_str());
    out(head("error") + ",\"code\":\"bad_argument\",\"message\":\"unknown fake mode\"}");
    return 2;
}
