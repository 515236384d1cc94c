// The safetensors header: the 8-byte length and the JSON header with its byte ranges.
#include <cstring>

#include "fuzz_harness.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/safetensors.hpp"

int main() {
    using namespace wingspan;
    return fuzz::run<InputError>("safetensors_header", WINGSPAN_FUZZ_CORPUS, [](const std::string& input) {
        if (input.size() >= 8) {
            unsigned char prefix[8];
            std::memcpy(prefix, input.data(), 8);
            try {
                (void)safetensors::parse_header_length(prefix);
            } catch (const InputError&) {
            }
        }
        // Once against no data (sizes only), once against a data section the header must cover.
        const safetensors::Header h = safetensors::parse_header(input, input.size());
        (void)h.total_elements();
        (void)h.elements_by_dtype();
        std::uint64_t end = 0;
        for (const auto& t : h.tensors) end = std::max(end, t.end);
        if (end > 0 && end < (1u << 20)) (void)safetensors::parse_header(input, input.size(), end);
    });
}
