#include "wingspan/trainer_invocation.hpp"

#include "wingspan/errors.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace wingspan {

namespace {

std::string need_value(const std::vector<std::string>& a, size_t& i) {
    if (i + 1 >= a.size()) throw ArgError(a[i] + " needs a value");
    return a[++i];
}

std::int64_t to_int(const std::string& flag, const std::string& v, std::int64_t min_value) {
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0)
        throw ArgError(flag + " expects an integer, got \"" + v + "\"");
    if (x < min_value)
        throw ArgError(flag + " must be at least " + std::to_string(min_value) + ", got " + v);
    return x;
}

double to_double(const std::string& flag, const std::string& v) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(x))
        throw ArgError(flag + " expects a number, got \"" + v + "\"");
    return x;
}

// Bytes: a plain integer, or with a unit (KB, MB, GB, KiB, MiB, GiB).
std::int64_t to_bytes(const std::string& flag, const std::string& v) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    std::string unit(end);
    for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double mul = 0;
    if (unit.empty() || unit == "b") mul = 1;
    else if (unit == "kb" || unit == "k") mul = 1e3;
    else if (unit == "mb" || unit == "m") mul = 1e6;
    else if (unit == "gb" || unit == "g") mul = 1e9;
    else if (unit == "kib") mul = 1024.0;
    else if (unit == "mib") mul = 1024.0 * 1024;
    else if (unit == "gib") mul = 1024.0 * 1024 * 1024;
    if (v.empty() || end == v.c_str() || mul == 0 || !(x > 0) || !std::isfinite(x))
        throw ArgError(flag + " expects a positive byte count (e.g. 2000000000 or 2GB), got \"" + v + "\"");
    return static_cast<std::int64_t>(x * mul);
}

// The flags that set a whole number and check only its least value, with where each goes.
struct WholeNumberFlag {
    const char* flag;
    std::int64_t TrainerInvocation::*field;
    std::int64_t least;
};
constexpr WholeNumberFlag kWholeNumberFlags[] = {
    {"--rank", &TrainerInvocation::rank, 1},
    {"--seq", &TrainerInvocation::seq, 2},
    {"--batch", &TrainerInvocation::batch, 1},
    {"--grad-accum", &TrainerInvocation::grad_accum, 1},
    {"--steps", &TrainerInvocation::steps, 1},
    {"--epochs", &TrainerInvocation::epochs, 1},
    {"--warmup-steps", &TrainerInvocation::warmup_steps, 0},
    {"--eval-every", &TrainerInvocation::eval_every, 0},
    {"--eval-batches", &TrainerInvocation::eval_batches, 1},
    {"--save-every", &TrainerInvocation::save_every, 0},
    {"--sample-tokens", &TrainerInvocation::sample_tokens, 0},
    {"--sample-every-ms", &TrainerInvocation::sample_every_ms, 1},
    {"--loss-scale-growth", &TrainerInvocation::loss_scale_growth, 1},
};

// --optimizer-in-backward steps each parameter as soon as its gradient is ready, so nothing that
// needs all the gradients first can run; torchtune refuses clipping and accumulation with it the
// same way (pytorch/torchtune recipes/full_finetune_single_device.py,
// FullFinetuneRecipeSingleDevice.__init__: "Gradient clipping is not supported with optimizer in
// bwd", "Gradient accumulation is not supported with optimizer in bwd").
void check_optimizer_in_backward(TrainerInvocation& o) {
    const std::string flag = "--optimizer-in-backward";
    if (o.max_grad_norm_given && o.max_grad_norm > 0)
        throw ArgError(flag + " steps each parameter before the gradient norm over all of them exists, so "
                              "--max-grad-norm cannot clip: leave --max-grad-norm out or set it to 0");
    o.max_grad_norm = 0;   // the default clipping (1.0) is off with the step in backward
    if (o.grad_accum > 1)
        throw ArgError(flag + " steps each gradient as it is made: it cannot accumulate over --grad-accum " +
                       std::to_string(o.grad_accum) + " micro-batches (use --grad-accum 1)");
    if (o.nproc > 1) throw ArgError(flag + " trains on one process: leave --nproc out");
    if (!o.precision_auto && o.precision == Precision::Fp16Mixed)
        throw ArgError(flag + " cannot skip a step whose fp16 gradients overflowed (fp16-mixed's loss scaling "
                              "decides that after all gradients exist): use --precision bf16-mixed or fp32");
}

}  // namespace

