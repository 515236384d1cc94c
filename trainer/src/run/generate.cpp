// Generation: the model (and a run's LoRA adapters) loaded as training loads them, the prompt
// tokenized plain or through the model's chat template, then one token at a time with the
// decoder's KV cache, sampled with temperature and top-p, until an end token or the limit.
#include "run/generate.hpp"

#include <ATen/core/DistributionsHelper.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>   // at::NoGradGuard (torch 2.x no longer brings it in through the others)

#include <fstream>
#include <set>
#include <iostream>

#include <nlohmann/json.hpp>

#include "model/adapter_config.hpp"
#include "wingspan/trainer_invocation.hpp"
#include "chat_format.hpp"
#include "model/model.hpp"
#include "model/model_source.hpp"
#include "tokenizer.hpp"
#include "model/weights_io.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Args {
    std::string model, adapter, prompt, chat_format;
    bool chat = false;
    std::int64_t max_tokens = 128;
    double temperature = 0.7, top_p = 0.9;
    std::uint64_t seed = 0;
};

Args parse(const std::vector<std::string>& a) {
    Args o;
    bool prompt_given = false;
    for (size_t i = 0; i < a.size(); ++i) {
        auto value = [&]() -> std::string {
            if (i + 1 >= a.size()) throw InputError(a[i] + " needs a value");
            return a[++i];
        };
        auto number = [&](const std::string& flag) {
            const std::string v = value();
            try {
                size_t used = 0;
                double d = std::stod(v, &used);
                if (used != v.size()) throw 0;
                return d;
            } catch (...) {
                throw InputError(flag + ": \"" + v + "\" is not a number");
            }
        };
        const std::string f = a[i];
        if (f == "--model") o.model = value();
        else if (f == "--adapter") o.adapter = value();
        else if (f == "--prompt") o.prompt = value(), prompt_given = true;
        else if (f == "--chat") o.chat = true;
        else if (f == "--chat-format") o.chat_format = value();
        else if (f == "--max-tokens") o.max_tokens = static_cast<std::int64_t>(number(f));
        else if (f == "--temperature") o.temperature = number(f);
        else if (f == "--top-p") o.top_p = number(f);
        else if (f == "--seed") o.seed = static_cast<std::uint64_t>(number(f));
        else throw InputError("generate: unknown argument \"" + f + "\"");
    }
    if (o.model.empty() || !prompt_given)
        throw InputError("usage: wingspan-train generate --model DIR [--adapter DIR] --prompt TEXT [--chat] "
                         "[--max-tokens N] [--temperature T] [--top-p P] [--seed S] [--chat-format NAME]");
    if (o.max_tokens < 1 || o.max_tokens > 1'000'000) throw InputError("--max-tokens must be 1 .. 1000000");
    if (o.temperature < 0) throw InputError("--temperature must be 0 (greedy) or more");
    if (!(o.top_p > 0 && o.top_p <= 1)) throw InputError("--top-p must be in (0, 1]");
    return o;
}

