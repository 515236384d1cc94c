// config.json: parse (bounded depth), read the architecture, validate a plan, estimate it.
#include "fuzz_harness.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/memory_model.hpp"

int main() {
    using namespace wingspan;
    FrameworkProfile fw;
    fw.id = "bare";
    return fuzz::run<InputError>("config", WINGSPAN_FUZZ_CORPUS, [&](const std::string& input) {
        const Architecture a = Architecture::from_hf_config(parse_untrusted_json(input, "config.json"));
        (void)a.parameter_count();
        for (Method m : {Method::Full, Method::Lora, Method::Qlora}) {
            TrainingSetup s;
            s.method = m;
            s.lora_rank = std::min<std::int64_t>(8, a.hidden);
            if (m == Method::Qlora) s.quantization = Quantization::Nf4DoubleQuant;
            s.validate(a);
            const MemoryEstimate e = estimate_memory(a, s, fw);
            if (e.total_bytes < 0) throw std::logic_error("negative total bytes");
        }
    });
}
