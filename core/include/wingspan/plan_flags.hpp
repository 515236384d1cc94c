#pragma once
// A plan from command-line flags (`wingspan plan|fit|recipe|explain-oom …`): the flags parsed
// once, and the model, setup, chosen fields and machines they name. One reader, so every
// command that takes plan flags accepts exactly the same ones; the command line's own
// commands and printing stay in app/cli.
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "wingspan/plan.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/setup.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

// Every flag the command line knows: the ones that take a value and the switches. An unknown
// `--flag` is refused with the closest known one.
const std::set<std::string>& plan_value_flags();
const std::set<std::string>& plan_switch_flags();

struct PlanFlags {
    std::map<std::string, std::vector<std::string>> values;   // --flag VALUE and --flag=VALUE, in order
    std::set<std::string> switches;
    std::vector<std::string> positional;

    // args[from…]; InputError for an unknown flag or a value flag at the end.
    static PlanFlags parse(const std::vector<std::string>& args, size_t from = 0);

    bool has(const std::string& flag) const { return values.count(flag) || switches.count(flag); }
    std::optional<std::string> get(const std::string& flag) const;   // the last value given
    std::vector<std::string> all(const std::string& flag) const;     // every value, commas split
    // The flag's value as a whole number ≥ min (InputError naming the flag otherwise), or fallback.
    std::int64_t integer(const std::string& flag, std::int64_t fallback, std::int64_t min = 1) const;
    double number(const std::string& flag, double fallback) const;   // a finite number, or fallback
    ByteUnit unit() const;                                           // --unit GB|GiB (GB when absent)
};

// --model | --size [--family] | --config | --hf [--revision --offline] | --model-dir; at most one.
// --hf imports from the Hub and saves the profile in the user's folder; an import's warnings
// (what it assumed) go to `warnings`, one "wingspan: warning: …" line each.
ResolvedModel model_from_flags(const ProfileLibrary& lib, const PlanFlags& f, std::ostream& warnings);
// The setup the flags ask for, validated against the model (InputError naming the flag).
TrainingSetup setup_from_flags(const PlanFlags& f, const Architecture& arch);
// What the flags chose; the rest follows each machine's framework.
ChosenFields chosen_from_flags(const PlanFlags& f);
// --machine ID… (all bundled and user machines when none).
std::vector<const MachineProfile*> machines_from_flags(const ProfileLibrary& lib, const PlanFlags& f);
// --framework ID, or nullptr (each machine's own).
const FrameworkProfile* framework_from_flags(const ProfileLibrary& lib, const PlanFlags& f);
// --examples × --tokens-per-example × --epochs (1000 × 512 × 1 when absent).
double dataset_tokens_from_flags(const PlanFlags& f);

}  // namespace wingspan
