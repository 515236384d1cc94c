// Merging: W' = W + (alpha / r) · B·A per adapted linear, in fp32, stored back in the base's
// dtype. For a QLoRA run the adapters were trained against the NF4 round trip of W, so W is
// quantized and dequantized exactly as training saw it before B·A is added. Everything is
// written to a temporary folder beside DIR and renamed into place at the end: an interrupted
// merge leaves no half model in DIR.
#include "run/merge.hpp"

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/adapter_config.hpp"
#include "model/model.hpp"
#include "model/model_source.hpp"
#include "model/weights_io.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/hub_download.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::uint64_t kDefaultShardBytes = 5'000'000'000ull;   // transformers' save_pretrained default

struct Failure : std::runtime_error {   // not the user's input: exit 1
    using std::runtime_error::runtime_error;
};

std::uint64_t tensor_bytes(const safetensors::TensorInfo& i) { return i.end - i.begin; }

std::string shard_name(size_t i, size_t n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    return buf;
}

struct Args {
    std::string model, adapter, out;
    std::uint64_t max_shard = kDefaultShardBytes;
};

Args parse(const std::vector<std::string>& a) {
    Args o;
    for (size_t i = 0; i < a.size(); ++i) {
        auto value = [&]() -> std::string {
            if (i + 1 >= a.size()) throw InputError(a[i] + " needs a value");
            return a[++i];
        };
        if (a[i] == "--model") o.model = value();
        else if (a[i] == "--adapter") o.adapter = value();
        else if (a[i] == "--out") o.out = value();
        else if (a[i] == "--max-shard-size") {
            const std::string v = value();
            try {
                o.max_shard = std::stoull(v);
            } catch (...) {
                throw InputError("--max-shard-size: \"" + v + "\" is not a number of bytes");
            }
            if (o.max_shard == 0) throw InputError("--max-shard-size must be above 0");
        } else {
            throw InputError("merge: unknown argument \"" + a[i] + "\"");
        }
    }
    if (o.model.empty() || o.adapter.empty() || o.out.empty())
        throw InputError("usage: wingspan-train merge --model BASE --adapter RUN_DIR --out DIR [--max-shard-size BYTES]");
    return o;
}

void merge(const Args& args) {
    const fs::path base = resolve_model_argument(args.model);
    const json config = read_json_object(base / "config.json");
    const ModelConfig cfg = ModelConfig::from_hf(config);
    auto reader = WeightReader::open_dir(base);
    if (!reader) throw InputError("--model: " + base.string() + " has no safetensors weights to merge into");
    std::vector<std::string> ignored;
    check_weights(*reader, expected_tensors(cfg), ignored);

    AdapterFold fold(args.adapter, *reader);

    // Shards by the base's stored sizes (merging keeps every dtype and shape).
    const std::vector<std::string> names = reader->names();
    std::vector<std::vector<std::string>> shards(1);
    std::uint64_t in_shard = 0, total = 0;
    for (const auto& n : names) {
        const std::uint64_t b = tensor_bytes(reader->info(n));
        if (in_shard > 0 && in_shard + b > args.max_shard) {
            shards.emplace_back();
            in_shard = 0;
        }
        shards.back().push_back(n);
        in_shard += b;
        total += b;
    }

    const fs::path out = args.out;
    const fs::path tmp = out.parent_path() / ("." + out.filename().string() + ".merging");
    std::error_code ec;
    if (fs::exists(out) && !fs::is_empty(out, ec)) throw InputError("--out: " + out.string() + " exists and is not empty");
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) throw Failure("cannot create " + tmp.string() + ": " + ec.message());
    struct RemoveUnlessDone {   // a failed merge leaves no temporary folder either
        fs::path dir;
        bool done = false;
        ~RemoveUnlessDone() {
            std::error_code ignore;
            if (!done) fs::remove_all(dir, ignore);
        }
    } cleanup{tmp};

    std::cerr << "merging " << fold.dir().string() << " into " << base.string() << " (scaling " << fold.scaling()
              << (fold.qlora() ? ", QLoRA: NF4 round trip of the adapted weights" : "") << ")\n";
    json weight_map = json::object();
    for (size_t s = 0; s < shards.size(); ++s) {
        std::vector<std::pair<std::string, at::Tensor>> tensors;
        for (const auto& n : shards[s]) {
            tensors.push_back({n, fold.apply(n, reader->read(n))});
            weight_map[n] = shards.size() == 1 ? "model.safetensors" : shard_name(s, shards.size());
        }
        const std::string file = shards.size() == 1 ? "model.safetensors" : shard_name(s, shards.size());
        save_safetensors(tmp / file, tensors, {{"format", "pt"}});
        std::cerr << "wrote " << file << " (" << tensors.size() << " tensors)\n";
    }
    fold.check_all_used();
    if (shards.size() > 1) {
        json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
        write_file_atomic(tmp / "model.safetensors.index.json", index.dump(2) + "\n");
    }
    // Config, generation config, tokenizer and chat template files, as the base has them
    // (copies of the files HF cache symlinks point at).
    for (const auto& e : fs::directory_iterator(base)) {
        const std::string f = e.path().filename().string();
        if (!hub::needed_for_run(f) || f.find(".safetensors") != std::string::npos) continue;
        // Through the bounded reader: a named pipe or a link to /dev/zero is refused, not copied forever.
        write_file_atomic(tmp / f, read_regular_file(e.path()));
    }
    fs::remove(out, ec);   // an empty folder
    fs::rename(tmp, out, ec);
    if (ec) throw Failure("cannot rename " + tmp.string() + " to " + out.string() + ": " + ec.message());
    cleanup.done = true;
    std::cerr << "merged " << fold.merged() << " weights; " << shards.size() << (shards.size() == 1 ? " file" : " shards") << ", "
              << total << " bytes\n";
}

}  // namespace

