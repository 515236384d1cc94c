#pragma once
// A seeded random mutator for the parsers we own (g++ only here, so no libFuzzer): starts
// from the committed corpus, mutates bytes and JSON structure, and feeds each input to the
// target for a bounded time. A crash, a hang (SIGALRM after kInputSeconds), or an exception
// other than the target's clean error fails the run and leaves the input in
// $WINGSPAN_FUZZ_OUT (default: the working folder) as fuzz-failure-<target>.bin.
//
// Reproduce: WINGSPAN_FUZZ_SEED=<seed> WINGSPAN_FUZZ_SECONDS=<s> ./fuzz_<target>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace wingspan::fuzz {

inline constexpr unsigned kInputSeconds = 10;

inline std::string g_current;     // the input being run (for the alarm handler)
inline std::string g_fail_path;

inline void save_failure(const std::string& input) {
    std::ofstream(g_fail_path, std::ios::binary) << input;
}

extern "C" inline void on_alarm(int) {
    // Not async-signal-safe in general, but the process is about to die anyway.
    const char msg[] = "fuzz: an input ran longer than the limit (hang); saved\n";
    (void)!::write(2, msg, sizeof msg - 1);
    save_failure(g_current);
    std::_Exit(3);
}

extern "C" inline void on_crash(int sig) {
    const char msg[] = "fuzz: the target crashed; the input is saved\n";
    (void)!::write(2, msg, sizeof msg - 1);
    save_failure(g_current);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

class Mutator {
public:
    explicit Mutator(std::uint64_t seed) : rng_(seed) {}

    std::string mutate(const std::string& base, const std::vector<std::string>& corpus) {
        std::string s = base;
        const int rounds = 1 + int(pick(4));
        for (int r = 0; r < rounds; ++r) {
            switch (pick(9)) {
                case 0: if (!s.empty()) s[pick(s.size())] = char(pick(256)); break;              // byte
                case 1: if (!s.empty()) s.erase(pick(s.size()), 1 + pick(8)); break;              // delete
                case 2: s.insert(pick(s.size() + 1), 1, char(pick(256))); break;                 // insert
                case 3: s.insert(pick(s.size() + 1), token()); break;                            // JSON token
                case 4: {                                                                        // duplicate
                    if (s.empty()) break;
                    const size_t a = pick(s.size()), n = 1 + pick(std::min<size_t>(64, s.size() - a));
                    s.insert(pick(s.size() + 1), s.substr(a, n));
                    break;
                }
                case 5: {                                                                        // splice
                    const std::string& o = corpus[pick(corpus.size())];
                    if (o.empty() || s.empty()) break;
                    s = s.substr(0, pick(s.size())) + o.substr(pick(o.size()));
                    break;
                }
                case 6: {                                                                        // deep nesting
                    const size_t depth = 1 + pick(pick(2) ? 200 : 20000);
                    const size_t at = pick(s.size() + 1);
                    s.insert(at, std::string(depth, pick(2) ? '[' : '{'));
                    break;
                }
                case 7: {                                                                        // number swap
                    const size_t at = s.find_first_of("0123456789", pick(s.size() + 1));
                    if (at == std::string::npos) break;
                    size_t end = at;
                    while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.')) ++end;
                    s.replace(at, end - at, number());
                    break;
                }
                default: if (s.size() > 1) s.resize(pick(s.size())); break;                      // truncate
            }
        }
        return s;
    }

private:
    size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }
    std::string token() {
        static const char* kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "null", "true", "false", "\"\"",
                                        "{}", "[]", "\\u0000", "\\ud800", "\"a\":", "-", "1e999", "NaN"};
        return kTokens[pick(std::size(kTokens))];
    }
    std::string number() {
        static const char* kNumbers[] = {"0", "-1", "1", "2147483647", "2147483648", "4294967296",
                                         "9223372036854775807", "9223372036854775808", "18446744073709551615",
                                         "4611686018427387904", "-9223372036854775808", "1e308", "0.5", "1e-9",
                                         "99999999999999999999999"};
        return kNumbers[pick(std::size(kNumbers))];
    }
    std::mt19937_64 rng_;
};

inline std::vector<std::string> load_corpus(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::ifstream in(e.path(), std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        out.push_back(ss.str());
    }
    if (out.empty()) out.push_back("{}");
    return out;
}

// `target` returns normally or throws `Clean` (the parser's documented error); anything else
// is a finding. Returns the process exit code.
template <typename Clean>
int run(const char* name, const std::filesystem::path& corpus_dir, const std::function<void(const std::string&)>& target) {
    const char* seed_env = std::getenv("WINGSPAN_FUZZ_SEED");
    const char* secs_env = std::getenv("WINGSPAN_FUZZ_SECONDS");
    const char* out_env = std::getenv("WINGSPAN_FUZZ_OUT");
    const std::uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : 11;
    const double seconds = secs_env ? std::atof(secs_env) : 3.0;
    g_fail_path = (std::filesystem::path(out_env ? out_env : ".") / (std::string("fuzz-failure-") + name + ".bin")).string();
    std::signal(SIGALRM, on_alarm);
    for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS}) std::signal(sig, on_crash);

    const std::vector<std::string> corpus = load_corpus(corpus_dir);
    Mutator m(seed);
    std::mt19937_64 pick_rng(seed ^ 0x9e3779b97f4a7c15ull);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::size_t runs = 0, clean_errors = 0;
    auto one = [&](const std::string& input) -> bool {
        g_current = input;
        ::alarm(kInputSeconds);
        try {
            target(input);
        } catch (const Clean&) {
            ++clean_errors;
        } catch (const std::exception& e) {
            ::alarm(0);
            save_failure(input);
            std::cerr << "fuzz " << name << ": unexpected exception after " << runs << " inputs: " << e.what()
                      << "\n  input saved to " << g_fail_path << " (seed " << seed << ")\n";
            return false;
        }
        ::alarm(0);
        ++runs;
        return true;
    };
    for (const auto& c : corpus)
        if (!one(c)) return 1;
    while (std::chrono::steady_clock::now() < until) {
        const std::string& base = corpus[std::uniform_int_distribution<size_t>(0, corpus.size() - 1)(pick_rng)];
        if (!one(m.mutate(base, corpus))) return 1;
    }
    std::cout << "fuzz " << name << ": " << runs << " inputs (" << clean_errors << " clean errors), seed " << seed
              << ", corpus " << corpus.size() << " files, no crash, hang or unexpected exception\n";
    return 0;
}

}  // namespace wingspan::fuzz
