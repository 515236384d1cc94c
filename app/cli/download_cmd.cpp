// `wingspan download`: hub::download_snapshot with progress on stderr and Ctrl-C as cancel.
#include "download_cmd.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <csignal>
#include <cstdio>
#include <ostream>

#include "cli.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/profiles.hpp"

namespace wingspan::cli {

namespace {

constexpr const char* kDownloadUsage =
    R"(usage: wingspan download OWNER/NAME [--revision R] [--include GLOB]... [--offline]

Downloads a model from the Hugging Face Hub into the Hugging Face cache
($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), shared with transformers.
Without --include: config, tokenizer and chat template files, and the safetensors weights.
A broken or cancelled download resumes where it stopped the next time. Progress goes to
stderr; the last line printed is the snapshot folder (give it to wingspan-train --model).
  --revision R     branch, tag or commit (default main)
  --include GLOB   only files matching GLOB ('*' matches across '/'); repeat or comma-separate
  --offline        answer from the cache only (also HF_HUB_OFFLINE=1)
Environment: HF_ENDPOINT, HF_TOKEN (gated models), HF_HOME, HF_HUB_CACHE.
Exit codes: 0 done, 2 bad input (id, unknown repo/revision, no access, not cached offline),
1 failure worth retrying (network, disk full, corrupted transfer).
)";

std::atomic<bool> g_cancel{false};
extern "C" void on_interrupt(int) { g_cancel.store(true); }

std::string human_bytes(double b) {
    const char* units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) {
        b /= 1000;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
    return buf;
}

std::string duration_text(double s) {
    char buf[32];
    if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
    else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
    return buf;
}

bool bad_input(hub::HubErrorKind k) {
    using K = hub::HubErrorKind;
    return k == K::InvalidId || k == K::NotFound || k == K::Unauthorized || k == K::NotCached ||
           k == K::UnsupportedConfig;
}

}  // namespace

int cmd_download(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    hub::DownloadOptions o;
    std::string repo;
    try {
        for (size_t i = 1; i < args.size(); ++i) {
            std::string a = args[i];
            std::optional<std::string> value;
            if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
                value = a.substr(eq + 1);
                a = a.substr(0, eq);
            }
            auto need_value = [&]() {
                if (value) return *value;
                if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
                return args[++i];
            };
            if (a == "--help" || a == "-h") {
                out << kDownloadUsage;
                return kExitOk;
            } else if (a == "--revision") {
                o.hub.revision = need_value();
            } else if (a == "--include") {
                std::string v = need_value(), item;
                for (size_t p = 0; p <= v.size(); ++p) {
                    if (p == v.size() || v[p] == ',') {
                        if (!item.empty()) o.include.push_back(item);
                        item.clear();
                    } else {
                        item += v[p];
                    }
                }
            } else if (a == "--offline") {
                o.hub.offline = true;
            } else if (a.rfind("--", 0) == 0) {
                throw InputError("unknown option " + a + " for download (did you mean " +
                                 closest_names(a, {"--revision", "--include", "--offline", "--help"}, 1).front() +
                                 "?)");
            } else if (repo.empty()) {
                repo = a;
            } else {
                throw InputError("unexpected argument '" + a + "': download takes one OWNER/NAME");
            }
        }
        if (repo.empty()) throw InputError("download needs a model id, e.g. `wingspan download HuggingFaceTB/SmolLM2-135M`");
    } catch (const InputError& e) {
        err << "wingspan: " << e.what() << "\n";
        return kExitBadInput;
    }

    const bool tty = ::isatty(2) == 1;
    auto last_line = std::chrono::steady_clock::now() - std::chrono::hours(1);
    hub::DownloadProgressCallback progress = [&](const hub::DownloadProgress& p) {
        auto now = std::chrono::steady_clock::now();
        const bool done = p.file.empty();
        if (!tty && !done && now - last_line < std::chrono::seconds(5)) return;   // logs: a line per 5 s
        last_line = now;
        std::string line = done ? "done" : "[" + std::to_string(p.file_index) + "/" + std::to_string(p.files) + "] " + p.file;
        line += "  " + human_bytes(double(p.done_bytes)) + " / " + human_bytes(double(p.total_bytes));
        if (p.total_bytes > 0) line += " (" + std::to_string(int(100.0 * p.done_bytes / p.total_bytes)) + " %)";
        if (p.bytes_per_second > 0) line += "  " + human_bytes(p.bytes_per_second) + "/s";
        if (p.eta_seconds && !done) line += "  ETA " + duration_text(*p.eta_seconds);
        if (tty) err << "\r\033[K" << line << (done ? "\n" : "") << std::flush;
        else err << line << "\n";
    };

    g_cancel.store(false);
    auto previous = std::signal(SIGINT, on_interrupt);
    auto restore = [&] { std::signal(SIGINT, previous); };
    try {
        err << "Downloading " << repo << " into " << o.hub_cache.string() << "\n";
        auto r = hub::download_snapshot(repo, o, progress, &g_cancel);
        restore();
        for (const auto& w : r.warnings) err << "warning: " << w << "\n";
        out << r.repo_id << " @ " << r.commit << ": " << r.files.size() << " files, "
            << human_bytes(double(r.bytes_downloaded)) << " downloaded, " << human_bytes(double(r.bytes_cached))
            << " already cached\n";
        out << r.snapshot.string() << "\n";
        return kExitOk;
    } catch (const hub::HubError& e) {
        restore();
        if (tty) err << "\n";
        err << "wingspan: [" << hub::hub_error_kind_name(e.kind()) << "] " << e.what() << "\n";
        return bad_input(e.kind()) ? kExitBadInput : kExitFailure;
    } catch (const std::exception& e) {
        restore();
        err << "wingspan: download failed: " << e.what() << "\n";
        return kExitFailure;
    }
}

}  // namespace wingspan::cli
