#pragma once
// A run store full of hostile records (issue 34, classes 1, 13 and 14), shared by the core
// and the window suites: each folder is one member of the class "a run record we did not
// write whole", named after what is wrong with it.
#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace wingspan::test {

inline void write_file(const std::filesystem::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

// A finished run that calibrate accepts (predicted and measured bytes).
inline std::filesystem::path good_run(const std::filesystem::path& runs, const std::string& name, long long rss) {
    const auto run = runs / name;
    std::filesystem::create_directories(run);
    write_file(run / "plan.json", R"({"options":{"method":"lora","rank":8,"seq":64,"batch":2,"steps":5}})");
    std::string ev;
    ev += R"({"v":1,"event":"hello","t":0})" "\n";
    ev += R"({"v":1,"event":"predicted","t":0.1,"components":{"frozen_weights":1000000,"activations":500000},"peak_bytes":1500000,"total_bytes":2000000})" "\n";
    ev += R"({"v":1,"event":"memory","t":0.2,"components":{"frozen_weights":1000000,"activations":400000},"allocated_bytes":1400000,"peak_bytes":1450000,"rss_bytes":)" +
          std::to_string(rss) + "}\n";
    ev += R"({"v":1,"event":"done","t":0.3,"reason":"completed","peak_bytes":1450000,"rss_peak_bytes":)" +
          std::to_string(rss) + "}\n";
    write_file(run / "events.jsonl", ev);
    write_file(run / "result.json",
               R"({"status":"completed","status_text":"completed","exit_code":0,"signal":0,"measured_peak_bytes":1450000,"predicted_peak_bytes":1500000})");
    return run;
}

// Folder name → true when the record is readable (whole or in part), false when it must be
// listed as unreadable.
inline std::map<std::string, bool> make_hostile_store(const std::filesystem::path& runs) {
    namespace fs = std::filesystem;
    std::map<std::string, bool> expect;
    auto run = [&](const std::string& name, bool readable, long long rss = 3'000'000) {
        expect[name] = readable;
        return good_run(runs, name, rss);
    };
    run("20250101-000000-good", true);
    write_file(run("20250101-000001-status-number", false) / "result.json", R"({"status":5})");
    write_file(run("20250101-000002-exit-float", false) / "result.json", R"({"status":"failed","exit_code":1.5})");
    write_file(run("20250101-000003-negative-bytes", false) / "result.json", R"({"measured_peak_bytes":-3})");
    write_file(run("20250101-000004-text-object", false) / "result.json", R"({"status_text":{"a":1}})");
    write_file(run("20250101-000005-result-array", false) / "result.json", "[1,2,3]");
    write_file(run("20250101-000006-result-cut", false) / "result.json", R"({"status":"comp)");
    write_file(run("20250101-000007-signal-huge", false) / "result.json", R"({"signal":18446744073709551615})");
    {   // result.json as a folder
        const fs::path r = run("20250101-000010-result-folder", false);
        fs::remove(r / "result.json");
        fs::create_directory(r / "result.json");
    }
    {   // plan.json as a named pipe (reading it would wait for a writer for ever)
        const fs::path r = run("20250101-000011-plan-fifo", false);
        fs::remove(r / "plan.json");
        ::mkfifo((r / "plan.json").c_str(), 0600);
    }
    {   // result.json a link to a device that never ends
        const fs::path r = run("20250101-000012-result-devzero", false);
        fs::remove(r / "result.json");
        fs::create_symlink("/dev/zero", r / "result.json");
    }
    {   // events.jsonl as a named pipe, and as /dev/zero (classes 13)
        const fs::path r = run("20250101-000013-events-fifo", false);
        fs::remove(r / "events.jsonl");
        ::mkfifo((r / "events.jsonl").c_str(), 0600);
        const fs::path z = run("20250101-000014-events-devzero", false);
        fs::remove(z / "events.jsonl");
        fs::create_symlink("/dev/zero", z / "events.jsonl");
    }
    {   // plan.json a link to /dev/urandom, and plan.json that is not JSON
        const fs::path r = run("20250101-000015-plan-device", false);
        fs::remove(r / "plan.json");
        fs::create_symlink("/dev/urandom", r / "plan.json");
        write_file(run("20250101-000016-plan-garbage", false) / "plan.json", "\x01\x02{{{");
    }
    {   // class 14: a result.json far over a record's 1 MB (a long run's checkpoint list,
        // written before records were capped): still listed, with its top-level fields
        const fs::path r = run("20250101-000020-result-3mb", true, 3'200'000);
        std::string big = R"({"checkpoints":[)";
        for (int i = 0; i < 60'000; ++i) big += (i ? "," : "") + std::string(R"("/tmp/out/checkpoint-)") + std::to_string(i) + "\"";
        big += R"(],"status":"completed","status_text":"completed","exit_code":0,"signal":0,"measured_peak_bytes":1450000,"predicted_peak_bytes":1500000})";
        write_file(r / "result.json", big);
    }
    {   // events.jsonl with one 5 MB line among good ones: the rest is read
        const fs::path r = run("20250101-000021-events-long-line", true, 3'100'000);
        std::ifstream in(r / "events.jsonl");
        std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        write_file(r / "events.jsonl", R"({"v":1,"event":"log","t":0,"message":")" + std::string(5u << 20, 'x') + "\"}\n" + good);
    }
    {   // options of every wrong type and range in plan.json (the window describes them)
        const fs::path r = run("20250101-000022-plan-odd-options", true);
        write_file(r / "plan.json",
                   R"({"options":{"seq":1e300,"rank":"x","batch":-5,"steps":18446744073709551615,"processes":1e30,"threads":-9,"method":7,"extra_args":[1,{}],"model_config":[]}})");
    }
    {   // a finished LoRA run of a model folder whose files are devices: opening the run (its
        // "Try it" target reads tokenizer_config.json) must not read /dev/zero for ever
        const fs::path r = run("20250101-000024-model-devzero", true);
        const fs::path model = r / "model", out = r / "out";
        fs::create_directories(model);
        fs::create_directories(out);
        write_file(model / "config.json", "{}");
        write_file(model / "tokenizer.json", "{}");
        fs::create_symlink("/dev/zero", model / "tokenizer_config.json");
        write_file(out / "adapter_config.json", "{}");
        write_file(out / "adapter_model.safetensors", "x");
        write_file(r / "plan.json", R"({"options":{"model_source":"folder","method":"lora","model_dir":")" + model.string() +
                                        R"("}})");
        std::ofstream(r / "events.jsonl", std::ios::app)
            << R"({"v":1,"event":"checkpoint","t":0.4,"path":")" << out.string() << "\"}\n";
    }
    {   // no result.json: ended with its launcher
        const fs::path r = run("20250101-000023-no-result", true);
        fs::remove(r / "result.json");
    }
    return expect;
}

}  // namespace wingspan::test
