// Issue 30 item 3: vLLM's gpu_memory_utilization share as a profile of its own
// (core/src/serving/vllm_serve.cpp, profiles/serving/vllm.json, `wingspan plan --framework vllm`).
#include <QtTest>

#include <nlohmann/json.hpp>

#include "cli_result.hpp"
#include "test_support.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/vllm_serve.hpp"

using namespace wingspan;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const vllm::Profile& profile() {
    static const vllm::Profile p = vllm::load_profile(ProfileLibrary::default_dir());
    return p;
}
}  // namespace

class VllmServeTest : public QObject {
    Q_OBJECT
private slots:
    // The block math against what vLLM printed: Llama-3.1-8B on an RTX 3090 (vllm-project/vllm
    // #10517: "GPU blocks: 1952", "Maximum concurrency for 20000 tokens per request: 1.56x";
    // 29000: 1478 blocks, "the maximum number of tokens that can be stored in KV cache (23648)",
    // 0.82x) and Qwen3-14B (LMCache#1739: "Available KV cache memory: 6.51 GiB", "GPU KV cache
    // size: 42,656 tokens", "Maximum concurrency for 32,768 tokens per request: 1.30x").
    void blockMathMatchesPublishedLogs() {
        const Architecture llama = test::library().model("llama-3.1-8b").arch;
        const std::uint64_t block = vllm::block_bytes(llama, 16, 2, 1);
        QCOMPARE(block, std::uint64_t(2) << 20);   // 2 × 16 tokens × 8 KV heads × 128 × 2 B × 32 layers
        QCOMPARE(vllm::blocks_for(std::int64_t(1952) * std::int64_t(block), block), std::int64_t(1952));
        QCOMPARE(QString::number(1952.0 * 16 / 20000, 'f', 2), QString("1.56"));
        QCOMPARE(1478 * 16, 23648);
        QCOMPARE(QString::number(23648.0 / 29000, 'f', 2), QString("0.82"));
        const Architecture qwen = test::library().model("qwen3-14b").arch;
        const auto qblock = vllm::block_bytes(qwen, 16, 2, 1);
        QCOMPARE(qblock, std::uint64_t(2) * 16 * 8 * 128 * 2 * 40);
        const auto tokens = vllm::blocks_for(std::int64_t(6.51 * kGiB), qblock) * 16;
        QCOMPARE(tokens, std::int64_t(42656));
        QCOMPARE(QString::number(double(tokens) / 32768, 'f', 2), QString("1.30"));
        // Tensor parallelism splits the KV heads, never below one a GPU.
        QCOMPARE(vllm::block_bytes(llama, 16, 2, 2), block / 2);
        QCOMPARE(vllm::block_bytes(llama, 16, 2, 16), block / 8);
        QCOMPARE(vllm::block_bytes(llama, 16, 1, 1), block / 2);   // an fp8 cache
    }
    // The reservation: requested = utilization × total; the KV cache is what the weights, the
    // profile run and memory outside PyTorch leave, in whole blocks.
    void reservationArithmetic() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        vllm::Options o;
        o.max_model_len = 20000;
        o.gpu_memory_utilization = 0.9;
        const std::uint64_t total = std::uint64_t(23.58 * kGiB);
        const auto p = vllm::plan(a, profile(), o, total);
        QCOMPARE(p.requested, std::uint64_t(double(total) * 0.9));
        QCOMPARE(p.kv_available, std::int64_t(p.requested) - std::int64_t(p.weights + p.activation_peak + p.non_torch));
        QCOMPARE(p.num_blocks, p.kv_available / std::int64_t(p.block_bytes));
        QCOMPARE(p.kv_tokens, p.num_blocks * 16);
        QCOMPARE(p.max_num_batched_tokens, std::int64_t(20000));   // max(max_model_len, 2048) without chunked prefill
        QCOMPARE(p.max_num_seqs, std::int64_t(256));
        // Weights: 8.03 B parameters in bf16, "Loading model weights took 14.9888 GB" in the log.
        QVERIFY(std::abs(double(p.weights) / kGiB - 14.9888) < 0.05);
        // The forward over 20,000 tokens: (2 × 4096 + 3 × 14336) × 2 B a token.
        QCOMPARE(p.forward_peak, std::uint64_t(20000) * (2 * 4096 + 3 * 14336) * 2);
        QCOMPARE(p.activation_peak, std::max(p.forward_peak, p.sampler_peak));
        // A longer context profiles a longer batch: more activation, fewer blocks.
        o.max_model_len = 29000;
        const auto longer = vllm::plan(a, profile(), o, total);
        QVERIFY(longer.activation_peak > p.activation_peak);
        QVERIFY(longer.num_blocks < p.num_blocks);
        // Two GPUs: half the weights each, half the KV heads in a block.
        o.tensor_parallel = 2;
        const auto tp2 = vllm::plan(a, profile(), o, total);
        QCOMPARE(tp2.weights, longer.weights / 2);
        QCOMPARE(tp2.block_bytes, longer.block_bytes / 2);
        // Too little memory: a negative KV budget and no blocks, as vLLM's "-1.05GiB" and "# cuda blocks: 0".
        o.tensor_parallel = 1;
        const auto small = vllm::plan(a, profile(), o, std::uint64_t(8 * kGiB));
        QVERIFY(small.kv_available < 0);
        QCOMPARE(small.num_blocks, std::int64_t(0));
        QCOMPARE(small.max_concurrency, 0.0);
    }
    void hostileInputIsAnError() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        vllm::Options o;
        o.tensor_parallel = 0;
        QVERIFY_THROWS_EXCEPTION(InputError, vllm::plan(a, profile(), o, 1ull << 34));
        o.tensor_parallel = 1;
        o.gpu_memory_utilization = 1.5;
        QVERIFY_THROWS_EXCEPTION(InputError, vllm::plan(a, profile(), o, 1ull << 34));
        QVERIFY_THROWS_EXCEPTION(InputError, vllm::parse_profile(nlohmann::json{{"block_size", 0}}, "test"));
        QVERIFY_THROWS_EXCEPTION(InputError, vllm::parse_profile(nlohmann::json{{"gpu_memory_utilization", "most"}}, "test"));
        QVERIFY_THROWS_EXCEPTION(InputError, vllm::parse_profile(nlohmann::json::array(), "test"));
    }
    void commandLine() {
        const auto r = test::run_cli({"plan", "--method", "serve", "--framework", "vllm", "--model", "llama-3.1-8b", "--ctx",
                                      "20000", "--machine", "rtx-3090", "--json"});
        QCOMPARE(r.code, 0);
        const auto j = nlohmann::json::parse(r.out);
        QCOMPARE(j["runtime"].get<std::string>(), std::string("vllm"));
        const auto& m = j["machines"][0];
        QCOMPARE(m["kv_cache_tokens"].get<std::int64_t>(), m["gpu_blocks"].get<std::int64_t>() * 16);
        QCOMPARE(m["max_concurrency"].get<double>(), m["kv_cache_tokens"].get<double>() / 20000);
        QCOMPARE(m["settings"]["max_model_len"].get<std::int64_t>(), std::int64_t(20000));
        QCOMPARE(m["verdict"].get<std::string>(), std::string("fits"));
        // An 8 GB card cannot hold Llama-3.1-8B's 15 GiB of bf16 weights.
        const auto small = test::run_cli({"plan", "--method", "serve", "--framework", "vllm", "--model", "llama-3.1-8b",
                                          "--ctx", "4096", "--machine", "rtx-3060-12gb"});
        QCOMPARE(small.code, 0);
        QVERIFY(small.out.find("does not fit") != std::string::npos);
        for (const auto& bad : std::vector<std::vector<std::string>>{
                 {"plan", "--method", "serve", "--framework", "vllm", "--gpu-memory-utilization", "1.5"},
                 {"plan", "--method", "serve", "--framework", "vllm", "--tensor-parallel", "0"},
                 {"plan", "--method", "serve", "--framework", "vllm", "--kv-type", "q4_0"},
                 {"plan", "--method", "lora", "--framework", "vllm"},
                 {"plan", "--method", "serve", "--framework", "vllm", "--machine", "cpu-laptop-8gb"},
                 {"plan", "--method", "serve", "--framework", "vllm", "--gguf", "x.gguf"}}) {
            const auto b = test::run_cli(bad);
            QVERIFY2(b.code != 0 && !b.err.empty(), qPrintable(QString::fromStdString(bad.back())));
        }
    }
};

QTEST_GUILESS_MAIN(VllmServeTest)
#include "test_vllm_serve.moc"