std::string trainer_usage() {
    return "usage: wingspan-train [--model DIR] [--data FILE] --method full|lora|qlora [--rank R]\n"
           "         [--alpha A] [--dropout P] [--targets q,k,v,o,gate,up,down|all]\n"
           "         [--precision auto|fp32|bf16-mixed|bf16|fp16-mixed] [--seq N] [--batch N] [--grad-accum N]\n"
           "         [--steps N|--epochs N] [--lr X] [--grad-checkpointing] [--optimizer-in-backward] [--out DIR]\n"
           "         [--resume DIR] [--memory-limit BYTES] [--threads N]\n"
           "       more: [--tokenizer FILE] [--seed N] [--weight-decay X] [--max-grad-norm X]\n"
           "         [--warmup-steps N] [--eval-every N] [--eval-fraction X] [--eval-batches N]\n"
           "         [--save-every N] [--sample-tokens N] [--sample-every-ms N]\n"
           "         [--padding packed|dynamic|max]   (--no-packing: --padding max)\n"
           "         [--attention eager|sdpa] [--device auto|cpu|cuda|cuda:N|mps]\n"
           "         [--initial-loss-scale X] [--loss-scale-growth N]   (fp16-mixed)\n"
           "       preference tuning: [--objective sft|dpo|orpo] [--beta X]   (data rows: prompt/chosen/rejected)\n"
           "       wingspan-train devices   (one JSON object: the devices this build can train on)\n"
           "         [--chat-format chatml|llama3|llama2|mistral|zephyr|gemma|phi3]\n"
           "       --model takes a folder, a Hugging Face cache snapshot, or OWNER/NAME[@REVISION]\n"
           "         already in the cache (wingspan download OWNER/NAME puts it there)\n"
           "       ranks: [--nproc N] [--sharding ddp|zero1|zero2] [--dist-timeout SECONDS]\n"
           "         (or RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT as torchrun sets them)\n"
           "       wingspan-train tokenize [--tokenizer FILE]   (stdin text -> JSON array of ids)\n"
           "stdout carries run-protocol JSON lines only (docs/protocol.md).\n";
}

