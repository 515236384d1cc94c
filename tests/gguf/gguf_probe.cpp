// What core's GGUF reader makes of a file, for check_gguf_export.py to hold against llama.cpp:
//   gguf_probe FILE [N_CTX TYPE_K TYPE_V [N_UBATCH FLASH_ATTN]]  ->  one JSON object on stdout
// (with N_UBATCH: llama_cpp_terms' compute buffer too); exit 2 and one line on stderr for a
// file the reader refuses.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/gguf_file.hpp"
#include "wingspan/llama_cpp_terms.hpp"

int main(int argc, char** argv) {
    if (argc != 2 && argc != 5 && argc != 7) {
        std::cerr << "usage: gguf_probe FILE [N_CTX TYPE_K TYPE_V [N_UBATCH FLASH_ATTN]]\n";
        return 2;
    }
    try {
        const auto f = wingspan::gguf::read_file(argv[1]);
        nlohmann::json out = {{"architecture", f.architecture()}, {"tensors", f.tensors.size()},
                              {"tensor_bytes", f.tensor_bytes()}};
        for (const auto& t : f.tensors) out["types"][t.name] = wingspan::gguf::ggml_type_name(t.type);
        if (argc >= 5) {
            wingspan::gguf::KvCacheOptions o;
            o.n_ctx = std::stoll(argv[2]);
            o.type_k = static_cast<std::uint32_t>(std::stoul(argv[3]));
            o.type_v = static_cast<std::uint32_t>(std::stoul(argv[4]));
            const auto kv = wingspan::gguf::llama_cpp_kv_cache(f, o);
            out["kv_cells"] = kv.cells;
            out["kv_k_bytes"] = kv.k_bytes;
            out["kv_v_bytes"] = kv.v_bytes;
        }
        if (argc == 7) {
            wingspan::llama_cpp::ServeOptions o;
            o.n_ctx = std::stoll(argv[2]);
            o.n_ubatch = std::stoll(argv[5]);
            o.flash_attn = std::string(argv[6]) == "1";
            out["compute_bytes"] = wingspan::llama_cpp::compute_buffer(wingspan::llama_cpp::model_from_gguf(f), o).total();
        }
        std::cout << out.dump() << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "gguf_probe: " << e.what() << "\n";
        return 2;
    }
}
