// `wingspan plan|fit|explain-oom --from CONFIG [--from-format F] [flags]`: a framework's config
// file (core/src/import/config_import.cpp) turned into plan flags, the flags given after it overriding
// them, and the command run on the result with what was read, ignored and assumed beside it.
#include "from_config_cmd.hpp"

#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>

#include "cli.hpp"
#include "wingspan/config_import.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::cli {

namespace {

using nlohmann::json;

const std::set<std::string> kModelFlags = {"--model", "--size", "--config", "--hf", "--model-dir"};

void print_notes(const ConfigImport& im, const std::string& file, std::ostream& out) {
    out << "Read " << file << " as " << to_string(im.format) << " (model " << (im.model.empty() ? "not named" : im.model)
        << ")\n";
    auto list = [&](const char* title, const std::vector<ConfigNote>& notes) {
        if (notes.empty()) return;
        out << title << "\n";
        for (const auto& n : notes) out << "  " << n.key << ": " << n.note << "\n";
    };
    list("Keys read:", im.read);
    list("Defaults assumed (the file is silent):", im.defaults);
    list("Keys ignored:", im.ignored);
    out << "Plan flags: ";
    for (const auto& a : im.plan_args()) out << a << " ";
    out << "\n\n";
}

}  // namespace

int run_from_config(const ProfileLibrary& lib, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    std::string file, format;
    std::vector<std::string> rest;
    bool json_out = false, user_model = false, user_method = false, data = false;
    for (size_t i = 1; i < args.size(); ++i) {
        std::string a = args[i], value;
        const auto eq = a.find('=');
        const bool inline_value = a.rfind("--", 0) == 0 && eq != std::string::npos;
        if (inline_value) value = a.substr(eq + 1), a = a.substr(0, eq);
        if (a == "--from" || a == "--from-format") {
            if (!inline_value) {
                if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
                value = args[++i];
            }
            (a == "--from" ? file : format) = value;
            continue;
        }
        json_out |= a == "--json";
        user_model |= kModelFlags.count(a) > 0;
        user_method |= a == "--method";
        data |= a == "--data";
        rest.push_back(args[i]);
    }
    const ConfigImport im =
        import_config(read_config_file(file), format.empty() ? std::nullopt : std::optional(parse_config_format(format)), &lib);
    // The command line overrides the file: its model replaces the file's, and a method chosen
    // there drops the file's quantization (which only QLoRA takes).
    std::vector<std::string> command = {args[0]};
    for (const auto& [flag, value] : im.flags) {
        if (user_model && kModelFlags.count(flag)) continue;
        if (user_method && flag == "--quant") continue;
        // The file's padding (its packing key, or the framework's default) forms the batches of a
        // data set: it goes to the plan with --data; without, every batch is --seq tokens.
        if (!data && flag == "--padding") continue;
        command.push_back(flag);
        if (!value.empty()) command.push_back(value);
    }
    command.insert(command.end(), rest.begin(), rest.end());
    std::ostringstream inner_out;
    const int code = run(command, inner_out, err);
    if (code != kExitOk) {
        out << inner_out.str();
        err << "wingspan: (the plan came from " << file << " read as " << to_string(im.format) << ")\n";
        return code;
    }
    if (json_out) {
        // The command's own --json output, read back through the bounded reader (a JSON object,
        // or an InputError naming what it could not read).
        json j = parse_untrusted_json(inner_out.str(), "wingspan " + args[0] + " --json");
        if (j.is_object()) {
            j["import"] = im.to_json();
            j["import"]["file"] = file;
            // explain-oom's advice, also in the file's own keys.
            if (j.contains("advice") && j["advice"].is_array())
                for (auto& a : j["advice"]) {
                    const std::string key = config_key_for(im.format, a.value("flag", ""));
                    a["config_key"] = key.empty() ? json(nullptr) : json(key);
                }
        }
        out << j.dump(2) << "\n";
        return kExitOk;
    }
    print_notes(im, file, out);
    out << inner_out.str();
    if (args[0] == "explain-oom") {
        out << "\nIn " << file << " (" << to_string(im.format) << "), the keys these flags change:\n";
        for (const char* flag : {"--batch", "--grad-accum", "--seq", "--grad-checkpointing", "--rank", "--method", "--loss-chunk"})
            if (const std::string key = config_key_for(im.format, flag); !key.empty())
                out << "  " << flag << " → " << key << "\n";
    }
    return kExitOk;
}

}  // namespace wingspan::cli