TrainerInvocation TrainerInvocation::from_args(const std::vector<std::string>& a, bool& help) {
    TrainerInvocation o;
    help = false;
    for (size_t i = 0; i < a.size(); ++i) {
        const std::string& f = a[i];
        const auto whole = std::find_if(std::begin(kWholeNumberFlags), std::end(kWholeNumberFlags),
                                        [&](const WholeNumberFlag& w) { return f == w.flag; });
        if (whole != std::end(kWholeNumberFlags)) {
            o.*(whole->field) = to_int(f, need_value(a, i), whole->least);
            continue;
        }
        if (f == "--help" || f == "-h") {
            help = true;
        } else if (f == "--model") {
            o.model_dir = need_value(a, i);
        } else if (f == "--data") {
            o.data_file = need_value(a, i);
        } else if (f == "--tokenizer") {
            o.tokenizer_file = need_value(a, i);
        } else if (f == "--chat-format") {
            o.chat_format = need_value(a, i);
        } else if (f == "--method") {
            const std::string v = need_value(a, i);
            if (v == "full") o.method = Method::Full;
            else if (v == "lora") o.method = Method::Lora;
            else if (v == "qlora") o.method = Method::Qlora;
            else throw ArgError("--method: unknown method \"" + v + "\" (use full, lora or qlora)");
            o.method_given = true;
        } else if (f == "--alpha") {
            o.alpha = to_double(f, need_value(a, i));
        } else if (f == "--dropout") {
            o.dropout = to_double(f, need_value(a, i));
            if (o.dropout < 0 || o.dropout >= 1) throw ArgError("--dropout must be in [0, 1)");
        } else if (f == "--targets") {
            try {
                o.targets = parse_targets(need_value(a, i));
            } catch (const InputError& e) {
                throw ArgError("--targets: " + std::string(e.what()));
            }
            if (o.targets.count(LinearRole::Head))
                throw ArgError("--targets: wingspan-train puts adapters on the decoder layers' linears only; 'head' (LoRA on "
                               "the LM head) is planned for LitGPT, PEFT and torchtune, not trained here");
        } else if (f == "--precision") {
            const std::string v = need_value(a, i);
            o.precision_auto = v == "auto";
            if (v == "auto") o.precision = Precision::Fp32;   // resolved once the device is known
            else if (v == "fp32") o.precision = Precision::Fp32;
            else if (v == "bf16-mixed") o.precision = Precision::Bf16Mixed;
            else if (v == "bf16") o.precision = Precision::Bf16;
            else if (v == "fp16-mixed") o.precision = Precision::Fp16Mixed;
            else throw ArgError("--precision: unknown precision \"" + v + "\" (use auto, fp32, bf16-mixed, bf16 or fp16-mixed)");
        } else if (f == "--lr") {
            o.lr = to_double(f, need_value(a, i));
            if (*o.lr <= 0) throw ArgError("--lr must be positive");
        } else if (f == "--weight-decay") {
            o.weight_decay = to_double(f, need_value(a, i));
        } else if (f == "--max-grad-norm") {
            o.max_grad_norm = to_double(f, need_value(a, i));
            o.max_grad_norm_given = true;
        } else if (f == "--grad-checkpointing") {
            o.grad_checkpointing = true;
        } else if (f == "--optimizer-in-backward") {
            o.optimizer_in_backward = true;
        } else if (f == "--no-packing") {
            o.padding = Padding::Max;   // its meaning before --padding: one example per row, padded to --seq
        } else if (f == "--padding") {
            try {
                o.padding = parse_padding(need_value(a, i));
            } catch (const InputError& e) {
                throw ArgError(e.what());
            }
        } else if (f == "--out") {
            o.out_dir = need_value(a, i);
        } else if (f == "--resume") {
            o.resume_dir = need_value(a, i);
        } else if (f == "--memory-limit") {
            o.memory_limit = to_bytes(f, need_value(a, i));
            // 0 would mean "no limit": a tiny value must not silently turn the limit off.
            if (o.memory_limit < kMinMemoryLimit)
                throw ArgError("--memory-limit of " + std::to_string(o.memory_limit) +
                               " bytes is too small to run anything (at least " + std::to_string(kMinMemoryLimit) +
                               " bytes, e.g. 2GB)");
        } else if (f == "--threads") {
            o.threads = static_cast<int>(to_int(f, need_value(a, i), 1));
        } else if (f == "--seed") {
            o.seed = static_cast<std::uint64_t>(to_int(f, need_value(a, i), 0));
        } else if (f == "--eval-fraction") {
            o.eval_fraction = to_double(f, need_value(a, i));
            if (o.eval_fraction < 0 || o.eval_fraction >= 1) throw ArgError("--eval-fraction must be in [0, 1)");
        } else if (f == "--initial-loss-scale") {
            o.initial_loss_scale = to_double(f, need_value(a, i));
            if (!(o.initial_loss_scale >= 1)) throw ArgError("--initial-loss-scale must be at least 1");
        } else if (f == "--device") {
            o.device = need_value(a, i);   // checked against the machine by device.cpp
        } else if (f == "--attention") {
            o.attention = need_value(a, i);
            if (o.attention != "eager" && o.attention != "sdpa")
                throw ArgError("--attention: use eager or sdpa");
        } else if (f == "--nproc") {
            o.nproc = static_cast<int>(to_int(f, need_value(a, i), 1));
            if (o.nproc > 256) throw ArgError("--nproc: at most 256 ranks on one machine");
        } else if (f == "--sharding") {
            const std::string v = need_value(a, i);
            if (v == "ddp") o.sharding = Sharding::Ddp;
            else if (v == "zero1") o.sharding = Sharding::Zero1;
            else if (v == "zero2") o.sharding = Sharding::Zero2;
            else throw ArgError("--sharding: unknown sharding \"" + v + "\" (use ddp, zero1 or zero2)");
        } else if (f == "--dist-timeout") {
            o.dist_timeout_s = static_cast<int>(to_int(f, need_value(a, i), 1));
        } else if (f == "--objective") {
            const std::string v = need_value(a, i);
            if (v == "sft") o.objective = Objective::Sft;
            else if (v == "dpo") o.objective = Objective::Dpo;
            else if (v == "orpo") o.objective = Objective::Orpo;
            else throw ArgError("--objective: wingspan-train trains sft, dpo or orpo, not \"" + v + "\"");
        } else if (f == "--beta") {
            o.beta = to_double(f, need_value(a, i));
            if (!(*o.beta > 0) || *o.beta > 1000) throw ArgError("--beta must be in (0, 1000]");
        } else {
            throw ArgError("unknown argument \"" + f + "\"");
        }
    }
    if (help) return o;
    if (!o.method_given) throw ArgError("--method is required (full, lora or qlora)");
    if (o.steps > 0 && o.epochs > 0) throw ArgError("give --steps or --epochs, not both");
    if (o.beta && o.objective == Objective::Sft) throw ArgError("--beta applies to --objective dpo or orpo");
    if (o.objective != Objective::Sft && o.nproc > 1)
        throw ArgError("--objective " + std::string(to_string(o.objective)) + " trains on one process: leave --nproc out");
    if (o.method != Method::Full && o.rank > 4096) throw ArgError("--rank is implausibly large");
    if (o.optimizer_in_backward) check_optimizer_in_backward(o);
    return o;
}

