// Recipe templates (issue 34): render any template text with hostile values (a clean
// InputError or text), and quote the input itself for every language: each quoted form must be
// one line of valid UTF-8 whatever the bytes (one_line() leaves it unchanged).
#include <map>
#include <set>
#include <stdexcept>

#include "fuzz_harness.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/quoting.hpp"
#include "wingspan/recipe.hpp"

int main() {
    using namespace wingspan;
    std::map<std::string, std::string> vars;
    for (const char* name : {"model", "model_label", "data_path", "data_dir", "output_dir", "profile", "command", "summary",
                             "framework", "framework_name", "notes", "lr", "rank", "seed", "targets_list", "fw_method"})
        vars[name] = "x\"\n{{model}}'$(touch PWNED)\xff";
    for (const char* flag : {"is_lora", "has_max_steps", "grad_ckpt"}) vars[flag] = "true";
    const std::set<std::string> free_text = {"model", "model_label", "data_path", "data_dir", "output_dir", "profile"};
    return fuzz::run<InputError>("recipe_template", WINGSPAN_FUZZ_CORPUS, [&](const std::string& input) {
        for (auto quote : {quoting::python_string, quoting::yaml_string, quoting::json_string, quoting::shell_word})
            if (const std::string q = quote(input); quoting::one_line(q) != q)
                throw std::logic_error("a quoted form is not one line of valid UTF-8");
        (void)recipe::render_template(input, vars, free_text);
    });
}