AdapterFold::AdapterFold(const std::string& run, const WeightReader& base) : dir_(adapter_dir_of(run)) {
    // Checked against the base and the adapter file's shapes before anything is allocated.
    scaling_ = read_adapter_config(dir_, base_shape_of(base)).scaling();
    if (fs::exists(dir_ / "trainer_state.json"))
        qlora_ = read_json_object(dir_ / "trainer_state.json").value("method", "") == "qlora";
    adapter_ = load_safetensors(dir_ / "adapter_model.safetensors");
    for (const auto& [name, t] : adapter_) unused_.insert(name);
}

at::Tensor AdapterFold::apply(const std::string& n, at::Tensor w) {
    const std::string stem = n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0 ? n.substr(0, n.size() - 7) : "";
    const std::string a_name = "base_model.model." + stem + ".lora_A.weight", b_name = "base_model.model." + stem + ".lora_B.weight";
    if (stem.empty() || !adapter_.count(a_name) || !adapter_.count(b_name)) return w;
    const at::Tensor A = adapter_[a_name].to(at::kFloat), B = adapter_[b_name].to(at::kFloat);
    if (A.dim() != 2 || B.dim() != 2 || w.dim() != 2 || B.size(0) != w.size(0) || A.size(1) != w.size(1) || B.size(1) != A.size(0))
        throw InputError("the adapter's " + stem + " (A " + std::to_string(A.size(0)) + "x" + std::to_string(A.size(1)) +
                         ", B " + std::to_string(B.size(0)) + "x" + std::to_string(B.size(1)) +
                         ") does not fit the base's weight of that name");
    at::Tensor w32 = qlora_ ? Nf4Weight::quantize(w.to(at::kFloat)).dequantize(at::kFloat) : w.to(at::kFloat);
    w32.add_(at::matmul(B, A), scaling_);
    unused_.erase(a_name);
    unused_.erase(b_name);
    ++merged_;
    return w32.to(w.scalar_type()).contiguous();
}

void AdapterFold::check_all_used() const {
    if (!unused_.empty())
        throw InputError("the adapter names " + *unused_.begin() + ", which the base has no weight for (another base model?)");
    if (merged_ == 0) throw InputError("no weight of the base matched the adapter's modules (another base model?)");
}

int run_merge(const std::vector<std::string>& args) {
    try {
        const Args a = parse(args);
        merge(a);
        std::cout << fs::absolute(a.out).string() << std::endl;
        return 0;
    } catch (const InputError& e) {
        std::cerr << "wingspan-train merge: " << e.what() << "\n";
        return 2;
    } catch (const c10::Error& e) {   // one line, not libtorch's stack trace
        std::cerr << "wingspan-train merge: " << one_line(e) << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "wingspan-train merge: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace wingspan::train