namespace {

// The shortest text that reads back as the same double (to_chars' round-trip guarantee).
std::string exact(double x) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, r.ptr);
}

}  // namespace

std::vector<std::string> TrainerInvocation::to_args() const {
    const TrainerInvocation d;   // the defaults, which from_args() starts from
    std::vector<std::string> a;
    auto flag = [&](const char* f, const std::string& v) {
        a.push_back(f);
        a.push_back(v);
    };
    auto text = [&](const char* f, const std::string& v, const std::string& fallback) {
        if (v != fallback) flag(f, v);
    };
    auto number = [&](const char* f, auto v, auto fallback) {
        if (v != fallback) flag(f, std::to_string(v));
    };
    auto real = [&](const char* f, double v, double fallback) {
        if (v != fallback) flag(f, exact(v));
    };
    text("--model", model_dir, d.model_dir);
    text("--data", data_file, d.data_file);
    text("--tokenizer", tokenizer_file, d.tokenizer_file);
    text("--chat-format", chat_format, d.chat_format);
    flag("--method", to_string(method));
    if (objective != d.objective) flag("--objective", to_string(objective));
    if (beta) flag("--beta", exact(*beta));
    if (method != Method::Full) {
        flag("--rank", std::to_string(rank));
        flag("--alpha", exact(alpha));
    }
    real("--dropout", dropout, d.dropout);
    if (targets != d.targets) flag("--targets", targets_to_string(targets));
    flag("--precision", precision_auto ? "auto" : to_string(precision));
    flag("--seq", std::to_string(seq));
    flag("--batch", std::to_string(batch));
    number("--grad-accum", grad_accum, d.grad_accum);
    number("--steps", steps, d.steps);
    number("--epochs", epochs, d.epochs);
    if (lr) flag("--lr", exact(*lr));
    real("--weight-decay", weight_decay, d.weight_decay);
    if (max_grad_norm_given) flag("--max-grad-norm", exact(max_grad_norm));
    number("--warmup-steps", warmup_steps, d.warmup_steps);
    if (grad_checkpointing) a.push_back("--grad-checkpointing");
    if (optimizer_in_backward) a.push_back("--optimizer-in-backward");
    if (padding != d.padding) flag("--padding", to_string(padding));
    text("--out", out_dir, d.out_dir);
    text("--resume", resume_dir, d.resume_dir);
    number("--memory-limit", memory_limit, d.memory_limit);
    number("--threads", threads, d.threads);
    number("--seed", seed, d.seed);
    number("--eval-every", eval_every, d.eval_every);
    real("--eval-fraction", eval_fraction, d.eval_fraction);
    number("--eval-batches", eval_batches, d.eval_batches);
    number("--save-every", save_every, d.save_every);
    number("--sample-tokens", sample_tokens, d.sample_tokens);
    number("--sample-every-ms", sample_every_ms, d.sample_every_ms);
    text("--attention", attention, d.attention);
    real("--initial-loss-scale", initial_loss_scale, d.initial_loss_scale);
    number("--loss-scale-growth", loss_scale_growth, d.loss_scale_growth);
    text("--device", device, d.device);
    number("--nproc", nproc, d.nproc);
    if (nproc > 1 || sharding != d.sharding) flag("--sharding", to_string(sharding));
    number("--dist-timeout", dist_timeout_s, d.dist_timeout_s);
    return a;
}

}  // namespace wingspan