int generate(const Args& a) {
    const fs::path dir = resolve_model_argument(a.model);
    const json config = read_json_object(dir / "config.json");
    ModelConfig cfg = ModelConfig::from_hf(config);
    if (!fs::exists(dir / "tokenizer.json")) throw InputError("--model: " + dir.string() + " has no tokenizer.json");
    auto tok = Tokenizer::from_file(dir / "tokenizer.json");
    auto reader = WeightReader::open_dir(dir);
    if (!reader) throw InputError("--model: " + dir.string() + " has no safetensors weights");
    std::vector<std::string> ignored;
    check_weights(*reader, expected_tensors(cfg), ignored);

    ModelOptions mo;
    mo.method = Method::Full;
    std::map<std::string, at::Tensor> adapter;
    if (!a.adapter.empty()) {
        const fs::path adir = adapter_dir_of(a.adapter);
        // Checked against the base and the adapter file's shapes before anything is allocated.
        const AdapterConfig ac = read_adapter_config(adir, base_shape_of(*reader));
        mo.method = Method::Lora;
        mo.rank = ac.rank;
        mo.alpha = ac.alpha;
        mo.targets = ac.targets;
        adapter = load_safetensors(adir / "adapter_model.safetensors");
    }
    at::NoGradGuard no_grad;
    Model model(cfg, mo);
    model.build([&](const std::string& name, const std::vector<std::int64_t>&) { return reader->read(name); }, a.seed);
    if (!adapter.empty()) model.init_adapters(a.seed);
    std::size_t loaded = 0;
    for (auto& nt : model.tensors()) {
        if (auto it = adapter.find(nt.name); it != adapter.end()) {
            if (it->second.sizes() != nt.tensor.sizes()) throw InputError("the adapter's " + nt.name + " has another shape than the model's");
            nt.tensor.copy_(it->second);
            ++loaded;
        }
    }
    if (!adapter.empty() && loaded != adapter.size())
        throw InputError("the adapter holds " + std::to_string(adapter.size()) + " tensors, " + std::to_string(loaded) +
                         " of which fit this model (another base model?)");

    // The prompt, and which tokens end the answer.
    std::vector<std::int64_t> ids;
    std::set<std::int64_t> stop;
    if (auto e = tok->eos_id()) stop.insert(*e);
    if (a.chat) {
        const ChatFormat f = chat_format_for_model(*tok, dir, a.chat_format);
        for (auto id : render_chat({{"user", a.prompt}}, *tok, f, true).ids) ids.push_back(id);
        if (f.eos >= 0) stop.insert(f.eos);
        for (const char* end : {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>"})
            if (auto id = tok->token_id(end)) stop.insert(*id);
    } else {
        if (tok->adds_bos()) ids.push_back(*tok->bos_id());
        for (auto id : tok->encode(a.prompt)) ids.push_back(id);
    }
    if (ids.empty()) throw InputError("--prompt: the prompt has no tokens");
    const std::int64_t room = std::max<std::int64_t>(1, cfg.max_positions - a.max_tokens);
    if (static_cast<std::int64_t>(ids.size()) > room) ids.erase(ids.begin(), ids.end() - room);

    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(a.seed);
    Model::KvCache cache;
    at::Tensor input = at::tensor(ids, at::kLong).unsqueeze(0);
    std::vector<std::int32_t> out;
    std::string printed;
    for (std::int64_t t = 0; t < a.max_tokens; ++t) {
        const at::Tensor h = model.hidden_states(input, false, &cache);
        const at::Tensor logits = model.logits(h.select(1, h.size(1) - 1).squeeze(0));   // Gemma 2: soft-capped
        const std::int64_t next = sample_token(logits, a.temperature, a.top_p, gen);
        if (stop.count(next)) break;
        out.push_back(static_cast<std::int32_t>(next));
        // Print what is new; a token that ends inside a UTF-8 character waits for the next.
        const std::string text = tok->decode(out, true);
        if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
            std::cout << text.substr(printed.size()) << std::flush;
            printed = text;
        }
        input = at::full({1, 1}, next, at::kLong);
    }
    const std::string text = tok->decode(out, true);
    if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) std::cout << text.substr(printed.size());
    std::cout << std::endl;
    std::cerr << out.size() << " tokens\n";
    return 0;
}

}  // namespace

std::int64_t sample_token(const at::Tensor& logits, double temperature, double top_p, at::Generator& gen) {
    if (temperature <= 0) return logits.argmax().item<std::int64_t>();
    const at::Tensor probs = at::softmax(logits.to(at::kDouble) / temperature, -1);
    auto [sorted, order] = probs.sort(-1, true);
    const at::Tensor cum = sorted.cumsum(-1);
    // Keep tokens until the probability before them reaches top_p (the first always stays).
    const at::Tensor keep = (cum - sorted) < top_p;
    const at::Tensor kept = sorted * keep.to(sorted.scalar_type());
    const std::int64_t pick = at::multinomial(kept / kept.sum(), 1, false, gen).item<std::int64_t>();
    return order[pick].item<std::int64_t>();
}

int run_generate(const std::vector<std::string>& args) {
    try {
        return generate(parse(args));
    } catch (const InputError& e) {
        std::cerr << "wingspan-train generate: " << e.what() << "\n";
        return 2;
    } catch (const ArgError& e) {   // target_modules the adapter names that we do not know
        std::cerr << "wingspan-train generate: " << e.what() << "\n";
        return 2;
    } catch (const c10::Error& e) {   // one line, not libtorch's stack trace
        std::cerr << "wingspan-train generate: " << one_line(e) << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "wingspan-train generate: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace wingspan::train
