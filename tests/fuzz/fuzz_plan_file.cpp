// Plan files (*.wingspan.json): parse (bounded depth) and read every field.
#include "fuzz_harness.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/ui/plan.hpp"

int main() {
    using namespace wingspan;
    return fuzz::run<InputError>("plan_file", WINGSPAN_FUZZ_CORPUS, [](const std::string& input) {
        const ui::Plan p = ui::Plan::from_json(parse_untrusted_json(input, "plan"));
        (void)p.to_json().dump();
    });
}
